//! What the service accepts at the door: the rules that make everything it stores readable
//! back. Pure functions; the API layer calls them before any work is done.
//!
//! - JSON values (payloads, task data, callback bodies): at most [`MAX_JSON_DEPTH`] levels of
//!   arrays and objects (the engine nests a payload a few levels deeper when it stores it, and
//!   serde_json refuses to read more than 128), no NUL character in a string or key (Postgres
//!   `jsonb` and `text` cannot hold it), and every number must read back as the same finite
//!   number after Postgres has stored it (jsonb keeps numbers as exact decimals and prints them
//!   without an exponent; a number close to the f64 limit then no longer parses). Integers
//!   keep every digit (serde_json's `arbitrary_precision`); floats are written so that they
//!   come back as floats ([`keep_floats`]).
//! - Text (names, filters, identifiers): no NUL and no other control character.

use super::{Error, Result};
use crate::services::ErrorCode;
use serde_json::Value;
use workflow_types::Labelled;

pub use workflow_core::expr::storable::{keep_floats, storage_problem, MAX_JSON_DEPTH};

/// The longest message name (bytes).
pub const MAX_NAME_BYTES: usize = 255;

/// The longest identifier-like name (secrets, API keys), in bytes.
pub const MAX_IDENTIFIER_BYTES: usize = 128;

/// A name that must be safe in a URL path, a log line and a script (`get_secret("...")`): a
/// letter or `_`, then letters, digits, `_`, `.` and `-`, at most [`MAX_IDENTIFIER_BYTES`]
/// (`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`). `what` names it in the refusal ("a secret name"),
/// `code` is the refusal's `error_code`.
pub fn check_identifier(name: &str, what: &str, code: ErrorCode) -> Result<()> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && name.len() <= MAX_IDENTIFIER_BYTES;
    if valid {
        return Ok(());
    }
    let shown: String = name.chars().take(80).collect();
    let ellipsis = if name.chars().count() > 80 { "..." } else { "" };
    Err(Error::refused(
        code,
        format!(
            "'{}{ellipsis}' is not {what}: a letter or '_', then letters, digits, '_', '.' and \
             '-' (at most {MAX_IDENTIFIER_BYTES} bytes)",
            shown.escape_default()
        ),
    ))
}

/// Checks a JSON value the service is about to store; the error says where and why.
/// `code` is the `error_code` of the refusal (`invalid_payload`, `invalid_callback_body`).
pub fn check_json(value: &Value, code: ErrorCode, what: &str) -> Result<()> {
    storage_problem(value).map_or(Ok(()), |reason| {
        Err(Error::refused(
            code,
            format!("{what} cannot be stored: {reason}"),
        ))
    })
}

/// Checks a piece of text from a path or a query string: no control character (NUL cannot be
/// stored; the others only ever arrive by mistake or malice), at most `max_bytes` long.
pub fn check_text(text: &str, code: ErrorCode, what: &str, max_bytes: usize) -> Result<()> {
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(Error::refused(
            code,
            format!("{what} contains the control character U+{:04X}", c as u32),
        ));
    }
    if text.len() > max_bytes {
        return Err(Error::refused(
            code,
            format!(
                "{what} is {} bytes long; the limit is {max_bytes}",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// Checks a value against the allowed ones of a list filter: 400 `invalid_query` naming them.
pub fn check_choice(value: Option<&str>, parameter: &str, allowed: &[&str]) -> Result<()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(Error::refused(
            ErrorCode::InvalidQuery,
            format!(
                "{parameter} must be one of {}; got '{}'",
                allowed.join(", "),
                v.escape_default()
            ),
        )
        .with_extra(serde_json::json!({ "parameter": parameter, "allowed": allowed }))),
        _ => Ok(()),
    }
}

/// A list filter's value as one of a state enum's labels (400 `invalid_query` naming them).
pub fn choice<T: Labelled>(value: Option<&str>, parameter: &str) -> Result<Option<T>> {
    check_choice(value, parameter, T::LABELS)?;
    Ok(value.and_then(T::parse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..levels {
            v = json!({ "a": v });
        }
        v
    }

    #[test]
    fn depth_is_bounded() {
        assert!(check_json(&nested(MAX_JSON_DEPTH), ErrorCode::InvalidPayload, "p").is_ok());
        assert!(check_json(&nested(MAX_JSON_DEPTH + 1), ErrorCode::InvalidPayload, "p").is_err());
    }

    #[test]
    fn nul_in_a_value_or_a_key_is_refused() {
        assert!(check_json(&json!({"a": "x\u{0}y"}), ErrorCode::InvalidPayload, "p").is_err());
        assert!(check_json(&json!({"a\u{0}": 1}), ErrorCode::InvalidPayload, "p").is_err());
        assert!(check_json(
            &json!({"a": ["ok", {"b": "\u{0}"}]}),
            ErrorCode::InvalidPayload,
            "p"
        )
        .is_err());
        assert!(check_json(&json!({"a": "ünïcode ✓"}), ErrorCode::InvalidPayload, "p").is_ok());
    }

    #[test]
    fn numbers_must_read_back_from_their_plain_decimal() {
        let max: Value = serde_json::from_str("1.7976931348623157e308").unwrap();
        assert!(check_json(&json!({ "amount": max }), ErrorCode::InvalidPayload, "p").is_err());
        for fine in ["1.5e300", "-2.5e-300", "0.1", "123456789012345678", "1e22"] {
            let v: Value = serde_json::from_str(fine).unwrap();
            assert!(
                check_json(&v, ErrorCode::InvalidPayload, "p").is_ok(),
                "{fine}"
            );
        }
    }

    #[test]
    fn integers_keep_their_digits_and_floats_stay_floats_through_storage() {
        let mut v: Value =
            serde_json::from_str(r#"[18446744073709551616, 1.5e300, 1e+16, 2.5e-3, 1.5, 3]"#)
                .unwrap();
        assert!(check_json(&v, ErrorCode::InvalidPayload, "p").is_ok());
        keep_floats(&mut v);
        let text = v.to_string();
        assert!(text.starts_with("[18446744073709551616,15000"), "{text}");
        assert!(
            text.ends_with("0.0,10000000000000000.0,2.5e-3,1.5,3]"),
            "{text}"
        );
        let huge: Value = serde_json::from_str(&format!("1{}", "0".repeat(400))).unwrap();
        assert!(check_json(&huge, ErrorCode::InvalidPayload, "p").is_err());
    }

    #[test]
    fn text_and_choices() {
        assert!(check_text("order paid", ErrorCode::InvalidQuery, "name", 10).is_ok());
        assert!(check_text("a\u{0}b", ErrorCode::InvalidQuery, "name", 10).is_err());
        assert!(check_text("a\nb", ErrorCode::InvalidQuery, "name", 10).is_err());
        assert!(check_text("elevenbytes", ErrorCode::InvalidQuery, "name", 10).is_err());
        assert!(check_choice(Some("ready"), "status", &["ready"]).is_ok());
        assert!(check_choice(None, "status", &["ready"]).is_ok());
        assert!(check_choice(Some("bogus"), "status", &["ready"]).is_err());
    }
}
