//! Correlation keys: canonical form and the candidate keys of a sent message. Pure.
//!
//! A waiting receive stores the canonical form of the values it expects (the properties the
//! instance has established); a receive with no constrained property stores `{}`. A send
//! matches a receive when every expected value equals the send's value for that property,
//! i.e. when the receive's constrained values are a subset of the send's values. So a send
//! looks receives up by the canonical keys of every subset of its values: a handful of
//! index lookups instead of a scan with an interpreter per row.

use serde_json::Value;
use std::collections::BTreeMap;

/// Property id -> value.
pub type CorrelationValues = BTreeMap<String, Value>;

/// A message with more correlation properties than this is matched on its first ones only
/// (2^8 = 256 candidate keys is the most a single lookup carries).
pub const MAX_PROPERTIES: usize = 8;

/// Canonical JSON text of the values: sorted keys, integral numbers written as integers,
/// no whitespace. Equal values give equal text.
pub fn canonical_key(values: &CorrelationValues) -> String {
    let canonical: BTreeMap<&String, Value> = values
        .iter()
        .map(|(k, v)| (k, canonical_value(v)))
        .collect();
    serde_json::to_string(&canonical).expect("JSON values always serialise")
}

fn canonical_value(value: &Value) -> Value {
    match value {
        Value::Number(n) => canonical_number(n),
        Value::Array(items) => Value::Array(items.iter().map(canonical_value).collect()),
        // serde_json's Map is ordered by key, so objects serialise canonically
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), canonical_value(v)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// One text per number: an integral one as its digits (3.0 and 3 are the same correlation
/// value, as in Python, 3.0 == 3; and 1.5e300 is the 1500…0 that storage gives back), any
/// other as the shortest float that reads back.
fn canonical_number(n: &serde_json::Number) -> Value {
    let text = n.to_string();
    if !text.contains(['.', 'e', 'E']) {
        return Value::Number(n.clone());
    }
    if let Some(digits) = integral_digits(&text) {
        if let Ok(integer) = digits.parse::<serde_json::Number>() {
            return Value::Number(integer);
        }
    }
    n.as_f64()
        .map_or_else(|| Value::Number(n.clone()), Value::from)
}

/// The digits of a number written with a fraction or an exponent, when it is integral
/// (`1.5e3` -> `1500`, `-2.0` -> `-2`); `None` when it has a fractional part.
pub fn integral_digits(text: &str) -> Option<String> {
    let (mantissa, exponent) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let exponent: i64 = exponent.trim_start_matches('+').parse().ok()?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let frac = frac.trim_end_matches('0');
    // beyond 400 zeros it is past any double, and refused at the door anyway
    let zeros = exponent.checked_sub(frac.len() as i64)?;
    if !(0..=400).contains(&zeros) {
        return None;
    }
    let digits = format!("{int}{frac}{}", "0".repeat(zeros as usize));
    let digits = digits.trim_start_matches('0');
    Some(match digits {
        "" => "0".to_string(),
        digits => format!("{sign}{digits}"),
    })
}

/// The canonical keys of every subset of `values` (the empty subset included): the keys a
/// matching receive can have been stored under.
pub fn candidate_keys(values: &CorrelationValues) -> Vec<String> {
    let entries: Vec<(&String, &Value)> = values.iter().take(MAX_PROPERTIES).collect();
    (0u32..(1 << entries.len()))
        .map(|mask| {
            let subset: CorrelationValues = entries
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, (k, v))| ((*k).clone(), (*v).clone()))
                .collect();
            canonical_key(&subset)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> CorrelationValues {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn canonical_key_is_independent_of_insertion_order_and_float_form() {
        let a = values(json!({"po_number": 1001, "customer_id": "sartography"}));
        let b = values(json!({"customer_id": "sartography", "po_number": 1001.0}));
        assert_eq!(canonical_key(&a), canonical_key(&b));
        assert_eq!(
            canonical_key(&a),
            r#"{"customer_id":"sartography","po_number":1001}"#
        );
    }

    /// A number keeps its key through storage (jsonb writes 1.5e300 as 1500…0 and keeps
    /// 1.50's trailing zero), and integers beyond 64 bits stay apart.
    #[test]
    fn a_number_has_one_key_whatever_its_written_form() {
        let key = |text: &str| {
            let value: Value = serde_json::from_str(text).unwrap();
            canonical_key(&values(json!({ "n": value })))
        };
        let stored_big = format!("15{}", "0".repeat(299));
        assert_eq!(key("1.5e300"), key(&stored_big));
        assert_eq!(key("1.50"), key("1.5"));
        assert_eq!(key("2.5e-3"), key("0.0025"));
        assert_eq!(key("-2.0"), key("-2"));
        assert_eq!(key("1e16"), key("10000000000000000"));
        assert_ne!(key("1.5"), key("1"));
        assert_eq!(super::integral_digits("9007199254740993.5"), None);
        assert_eq!(super::integral_digits("1.25e1"), None);
        assert_eq!(super::integral_digits("1.25e2").as_deref(), Some("125"));
        assert_eq!(super::integral_digits("0.0").as_deref(), Some("0"));
    }

    #[test]
    fn different_values_give_different_keys() {
        let a = values(json!({"order_id": 1}));
        let b = values(json!({"order_id": "1"}));
        assert_ne!(canonical_key(&a), canonical_key(&b));
    }

    #[test]
    fn empty_values_give_the_empty_object() {
        assert_eq!(canonical_key(&CorrelationValues::new()), "{}");
        assert_eq!(
            candidate_keys(&CorrelationValues::new()),
            vec!["{}".to_string()]
        );
    }

    #[test]
    fn candidate_keys_cover_every_subset() {
        let v = values(json!({"a": 1, "b": 2}));
        let mut keys = candidate_keys(&v);
        keys.sort();
        assert_eq!(
            keys,
            vec![r#"{"a":1,"b":2}"#, r#"{"a":1}"#, r#"{"b":2}"#, "{}"]
        );
    }

    #[test]
    fn a_receive_expecting_a_subset_is_among_the_candidates() {
        let send = values(json!({"customer_id": "c", "po_number": 7, "extra": true}));
        let receive = values(json!({"po_number": 7.0}));
        assert!(candidate_keys(&send).contains(&canonical_key(&receive)));
        let other = values(json!({"po_number": 8}));
        assert!(!candidate_keys(&send).contains(&canonical_key(&other)));
    }

    #[test]
    fn candidate_keys_are_bounded() {
        let many: CorrelationValues = (0..12).map(|i| (format!("p{i:02}"), json!(i))).collect();
        assert_eq!(candidate_keys(&many).len(), 1 << MAX_PROPERTIES);
    }
}
