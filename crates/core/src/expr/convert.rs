//! Python's view of JSON task data: truthiness, type names and `repr` of strings, for the
//! fast path's answers and error messages. Values that are not JSON travel tagged
//! (`{"__type__": "datetime", "value": ...}`, see `python/script_worker.py`).
use serde_json::Value;

/// Python's `repr` of a str: single quotes unless the text has one and no double quote.
pub(super) fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The type tag of a value that is not JSON in Python (datetime, Decimal, ...), if any.
pub(super) fn tag(value: &Value) -> Option<&str> {
    value.get("__type__")?.as_str()
}

/// Python truthiness of a (possibly tagged) JSON value.
pub fn is_truthy(value: &Value) -> bool {
    match (tag(value), value) {
        (Some("timedelta"), _) => ["days", "seconds", "microseconds"]
            .iter()
            .any(|part| value[part].as_i64() != Some(0)),
        (Some("Decimal"), _) => value["value"]
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .is_none_or(|f| f != 0.0),
        (Some("set"), _) => value["value"].as_array().is_some_and(|a| !a.is_empty()),
        (Some(_), _) => true,
        (None, Value::Null) => false,
        (None, Value::Bool(b)) => *b,
        (None, Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        (None, Value::String(s)) => !s.is_empty(),
        (None, Value::Array(items)) => !items.is_empty(),
        (None, Value::Object(map)) => !map.is_empty(),
    }
}

/// Python's type name of a (possibly tagged) JSON value, for error messages.
pub(super) fn type_name(value: &Value) -> &str {
    if let Some(tag) = tag(value) {
        return match tag {
            "object" => value["python_type"].as_str().unwrap_or("object"),
            other => other,
        };
    }
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}
