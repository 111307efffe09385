//! One `.dmn` file -> its decisions. Entries become the Python SpiffWorkflow evaluates: an
//! input entry `"m"` tests `(Gender) == ("m")`, `< 25` tests `(Age) < 25`, and one with `?`
//! stands for the input (`100 <= ? < 110`); an empty entry or `-` matches anything.
use super::{Aggregation, Decision, DecisionTable, HitPolicy, Input, Output, Rule};
use crate::bpmn::{ModelError, MAX_NESTING_DEPTH};
use crate::expr::Expression;
use roxmltree::Node;
use serde_json::Value;

/// The DMN 1.1, 1.2 and 1.3 model namespaces (those SpiffWorkflow reads).
const DMN_NAMESPACES: [&str; 3] = [
    "http://www.omg.org/spec/DMN/20151101/dmn.xsd",
    "http://www.omg.org/spec/DMN/20180521/MODEL/",
    "https://www.omg.org/spec/DMN/20191111/MODEL/",
];

/// The decisions of one file. A decision without a decision table (a literal expression, a
/// decision service) is not one a business rule task can run: it is left out. A file with
/// no decision table at all is refused.
pub fn parse_dmn_file(file: &str, xml: &str) -> Result<Vec<Decision>, ModelError> {
    let err = |id: Option<&str>, reason: String| ModelError::new(file, id, reason);
    let doc = crate::bpmn::parse_xml(file, xml)?;
    let root = doc.root_element();
    let namespace = root.tag_name().namespace().unwrap_or("no namespace");
    if root.tag_name().name() != "definitions" || !DMN_NAMESPACES.contains(&namespace) {
        return Err(err(
            None,
            format!(
                "not a DMN file: the root element is {{{namespace}}}{}, expected definitions in a DMN 1.1, 1.2 or 1.3 namespace",
                root.tag_name().name()
            ),
        ));
    }
    let reader = Reader { file, namespace };
    let mut decisions = vec![];
    for node in reader.children(root, "decision") {
        let id = attr(node, "id").ok_or_else(|| err(None, "a decision has no id".into()))?;
        let Some(table) = reader.child(node, "decisionTable") else {
            continue;
        };
        decisions.push(Decision {
            name: attr(node, "name"),
            file: file.to_string(),
            table: reader.table(table, &id)?,
            id,
        });
    }
    if decisions.is_empty() {
        return Err(err(None, "the file holds no decision table".into()));
    }
    Ok(decisions)
}

struct Reader<'f> {
    file: &'f str,
    namespace: &'f str,
}

impl<'f> Reader<'f> {
    fn err(&self, id: &str, reason: impl Into<String>) -> ModelError {
        ModelError::new(self.file, Some(id), reason)
    }

    fn children<'a, 'i: 'a>(
        &self,
        node: Node<'a, 'i>,
        name: &'f str,
    ) -> impl Iterator<Item = Node<'a, 'i>> + use<'a, 'i, 'f> {
        let namespace = self.namespace;
        node.children().filter(move |c| {
            c.is_element()
                && c.tag_name().name() == name
                && c.tag_name().namespace() == Some(namespace)
        })
    }

    fn child<'a, 'i: 'a>(&self, node: Node<'a, 'i>, name: &'f str) -> Option<Node<'a, 'i>> {
        self.children(node, name).next()
    }

    /// The text of `node`'s `text` child, trimmed; `None` when empty.
    fn text(&self, node: Node) -> Option<String> {
        self.child(node, "text")
            .and_then(|t| t.text())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    }

    fn table(&self, node: Node, decision_id: &str) -> Result<DecisionTable, ModelError> {
        let hit_policy = hit_policy(attr(node, "hitPolicy").as_deref())
            .map_err(|reason| self.err(decision_id, reason))?;
        let aggregation = match attr(node, "aggregation") {
            None => None,
            Some(_) if hit_policy != HitPolicy::Collect => {
                return Err(self.err(decision_id, "an aggregation needs the hit policy COLLECT"))
            }
            Some(name) => Some(aggregation(&name).map_err(|r| self.err(decision_id, r))?),
        };
        let inputs: Vec<Input> = self
            .children(node, "input")
            .map(|i| self.input(i))
            .collect();
        let has_rules = self.child(node, "rule").is_some();
        let outputs = self
            .children(node, "output")
            .map(|output| self.output(output, decision_id, has_rules))
            .collect::<Result<Vec<_>, _>>()?;
        if outputs.is_empty() {
            return Err(self.err(decision_id, "the decision table has no output"));
        }
        let rules = self
            .children(node, "rule")
            .enumerate()
            .map(|(index, rule)| self.rule(rule, index + 1, &inputs, &outputs, decision_id))
            .collect::<Result<Vec<_>, _>>()?;
        let all_tests = rules.iter().any(|r| r.test.is_some()).then(|| {
            let tests: Vec<&str> = rules
                .iter()
                .map(|r| r.test.as_ref().map_or("True", Expression::source))
                .collect();
            Expression::compile(&format!("[{}]", tests.join(", "))).expect("not empty")
        });
        Ok(DecisionTable {
            id: attr(node, "id"),
            hit_policy,
            aggregation,
            inputs,
            outputs,
            rules,
            all_tests,
        })
    }

    /// An input without an expression is read from the variable its label names
    /// (SpiffWorkflow's fallback); with neither, no rule may test it.
    fn input(&self, node: Node) -> Input {
        let id = attr(node, "id").unwrap_or_default();
        let label = attr(node, "label");
        let expression = self
            .child(node, "inputExpression")
            .and_then(|e| self.text(e))
            .or_else(|| label.clone().filter(|l| is_identifier(l)));
        Input {
            id,
            label,
            expression,
        }
    }

    /// An output needs somewhere to go once a rule gives it a value (a table without rules,
    /// a placeholder, is accepted as SpiffWorkflow accepts it).
    fn output(&self, node: Node, decision_id: &str, has_rules: bool) -> Result<Output, ModelError> {
        let id = attr(node, "id").unwrap_or_default();
        let label = attr(node, "label");
        let name = attr(node, "name").or_else(|| label.clone());
        let name = match name {
            Some(name) => name,
            None if !has_rules => String::new(),
            None => {
                return Err(self.err(
                    decision_id,
                    format!("output '{id}' has neither a name nor a label (where its value goes in the task data)"),
                ))
            }
        };
        // `a.b.c` nests the value that deep in the task data
        if name.split('.').count() > MAX_NESTING_DEPTH {
            return Err(self.err(
                decision_id,
                format!("output '{id}': its name nests more than {MAX_NESTING_DEPTH} levels deep (the limit)"),
            ));
        }
        let priorities = match self.child(node, "outputValues").and_then(|v| self.text(v)) {
            None => vec![],
            Some(list) => literal_list(&list).map_err(|reason| {
                self.err(
                    decision_id,
                    format!("outputValues of output '{name}': {reason}"),
                )
            })?,
        };
        Ok(Output {
            id,
            label,
            name,
            priorities,
        })
    }

    fn rule(
        &self,
        node: Node,
        row: usize,
        inputs: &[Input],
        outputs: &[Output],
        decision_id: &str,
    ) -> Result<Rule, ModelError> {
        let entries: Vec<Option<String>> = self
            .children(node, "inputEntry")
            .map(|entry| self.text(entry))
            .collect();
        let output_texts: Vec<Option<String>> = self
            .children(node, "outputEntry")
            .map(|entry| self.text(entry))
            .collect();
        if entries.len() != inputs.len() || output_texts.len() != outputs.len() {
            return Err(self.err(
                decision_id,
                format!(
                    "row {row} has {} input and {} output entries; the table has {} inputs and {} outputs",
                    entries.len(),
                    output_texts.len(),
                    inputs.len(),
                    outputs.len()
                ),
            ));
        }
        let entries: Vec<Option<String>> = entries
            .into_iter()
            .map(|e| e.filter(|text| text != "-"))
            .collect();
        let test = self.rule_test(row, inputs, &entries, decision_id)?;
        let outputs = output_texts
            .iter()
            .map(|text| {
                text.as_deref()
                    .map(|t| Expression::compile(t).expect("not empty"))
            })
            .collect();
        Ok(Rule {
            id: attr(node, "id").unwrap_or_default(),
            row,
            description: self.rule_description(node),
            input_entries: entries,
            test,
            outputs,
        })
    }

    /// The Python that tests a rule's input entries (each as [`entry_test`] makes it, joined
    /// with `and`); `None` when every entry matches anything.
    fn rule_test(
        &self,
        row: usize,
        inputs: &[Input],
        entries: &[Option<String>],
        decision_id: &str,
    ) -> Result<Option<Expression>, ModelError> {
        let mut tests = vec![];
        for (input, entry) in inputs.iter().zip(entries) {
            let Some(entry) = entry else { continue };
            let Some(expression) = &input.expression else {
                return Err(self.err(
                    decision_id,
                    format!(
                        "row {row} tests input '{}', which has no input expression",
                        input.id
                    ),
                ));
            };
            tests.push(entry_test(expression, entry));
        }
        Ok((!tests.is_empty()).then(|| {
            let joined = if tests.len() == 1 {
                tests[0].clone()
            } else {
                let wrapped: Vec<String> = tests.iter().map(|t| format!("({t})")).collect();
                wrapped.join(" and ")
            };
            Expression::compile(&joined).expect("not empty")
        }))
    }

    /// A rule's description (or its annotation's text), trimmed; `None` when empty.
    fn rule_description(&self, node: Node) -> Option<String> {
        self.child(node, "description")
            .or_else(|| {
                self.child(node, "annotationEntry")
                    .and_then(|a| self.child(a, "text"))
            })
            .and_then(|d| d.text())
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
    }
}

fn attr(node: Node, name: &str) -> Option<String> {
    node.attribute(name)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn hit_policy(value: Option<&str>) -> Result<HitPolicy, String> {
    let Some(value) = value else {
        return Ok(HitPolicy::Unique);
    };
    Ok(match value.to_uppercase().replace('_', " ").as_str() {
        "UNIQUE" => HitPolicy::Unique,
        "FIRST" => HitPolicy::First,
        "PRIORITY" => HitPolicy::Priority,
        "ANY" => HitPolicy::Any,
        "COLLECT" => HitPolicy::Collect,
        "RULE ORDER" => HitPolicy::RuleOrder,
        "OUTPUT ORDER" => HitPolicy::OutputOrder,
        _ => return Err(format!("unknown hit policy '{value}'")),
    })
}

fn aggregation(value: &str) -> Result<Aggregation, String> {
    Ok(match value.to_uppercase().as_str() {
        "SUM" => Aggregation::Sum,
        "MIN" => Aggregation::Min,
        "MAX" => Aggregation::Max,
        "COUNT" => Aggregation::Count,
        _ => {
            return Err(format!(
                "unknown aggregation '{value}' (SUM, MIN, MAX or COUNT)"
            ))
        }
    })
}

/// The Python that tests an input against an entry, as SpiffWorkflow builds it: `?` stands
/// for the input; an entry that starts with an operator follows the input; any other is
/// compared for equality. (SpiffWorkflow asks the parser whether the entry is an expression
/// on its own; an entry is one exactly when it does not start with a binary operator, and
/// the whole test is checked by CPython at upload, so a misreading cannot pass silently.)
pub(super) fn entry_test(input: &str, entry: &str) -> String {
    if let Some(substituted) = replace_question_marks(entry, &format!("({input})")) {
        return substituted;
    }
    if starts_with_operator(entry) {
        format!("({input}) {entry}")
    } else {
        format!("({input}) == ({entry})")
    }
}

/// `entry` with each `?` outside string literals replaced; `None` when it has none.
fn replace_question_marks(entry: &str, with: &str) -> Option<String> {
    let mut out = String::with_capacity(entry.len() + with.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut replaced = false;
    for c in entry.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' => {
                replaced = true;
                out.push_str(with);
            }
            None => out.push(c),
        }
    }
    replaced.then_some(out)
}

/// Whether `entry` only makes sense after an operand: `< 25`, `in ("a", "b")`,
/// `not in x`, `is None`, `.startswith("a")`, `== 1`, ...
fn starts_with_operator(entry: &str) -> bool {
    const SYMBOLS: [&str; 11] = ["<", ">", "=", "!=", "*", "/", "%", "@", "&", "|", "^"];
    const WORDS: [&str; 6] = ["not in", "in", "is", "and", "or", "if"];
    let continues_word = |rest: &str| rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    if SYMBOLS.iter().any(|s| entry.starts_with(s)) {
        return true;
    }
    if let Some(rest) = entry.strip_prefix('.') {
        // `.5` is a number; `.upper()` follows the input
        return !rest.starts_with(|c: char| c.is_ascii_digit());
    }
    WORDS.iter().any(|word| {
        entry
            .strip_prefix(word)
            .is_some_and(|rest| !continues_word(rest))
    })
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// `"high", "medium", 3, True` -> JSON values (the literals `outputValues` may list).
fn literal_list(text: &str) -> Result<Vec<Value>, String> {
    split_outside_quotes(text)
        .into_iter()
        .map(|item| literal(item.trim()))
        .collect()
}

fn split_outside_quotes(text: &str) -> Vec<&str> {
    let mut parts = vec![];
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ',' => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            None => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn literal(item: &str) -> Result<Value, String> {
    for q in ['"', '\''] {
        if item.len() >= 2 && item.starts_with(q) && item.ends_with(q) {
            return Ok(Value::String(item[1..item.len() - 1].to_string()));
        }
    }
    match item {
        "True" | "true" => return Ok(Value::Bool(true)),
        "False" | "false" => return Ok(Value::Bool(false)),
        "None" | "null" => return Ok(Value::Null),
        _ => {}
    }
    if let Ok(integer) = item.parse::<i64>() {
        return Ok(Value::from(integer));
    }
    match item.parse::<f64>() {
        Ok(number) if number.is_finite() => Ok(Value::from(number)),
        _ => Err(format!(
            "'{item}' is not a literal (a quoted string, a number, True, False or None)"
        )),
    }
}
