//! Secret values out of script errors. A script handed secrets (`get_secret`) may fail with a
//! message that quotes one (`int(get_secret('X'))` -> `ValueError: invalid literal for int()
//! with base 10: '<the value>'`), and instance errors are readable with `instances:read`. Every
//! error of such a script is redacted here, where it leaves the script host, so that no later
//! layer (the instance's error, its failed task's data, answers, logs, spans) ever holds the
//! value.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// The shortest leading part of a value that is redacted on its own: Python cuts long values
/// short in some messages (`int()` shows at most 200 characters of its argument's `repr`).
const MIN_PREFIX_CHARS: usize = 16;

/// `text` with each secret's value, as it is, as Python's `repr` or JSON writes it, or cut
/// short after at least [`MIN_PREFIX_CHARS`] characters, replaced by `[secret NAME]`. One pass,
/// longest match first: a marker is never redacted again.
pub fn redact<'a>(text: &'a str, secrets: &BTreeMap<String, String>) -> Cow<'a, str> {
    let forms: Vec<(&str, String)> = secrets
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .flat_map(|(name, value)| written_forms(value).map(move |form| (name.as_str(), form)))
        .collect();
    if forms.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut redacted = String::new();
    let (mut copied, mut at) = (0, 0);
    while let Some(c) = text[at..].chars().next() {
        match longest_match(&text[at..], &forms) {
            Some((name, len)) => {
                redacted.push_str(&text[copied..at]);
                redacted.push_str(&format!("[secret {name}]"));
                at += len;
                copied = at;
            }
            None => at += c.len_utf8(),
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    redacted.push_str(&text[copied..]);
    Cow::Owned(redacted)
}

/// How a message may write `value`: as it is, inside Python's `repr` (backslash escapes; `\'`
/// when it holds both quotes), inside a JSON string (with or without `\u` escapes beyond
/// ASCII, as Python's `json.dumps` writes it by default).
fn written_forms(value: &str) -> impl Iterator<Item = String> {
    let json = serde_json::to_string(value).expect("a string serialises");
    let json = &json[1..json.len() - 1];
    let mut forms = vec![
        value.to_string(),
        python_repr_body(value, false),
        python_repr_body(value, true),
        json.to_string(),
        ascii_escaped(json),
    ];
    forms.sort();
    forms.dedup();
    forms.into_iter()
}

/// What Python's `repr` writes between the quotes (`escape_quote`: also `'` as `\'`, as it
/// does for a value holding both quotes).
fn python_repr_body(value: &str, escape_quote: bool) -> String {
    let mut body = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => body.push_str("\\\\"),
            '\n' => body.push_str("\\n"),
            '\r' => body.push_str("\\r"),
            '\t' => body.push_str("\\t"),
            '\'' if escape_quote => body.push_str("\\'"),
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                body.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => body.push(c),
        }
    }
    body
}

/// `text` with each character beyond ASCII written `\uXXXX` (UTF-16, as JSON does).
fn ascii_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            escaped.push(c);
        } else {
            let mut units = [0; 2];
            for unit in c.encode_utf16(&mut units) {
                escaped.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    escaped
}

/// The name and length (bytes) of the longest form `rest` starts with: a whole form, or at
/// least [`MIN_PREFIX_CHARS`] characters of one.
fn longest_match<'f>(rest: &str, forms: &'f [(&'f str, String)]) -> Option<(&'f str, usize)> {
    forms
        .iter()
        .filter_map(|(name, form)| {
            let (chars, bytes) = common_prefix(rest, form);
            (bytes == form.len() || chars >= MIN_PREFIX_CHARS).then_some((*name, bytes))
        })
        .max_by_key(|&(_, bytes)| bytes)
}

/// The characters and bytes `a` and `b` start with in common.
fn common_prefix(a: &str, b: &str) -> (usize, usize) {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .fold((0, 0), |(chars, bytes), (c, _)| {
            (chars + 1, bytes + c.len_utf8())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn values_are_replaced_by_their_names_however_they_are_written() {
        let long = "k".repeat(300);
        let s = secrets(&[
            ("X", "s3cr3t-value"),
            ("QUOTES", "it's \"both\""),
            ("LINES", "a\nb\\c"),
            ("LONG", &long),
            ("EMPTY", ""),
            ("CAFE", "café-secret"),
        ]);
        let cases: &[(&str, &str)] = &[
            (
                "ValueError: invalid literal for int() with base 10: 's3cr3t-value' (line 1, column 5)",
                "ValueError: invalid literal for int() with base 10: '[secret X]' (line 1, column 5)",
            ),
            ("s3cr3t-values3cr3t-value", "[secret X][secret X]"),
            ("no secret here", "no secret here"),
            ("s3cr3t", "s3cr3t"),
            ("x: 'it\\'s \"both\"'", "x: '[secret QUOTES]'"),
            ("x: 'a\\nb\\\\c'", "x: '[secret LINES]'"),
            ("{\"v\": \"a\\nb\\\\c\"}", "{\"v\": \"[secret LINES]\"}"),
            ("x: 'café-secret'", "x: '[secret CAFE]'"),
            ("x: \"caf\\u00e9-secret\"", "x: \"[secret CAFE]\""),
        ];
        for &(text, expected) in cases {
            assert_eq!(redact(text, &s), expected, "{text}");
        }
        // Python cut it short: the part shown is still redacted
        let cut = format!("int(): '{}", &long[..199]);
        assert_eq!(redact(&cut, &s), "int(): '[secret LONG]");
        // a short run of the value's first characters is not
        assert_eq!(redact("kkkk", &s), "kkkk");
        // nothing to redact: the text itself
        assert!(matches!(
            redact("s3cr3t-value", &BTreeMap::new()),
            Cow::Borrowed(_)
        ));
        assert!(matches!(redact("plain", &s), Cow::Borrowed(_)));
    }

    #[test]
    fn the_longest_value_wins_and_markers_are_not_redacted_again() {
        let s = secrets(&[("A", "abc"), ("B", "abcdef"), ("C", "secret")]);
        assert_eq!(redact("abcdef abc", &s), "[secret B] [secret A]");
        assert_eq!(redact("secret", &s), "[secret C]");
    }
}
