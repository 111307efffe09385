//! A decision table against task data: which rules match, and the result SpiffWorkflow
//! merges into the task data.
//!
//! Hit policies: UNIQUE stops at the first matching rule and FIRST takes it (SpiffWorkflow
//! does not check that a UNIQUE table's rules exclude each other); PRIORITY takes the match
//! whose outputs come first in their `outputValues` (the first match when none are listed);
//! ANY takes a match once every match agrees. COLLECT and RULE ORDER give, for each output,
//! the list of every match's value in rule order (SpiffWorkflow's COLLECT), OUTPUT ORDER in
//! `outputValues` order; COLLECT with an aggregation gives each output's SUM, MIN, MAX or
//! COUNT instead of the list.
use super::{Aggregation, Decision, DecisionTable, HitPolicy, Rule};
use crate::expr::{is_truthy, Context, ErrorKind, ExprError, Map};
use serde_json::Value;
use std::cmp::Ordering;

/// What a decision gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The rules that matched (indices into the table's rules, in table order). Under UNIQUE
    /// only the first: SpiffWorkflow stops there.
    pub matched: Vec<usize>,
    /// The rules whose outputs the result holds, in the order the hit policy put them.
    pub selected: Vec<usize>,
    /// What goes into the task data (merged into it, as SpiffWorkflow merges).
    pub result: Map,
}

pub fn evaluate(decision: &Decision, vars: &Map, cx: &Context) -> Result<Evaluation, ExprError> {
    let table = &decision.table;
    let matched = matching_rules(table, vars, cx)?;
    // FIRST needs only its first match's outputs (and SpiffWorkflow evaluates no others)
    let needed = match table.hit_policy {
        HitPolicy::First => &matched[..matched.len().min(1)],
        _ => &matched[..],
    };
    let mut values = Vec::with_capacity(needed.len());
    for &index in needed {
        values.push(rule_outputs(table, &table.rules[index], vars, cx)?);
    }
    let mut order: Vec<usize> = (0..needed.len()).collect();
    if matches!(
        table.hit_policy,
        HitPolicy::Priority | HitPolicy::OutputOrder
    ) {
        order.sort_by(|&a, &b| compare_priority(table, &values[a], &values[b]));
    }
    if !table.hit_policy.is_multiple() {
        if table.hit_policy == HitPolicy::Any {
            check_agreement(table, &matched, &values)?;
        }
        order.truncate(1);
    }
    let selected: Vec<usize> = order.iter().map(|&i| matched[i]).collect();
    let chosen: Vec<&Vec<Value>> = order.iter().map(|&i| &values[i]).collect();
    let result = match (table.hit_policy, table.aggregation) {
        (HitPolicy::Collect, Some(aggregation)) => aggregate(table, aggregation, &chosen)?,
        (policy, _) if policy.is_multiple() => collect(table, &chosen),
        _ => chosen
            .first()
            .map(|values| rule_result(table, values))
            .unwrap_or_default(),
    };
    Ok(Evaluation {
        matched,
        selected,
        result,
    })
}

/// One call of the script host tests every rule. If that fails, the rules are tested one
/// by one in order, as SpiffWorkflow does: UNIQUE stops at a match before reaching a rule
/// that would fail, and the error names the row that did.
fn matching_rules(
    table: &DecisionTable,
    vars: &Map,
    cx: &Context,
) -> Result<Vec<usize>, ExprError> {
    let hits: Vec<bool> = match &table.all_tests {
        None => vec![true; table.rules.len()],
        Some(all) => match all.eval(vars, cx) {
            Ok(Value::Array(hits)) if hits.len() == table.rules.len() => {
                hits.iter().map(is_truthy).collect()
            }
            Err(error) if error.kind != ErrorKind::Python => return Err(error),
            _ => return rules_one_by_one(table, vars, cx),
        },
    };
    let mut matched: Vec<usize> = (0..hits.len()).filter(|&i| hits[i]).collect();
    if table.hit_policy == HitPolicy::Unique {
        matched.truncate(1);
    }
    Ok(matched)
}

fn rules_one_by_one(
    table: &DecisionTable,
    vars: &Map,
    cx: &Context,
) -> Result<Vec<usize>, ExprError> {
    let mut matched = vec![];
    for (index, rule) in table.rules.iter().enumerate() {
        let hit = match &rule.test {
            None => true,
            Some(test) => test
                .eval_bool(vars, cx)
                .map_err(|e| in_row(e, rule, "the input entries"))?,
        };
        if hit {
            matched.push(index);
            if table.hit_policy == HitPolicy::Unique {
                break;
            }
        }
    }
    Ok(matched)
}

fn in_row(error: ExprError, rule: &Rule, what: &str) -> ExprError {
    ExprError::of_kind(
        error.kind,
        format!("{} ({what} of row {})", error.message, rule.row),
    )
}

/// The rule's output values, one per output; an empty output entry gives `""`.
fn rule_outputs(
    table: &DecisionTable,
    rule: &Rule,
    vars: &Map,
    cx: &Context,
) -> Result<Vec<Value>, ExprError> {
    table
        .outputs
        .iter()
        .zip(&rule.outputs)
        .map(|(output, entry)| match entry {
            None => Ok(Value::String(String::new())),
            Some(expression) => expression
                .eval(vars, cx)
                .map_err(|e| in_row(e, rule, &format!("output '{}'", output.name))),
        })
        .collect()
}

/// One rule's outputs as task data: `{name: value}`, a dotted name nesting dictionaries.
fn rule_result(table: &DecisionTable, values: &[Value]) -> Map {
    let mut result = Map::new();
    for (output, value) in table.outputs.iter().zip(values) {
        insert_path(&mut result, &output.name, value.clone());
    }
    result
}

fn insert_path(map: &mut Map, path: &str, value: Value) {
    // a loop, not recursion: the name's depth is the model author's (at most 64 levels)
    let (mut map, mut rest) = (map, path);
    while let Some((head, tail)) = rest.split_once('.') {
        let slot = map
            .entry(head.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        map = slot.as_object_mut().expect("an object");
        rest = tail;
    }
    map.insert(rest.to_string(), value);
}

fn collect(table: &DecisionTable, chosen: &[&Vec<Value>]) -> Map {
    let mut result = Map::new();
    for values in chosen {
        for (key, value) in rule_result(table, values) {
            let list = result.entry(key).or_insert_with(|| Value::Array(vec![]));
            if let Value::Array(items) = list {
                items.push(value);
            }
        }
    }
    result
}

fn aggregate(
    table: &DecisionTable,
    aggregation: Aggregation,
    chosen: &[&Vec<Value>],
) -> Result<Map, ExprError> {
    let mut result = Map::new();
    for (index, output) in table.outputs.iter().enumerate() {
        let values: Vec<&Value> = chosen
            .iter()
            .map(|values| &values[index])
            .filter(|v| !v.is_null())
            .collect();
        let combined = match aggregation {
            Aggregation::Count => Some(Value::from(values.len())),
            Aggregation::Sum => sum(&values).map_err(|e| aggregation_error(output, "SUM", e))?,
            Aggregation::Min => {
                extreme(&values, Ordering::Less).map_err(|e| aggregation_error(output, "MIN", e))?
            }
            Aggregation::Max => extreme(&values, Ordering::Greater)
                .map_err(|e| aggregation_error(output, "MAX", e))?,
        };
        if let Some(combined) = combined {
            insert_path(&mut result, &output.name, combined);
        }
    }
    Ok(result)
}

fn aggregation_error(output: &super::Output, what: &str, reason: String) -> ExprError {
    ExprError::new(format!(
        "TypeError: {what} of output '{}': {reason}",
        output.name
    ))
}

/// Integers stay integers while they fit; `None` when nothing matched.
fn sum(values: &[&Value]) -> Result<Option<Value>, String> {
    if values.is_empty() {
        return Ok(None);
    }
    let mut integer: Option<i64> = Some(0);
    let mut float = 0.0;
    for value in values {
        let Value::Number(number) = value else {
            return Err(format!("{value} is not a number"));
        };
        integer = integer
            .zip(number.as_i64())
            .and_then(|(a, b)| a.checked_add(b));
        float += number.as_f64().unwrap_or(0.0);
    }
    Ok(Some(match integer {
        Some(total) => Value::from(total),
        None => Value::from(float),
    }))
}

/// The smallest (`Less`) or largest (`Greater`) of numbers, or of strings.
fn extreme(values: &[&Value], wanted: Ordering) -> Result<Option<Value>, String> {
    let mut best: Option<&Value> = None;
    for &value in values {
        let better = match best {
            None => true,
            Some(current) => {
                compare_values(value, current)
                    .ok_or_else(|| format!("{value} and {current} cannot be compared"))?
                    == wanted
            }
        };
        if better {
            best = Some(value);
        }
    }
    Ok(best.cloned())
}

fn compare_values(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Rules ranked by their outputs' places in the `outputValues` lists (earlier is higher;
/// a value not listed ranks last), the first output deciding first.
fn compare_priority(table: &DecisionTable, a: &[Value], b: &[Value]) -> Ordering {
    for (index, output) in table.outputs.iter().enumerate() {
        if output.priorities.is_empty() {
            continue;
        }
        let rank = |value: &Value| {
            output
                .priorities
                .iter()
                .position(|p| same_value(p, value))
                .unwrap_or(output.priorities.len())
        };
        match rank(&a[index]).cmp(&rank(&b[index])) {
            Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    Ordering::Equal
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// ANY: the matches must agree on every output.
fn check_agreement(
    table: &DecisionTable,
    matched: &[usize],
    values: &[Vec<Value>],
) -> Result<(), ExprError> {
    let Some(first) = values.first() else {
        return Ok(());
    };
    for (index, other) in values.iter().enumerate().skip(1) {
        let agree =
            first.len() == other.len() && first.iter().zip(other).all(|(a, b)| same_value(a, b));
        if !agree {
            return Err(ExprError::new(format!(
                "ValueError: hit policy ANY, but rows {} and {} match with different outputs",
                table.rules[matched[0]].row, table.rules[matched[index]].row
            )));
        }
    }
    Ok(())
}
