//! Rust-only evaluation of the hot-path expression forms, without starting the interpreter:
//! a literal (int, float, plain string, True/False/None), a name, or a name followed by
//! subscripts with literal keys (`order["id"]`, `a['b'][0]`). Errors match Python's.
use super::convert::{py_str_repr, tag, type_name};
use super::scan::{is_keyword, is_predefined};
use super::{ExprError, Map};
use serde_json::Value;
use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum FastExpr {
    Literal(Value),
    /// A variable, then zero or more subscripts.
    Path {
        name: String,
        keys: Vec<Key>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Key {
    Str(String),
    Index(i64),
}

impl FastExpr {
    /// Recognises a fast form; `None` means "leave it to Python".
    pub(super) fn parse(source: &str) -> Option<FastExpr> {
        let mut cursor = Cursor {
            rest: source.trim(),
        };
        let expr = if let Some(literal) = cursor.literal() {
            FastExpr::Literal(literal)
        } else {
            let name = cursor.identifier()?;
            let mut keys = Vec::new();
            while cursor.eat('[') {
                keys.push(match cursor.literal()? {
                    Value::String(s) => Key::Str(s),
                    Value::Number(n) => Key::Index(n.as_i64()?),
                    _ => return None,
                });
                if !cursor.eat(']') {
                    return None;
                }
            }
            FastExpr::Path { name, keys }
        };
        cursor.skip_spaces();
        cursor.rest.is_empty().then_some(expr)
    }

    /// `None` when Python would not read the name from the data: it is missing but is a
    /// builtin or a script global (`len`, `time`), so Python must answer.
    pub(super) fn eval(&self, vars: &Map) -> Option<Result<Value, ExprError>> {
        match self {
            FastExpr::Literal(value) => Some(Ok(value.clone())),
            FastExpr::Path { name, keys } => {
                let Some(mut value) = vars.get(name).map(Cow::Borrowed) else {
                    return (!is_predefined(name)).then(|| {
                        Err(ExprError::new(format!(
                            "NameError: name '{name}' is not defined"
                        )))
                    });
                };
                for key in keys {
                    if tag(&value).is_some() {
                        return None; // a datetime, Decimal...: Python itself answers
                    }
                    value = match subscript(value, key) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e)),
                    };
                }
                Some(Ok(value.into_owned()))
            }
        }
    }
}

fn subscript<'a>(value: Cow<'a, Value>, key: &Key) -> Result<Cow<'a, Value>, ExprError> {
    let err = |message: String| Err(ExprError::new(message));
    match (value, key) {
        (Cow::Borrowed(Value::Object(map)), Key::Str(k)) => match map.get(k) {
            Some(v) => Ok(Cow::Borrowed(v)),
            None => err(format!("KeyError: {}", py_str_repr(k))),
        },
        (Cow::Owned(Value::Object(mut map)), Key::Str(k)) => match map.remove(k) {
            Some(v) => Ok(Cow::Owned(v)),
            None => err(format!("KeyError: {}", py_str_repr(k))),
        },
        // JSON object keys are strings, so an int key is never present.
        (value, Key::Index(i)) if value.is_object() => err(format!("KeyError: {i}")),
        (value, Key::Index(i)) if value.is_array() => {
            let len = value.as_array().map_or(0, Vec::len);
            match python_index(*i, len) {
                Some(at) => Ok(match value {
                    Cow::Borrowed(v) => Cow::Borrowed(&v[at]),
                    Cow::Owned(mut v) => Cow::Owned(v[at].take()),
                }),
                None => err("IndexError: list index out of range".to_owned()),
            }
        }
        (value, Key::Str(_)) if value.is_array() => {
            err("TypeError: list indices must be integers or slices, not str".to_owned())
        }
        (value, Key::Index(i)) if value.is_string() => {
            let text = value.as_str().unwrap_or_default();
            match python_index(*i, text.chars().count()).and_then(|at| text.chars().nth(at)) {
                Some(c) => Ok(Cow::Owned(Value::String(c.to_string()))),
                None => err("IndexError: string index out of range".to_owned()),
            }
        }
        (value, Key::Str(_)) if value.is_string() => {
            err("TypeError: string indices must be integers, not 'str'".to_owned())
        }
        (value, _) => err(format!(
            "TypeError: '{}' object is not subscriptable",
            type_name(&value)
        )),
    }
}

/// Python's index rule: negative counts from the end.
fn python_index(index: i64, len: usize) -> Option<usize> {
    let offset = usize::try_from(index.unsigned_abs()).ok()?;
    if index < 0 {
        len.checked_sub(offset)
    } else {
        (offset < len).then_some(offset)
    }
}

/// A tiny tokenizer over the fast-path grammar; anything unexpected returns `None`.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn skip_spaces(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_spaces();
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// Takes the longest run of characters matching `keep`.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let end = self.rest.find(|c| !keep(c)).unwrap_or(self.rest.len());
        let (token, rest) = self.rest.split_at(end);
        self.rest = rest;
        token
    }

    /// ASCII identifiers only: non-ASCII names need NFKC normalisation, left to Python.
    fn identifier(&mut self) -> Option<String> {
        self.skip_spaces();
        let first = self.rest.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        let name = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
        (!is_keyword(name)).then(|| name.to_owned())
    }

    /// int (no leading zeros, fits i64), float `1.5`, plain quoted string without escapes,
    /// True/False/None.
    fn literal(&mut self) -> Option<Value> {
        self.skip_spaces();
        let saved = self.rest;
        let value = self.literal_token();
        if value.is_none() {
            self.rest = saved;
        }
        value
    }

    fn literal_token(&mut self) -> Option<Value> {
        let first = self.rest.chars().next()?;
        if first == '"' || first == '\'' {
            let body = &self.rest[1..];
            let end = body.find(first)?;
            let text = &body[..end];
            if text.contains(['\\', '\n', '\r']) {
                return None;
            }
            self.rest = &body[end + 1..];
            return Some(Value::String(text.to_owned()));
        }
        if first.is_ascii_alphabetic() {
            let word = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
            return match word {
                "True" => Some(Value::Bool(true)),
                "False" => Some(Value::Bool(false)),
                "None" => Some(Value::Null),
                _ => None,
            };
        }
        let negative = self.rest.starts_with('-');
        if negative {
            self.rest = &self.rest[1..];
        }
        let whole = self.take_while(|c| c.is_ascii_digit());
        if whole.is_empty() || (whole.len() > 1 && whole.starts_with('0')) {
            return None;
        }
        let sign = if negative { "-" } else { "" };
        if let Some(rest) = self.rest.strip_prefix('.') {
            self.rest = rest;
            let fraction = self.take_while(|c| c.is_ascii_digit());
            if fraction.is_empty() {
                return None;
            }
            let number: f64 = format!("{sign}{whole}.{fraction}").parse().ok()?;
            return serde_json::Number::from_f64(number).map(Value::Number);
        }
        format!("{sign}{whole}")
            .parse::<i64>()
            .ok()
            .map(Value::from)
    }
}
