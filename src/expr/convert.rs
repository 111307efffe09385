//! JSON values <-> monty objects, following Python's `json.dumps` where the two differ.
use super::ExprError;
use monty_types::{MontyObject, StringRepr};
use serde_json::{Map as JsonMap, Number, Value};

/// Converts task data into a Python value (dict, list, str, int, float, bool, None).
pub(super) fn to_monty(value: &Value) -> MontyObject {
    match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                MontyObject::Int(i)
            } else if let Some(u) = n.as_u64() {
                // Above i64::MAX: Python ints are unbounded, monty keeps them as BigInt.
                MontyObject::BigInt(u.into())
            } else {
                MontyObject::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(items.iter().map(to_monty).collect()),
        Value::Object(map) => MontyObject::dict(
            map.iter()
                .map(|(k, v)| (MontyObject::String(k.clone()), to_monty(v)))
                .collect::<Vec<_>>(),
        ),
    }
}

/// Converts a Python value back to JSON. Tuples and sets become lists; dict keys that are
/// numbers, bools or None are stringified as `json.dumps` does; anything else is an error.
pub(super) fn to_json(object: MontyObject) -> Result<Value, ExprError> {
    Ok(match object {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(b),
        MontyObject::Int(i) => Value::from(i),
        MontyObject::BigInt(big) => match (i64::try_from(&big), u64::try_from(&big)) {
            (Ok(i), _) => Value::from(i),
            (_, Ok(u)) => Value::from(u),
            // serde_json (without arbitrary_precision) cannot hold it; refuse rather than round.
            _ => {
                return Err(ExprError::new(format!(
                    "OverflowError: int too large for a JSON number: {big}"
                )))
            }
        },
        MontyObject::Float(f) => Value::Number(Number::from_f64(f).ok_or_else(|| {
            ExprError::new(format!(
                "ValueError: Out of range float values are not JSON compliant: {f}"
            ))
        })?),
        MontyObject::String(s) => Value::String(s),
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::Set(items)
        | MontyObject::FrozenSet(items)
        | MontyObject::NamedTuple { values: items, .. } => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        MontyObject::Dict(pairs) => {
            let mut map = JsonMap::new();
            for (key, value) in pairs {
                map.insert(dict_key(key)?, to_json(value)?);
            }
            Value::Object(map)
        }
        MontyObject::Cycle(..) => {
            return Err(ExprError::new("ValueError: Circular reference detected"))
        }
        // Monty hands back unrepresentable objects (functions, very deep nesting) as a repr.
        MontyObject::Repr(repr) => {
            return Err(ExprError::new(format!(
                "TypeError: {repr} is not JSON serializable"
            )))
        }
        other => {
            return Err(ExprError::new(format!(
                "TypeError: Object of type {} is not JSON serializable",
                other.type_name()
            )))
        }
    })
}

fn dict_key(key: MontyObject) -> Result<String, ExprError> {
    Ok(match key {
        MontyObject::String(s) => s,
        MontyObject::Int(i) => i.to_string(),
        MontyObject::BigInt(big) => big.to_string(),
        MontyObject::Float(_) => key.py_repr(),
        MontyObject::Bool(b) => b.to_string(),
        MontyObject::None => "null".to_owned(),
        other => {
            return Err(ExprError::new(format!(
                "TypeError: keys must be str, int, float, bool or None, not {}",
                other.type_name()
            )))
        }
    })
}

/// Python's `repr()` of a string: `'k'`, or `"it's"` when it holds a single quote.
pub(super) fn py_str_repr(s: &str) -> String {
    StringRepr(s).to_string()
}

/// Python truthiness of a JSON value.
pub(super) fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// Python's type name of a JSON value, for error messages.
pub(super) fn type_name(value: &Value) -> &'static str {
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
