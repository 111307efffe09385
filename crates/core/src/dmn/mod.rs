//! DMN decision tables in SpiffWorkflow's dialect: input expressions, input entries and
//! output entries are Python (SpiffArena's script engine runs them), not FEEL.
//!
//! - `parse`: one `.dmn` file -> its decisions (each one decision table), with every test
//!   compiled to the Python SpiffWorkflow would run;
//! - `evaluate`: a table against task data -> the rules that matched and the result to merge
//!   into the task data, by the table's hit policy.
//!
//! Pure: the Python runs on the script host given in the `Context`.
mod evaluate;
mod parse;
#[cfg(test)]
mod tests;

pub use evaluate::{evaluate, Evaluation};
pub use parse::parse_dmn_file;

use crate::expr::Expression;
use serde_json::Value;

/// A decision: one decision table (SpiffWorkflow runs nothing else).
#[derive(Debug, Clone)]
pub struct Decision {
    pub id: String,
    pub name: Option<String>,
    /// The `.dmn` file that defines it.
    pub file: String,
    pub table: DecisionTable,
}

#[derive(Debug, Clone)]
pub struct DecisionTable {
    pub id: Option<String>,
    pub hit_policy: HitPolicy,
    /// `COLLECT` only: how the collected values of each output are combined.
    pub aggregation: Option<Aggregation>,
    pub inputs: Vec<Input>,
    pub outputs: Vec<Output>,
    pub rules: Vec<Rule>,
    /// Every rule's test in one Python list (`True` for a rule that tests nothing): one call
    /// of the script host decides which rules match. `None` when no rule tests anything.
    pub(crate) all_tests: Option<Expression>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitPolicy {
    Unique,
    First,
    Priority,
    Any,
    Collect,
    RuleOrder,
    OutputOrder,
}

impl HitPolicy {
    /// The attribute's value (`RULE ORDER` with a space, as DMN writes it).
    pub fn as_dmn(&self) -> &'static str {
        match self {
            HitPolicy::Unique => "UNIQUE",
            HitPolicy::First => "FIRST",
            HitPolicy::Priority => "PRIORITY",
            HitPolicy::Any => "ANY",
            HitPolicy::Collect => "COLLECT",
            HitPolicy::RuleOrder => "RULE ORDER",
            HitPolicy::OutputOrder => "OUTPUT ORDER",
        }
    }

    /// Several rules' outputs end up in the result (as lists, one item per rule).
    pub fn is_multiple(&self) -> bool {
        matches!(
            self,
            HitPolicy::Collect | HitPolicy::RuleOrder | HitPolicy::OutputOrder
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    Sum,
    Min,
    Max,
    Count,
}

impl Aggregation {
    /// The attribute's value.
    pub fn as_dmn(&self) -> &'static str {
        match self {
            Aggregation::Sum => "SUM",
            Aggregation::Min => "MIN",
            Aggregation::Max => "MAX",
            Aggregation::Count => "COUNT",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Input {
    pub id: String,
    pub label: Option<String>,
    /// The Python expression whose value the rules test (`None`: no expression, and no
    /// label naming a variable; no rule tests it).
    pub expression: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Output {
    pub id: String,
    pub label: Option<String>,
    /// Where the value goes in the task data (`name`, else `label`); dots make nested
    /// dictionaries (`item.y`).
    pub name: String,
    /// The output's `outputValues`, highest priority first (hit policies PRIORITY and
    /// OUTPUT ORDER rank rules by them).
    pub priorities: Vec<Value>,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    /// 1-based, as the modeler shows rows.
    pub row: usize,
    pub description: Option<String>,
    /// The input entries as written (`None`: empty or `-`, anything matches).
    pub input_entries: Vec<Option<String>>,
    /// The Python deciding whether the rule matches (`None`: it always does).
    pub test: Option<Expression>,
    /// One per output, in order; `None` writes `""` (as SpiffWorkflow does).
    pub outputs: Vec<Option<Expression>>,
}

impl Decision {
    /// Every piece of Python the decision holds, with what it is for (for the syntax check
    /// at upload): each rule's test and output entries.
    pub fn python_sources(&self) -> Vec<(String, &str)> {
        let mut sources = vec![];
        for rule in &self.table.rules {
            if let Some(test) = &rule.test {
                sources.push((format!("input entries of row {}", rule.row), test.source()));
            }
            for (output, entry) in self.table.outputs.iter().zip(&rule.outputs) {
                if let Some(entry) = entry {
                    let what = format!("output '{}' of row {}", output.name, rule.row);
                    sources.push((what, entry.source()));
                }
            }
        }
        sources
    }
}
