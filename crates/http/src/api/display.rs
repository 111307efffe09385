//! Task data as clients read it. Inside the service, Python values that are not JSON keep
//! their type as tagged objects (`{"__type__": "datetime", "value": "..."}`), so a datetime a
//! script stored is a datetime again in the next script. Clients see them as SpiffArena's JSON
//! shows them: ISO strings for dates and times, strings for Decimal and UUID, `str()` of a
//! timedelta, lists for sets.

use serde_json::Value;

/// Replaces every tagged value in `value` (at any depth) by its client form.
pub fn untag(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(untag),
        Value::Object(_) => {
            if let Some(shown) = client_form(value) {
                *value = shown;
            } else if let Value::Object(map) = value {
                map.values_mut().for_each(untag);
            }
        }
        _ => {}
    }
}

fn client_form(value: &Value) -> Option<Value> {
    let tag = value.get("__type__")?.as_str()?;
    Some(match tag {
        "datetime" | "date" | "time" | "Decimal" | "UUID" | "float" => value.get("value")?.clone(),
        "timedelta" => Value::String(timedelta_str(
            value["days"].as_i64()?,
            value["seconds"].as_i64()?,
            value["microseconds"].as_i64()?,
        )),
        "set" => {
            let mut items = value.get("value")?.clone();
            untag(&mut items);
            items
        }
        "dict" => {
            let mut pairs = value.get("items")?.clone();
            untag(&mut pairs);
            pairs
        }
        _ => Value::Null, // functions, modules and other objects have no JSON form
    })
}

/// Python's `str(timedelta)`: `1 day, 2:03:04`, `-1 day, 23:59:59`, `0:00:01.500000`.
fn timedelta_str(days: i64, seconds: i64, microseconds: i64) -> String {
    let clock = format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        (seconds % 3600) / 60,
        seconds % 60
    );
    let fraction = if microseconds == 0 {
        String::new()
    } else {
        format!(".{microseconds:06}")
    };
    match days {
        0 => format!("{clock}{fraction}"),
        1 | -1 => format!("{days} day, {clock}{fraction}"),
        _ => format!("{days} days, {clock}{fraction}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tagged_values_show_as_spiffarena_shows_them() {
        let mut data = json!({
            "due": {"__type__": "datetime", "value": "2024-02-03T00:00:00"},
            "nested": [{"price": {"__type__": "Decimal", "value": "3.305"}}],
            "wait": {"__type__": "timedelta", "days": 1, "seconds": 3784, "microseconds": 0},
            "back": {"__type__": "timedelta", "days": -1, "seconds": 86399, "microseconds": 0},
            "short": {"__type__": "timedelta", "days": 0, "seconds": 1, "microseconds": 500000},
            "tags": {"__type__": "set", "value": [1, 2]},
            "fn": {"__type__": "object", "python_type": "function"},
            "plain": {"a": 1},
        });
        untag(&mut data);
        assert_eq!(
            data,
            json!({
                "due": "2024-02-03T00:00:00", "nested": [{"price": "3.305"}],
                "wait": "1 day, 1:03:04", "back": "-1 day, 23:59:59", "short": "0:00:01.500000",
                "tags": [1, 2], "fn": null, "plain": {"a": 1},
            })
        );
    }
}

/// Where a page of a list stands: `{count, total, total_exact, pages}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct PaginationAnswer {
    /// Rows on this page.
    count: usize,
    /// Rows in the list, counted up to 100,001.
    total: i64,
    /// Whether `total` is the real number (false past 100,000 rows).
    total_exact: bool,
    pages: i64,
}

impl From<crate::services::Pagination> for PaginationAnswer {
    fn from(p: crate::services::Pagination) -> PaginationAnswer {
        PaginationAnswer {
            count: p.count,
            total: p.total,
            total_exact: p.total_exact,
            pages: p.pages,
        }
    }
}
