//! What the service can store of a JSON value and read back the same: Postgres `jsonb` holds
//! no NUL, keeps numbers as exact decimals printed without an exponent, and serde_json reads
//! at most 128 levels. The API checks what arrives at the door with these rules; the script
//! host checks what a script hands back.

use serde_json::Value;

/// Levels of nested arrays and objects a stored JSON value may have (the value itself is 1).
pub const MAX_JSON_DEPTH: usize = 64;

/// Why a JSON value could not be stored and read back, naming the path of the offending part
/// (`the string at $.a[1] contains a NUL character`); `None` when it can.
pub fn storage_problem(value: &Value) -> Option<String> {
    json_problem(value, 1, &mut String::from("$")).err()
}

/// Why a JSON value cannot be stored, naming the path of the offending part.
fn json_problem(value: &Value, depth: usize, path: &mut String) -> std::result::Result<(), String> {
    match value {
        Value::Null | Value::Bool(_) => Ok(()),
        Value::Number(n) => {
            if number_round_trips(n) {
                Ok(())
            } else {
                Err(format!(
                    "the number {n} at {path} is too large to be stored and read back"
                ))
            }
        }
        Value::String(s) => {
            if s.contains('\0') {
                Err(format!("the string at {path} contains a NUL character"))
            } else {
                Ok(())
            }
        }
        Value::Array(items) => {
            too_deep(depth, path)?;
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                json_problem(item, depth + 1, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(members) => {
            too_deep(depth, path)?;
            for (key, item) in members {
                if key.contains('\0') {
                    return Err(format!("a key at {path} contains a NUL character"));
                }
                let len = path.len();
                path.push('.');
                path.push_str(key);
                json_problem(item, depth + 1, path)?;
                path.truncate(len);
            }
            Ok(())
        }
    }
}

/// Rewrites every float written with an exponent and no fractional part (`1.5e300`, Python's
/// `1e+16`) as plain digits with `.0`: Postgres keeps numbers as exact decimals and prints them
/// without an exponent, so `1.5e300` would come back as the integer `1500…0`, and the next
/// script would see an `int` where it left a `float`. Integers are kept as written, of any
/// size.
pub fn keep_floats(value: &mut Value) {
    match value {
        Value::Number(n) => {
            let text = n.to_string();
            if !text.contains(['e', 'E']) {
                return;
            }
            let plain = crate::correlation::integral_digits(&text)
                .and_then(|digits| format!("{digits}.0").parse::<serde_json::Number>().ok());
            if let Some(plain) = plain {
                *n = plain;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(keep_floats),
        Value::Object(members) => members.values_mut().for_each(keep_floats),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

fn too_deep(depth: usize, path: &str) -> std::result::Result<(), String> {
    if depth > MAX_JSON_DEPTH {
        Err(format!(
            "it is nested deeper than {MAX_JSON_DEPTH} levels (at {path})"
        ))
    } else {
        Ok(())
    }
}

/// Whether a number reads back after Postgres stored it: jsonb prints the exact decimal of
/// what serde_json wrote, without an exponent (`1.5e300` comes back as 301 digits).
fn number_round_trips(n: &serde_json::Number) -> bool {
    if n.is_i64() || n.is_u64() {
        return true;
    }
    let Some(f) = n.as_f64() else { return false };
    if !f.is_finite() {
        return false;
    }
    let plain = without_exponent(&n.to_string());
    serde_json::from_str::<f64>(&plain).is_ok_and(|back| back.is_finite())
}

/// `1.5e3` -> `1500`, `2.5e-3` -> `0.0025`: a JSON number in plain decimal notation.
fn without_exponent(text: &str) -> String {
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else {
        return text.to_string();
    };
    let exponent: i64 = exponent.trim_start_matches('+').parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{frac}");
    let point = int.len() as i64 + exponent;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimal_notation() {
        assert_eq!(without_exponent("1.5e3"), "1500");
        assert_eq!(without_exponent("2.5e-3"), "0.0025");
        assert_eq!(without_exponent("-1e2"), "-100");
        assert_eq!(without_exponent("1.25e1"), "12.5");
        assert_eq!(without_exponent("0.5"), "0.5");
    }
}
