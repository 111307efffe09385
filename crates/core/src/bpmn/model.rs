//! Several files -> one `ModelSpec`: merge, resolve cross-file references, validate.
use super::*;
use crate::expr::Context;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

// Building a model, one module per phase: `shared` merges what all files share (messages,
// errors, signals, correlation), `processes` resolves each process's references against
// that, `build` runs the phases in order. The rest of this file answers queries on a built
// model.
mod build;
mod calls;
mod processes;
mod shared;

pub use build::build_model;
pub use calls::call_depth;

/// Elements a model may have for its steps to count as short (see
/// [`ModelSpec::steps_are_short`]): a step visits each element at most a few times, about a
/// microsecond each in a release build.
const SHORT_STEP_ELEMENTS: usize = 200;

impl ModelSpec {
    pub fn process(&self, id: &str) -> Option<&ProcessSpec> {
        self.processes.get(id)
    }

    /// Whether every step of this model is bounded by a small amount of work: no Python (a
    /// script may run its whole time limit), at most `SHORT_STEP_ELEMENTS` elements (a step's
    /// cost grows with the model), no loop or multi-instance activity (their iterations are
    /// not bounded by the model's size) and no call into another model. Such steps may run
    /// where they are asked for; any other runs off the threads that answer requests.
    pub fn steps_are_short(&self) -> bool {
        let elements = || self.processes.values().flat_map(|p| p.elements.values());
        !self.needs_python
            && !self.calls_elsewhere
            && self
                .processes
                .values()
                .map(|p| p.elements.len())
                .sum::<usize>()
                <= SHORT_STEP_ELEMENTS
            && elements().all(|e| e.standard_loop.is_none() && e.multi_instance.is_none())
    }

    /// Property id -> value for every correlation property with a retrieval expression for
    /// this message name that evaluates successfully on the payload (payload top-level keys are
    /// variables). A value that evaluates to null is left out (not established).
    pub fn correlation_values(
        &self,
        message_name: &str,
        payload: &Value,
        cx: &Context,
    ) -> BTreeMap<String, Value> {
        let empty = Map::new();
        let vars = payload.as_object().unwrap_or(&empty);
        let mut out = BTreeMap::new();
        for p in &self.correlation_properties {
            if let Some(e) = p.retrieval.get(message_name) {
                if let Ok(v) = e.eval(vars, cx) {
                    if !v.is_null() {
                        out.insert(p.id.clone(), v);
                    }
                }
            }
        }
        out
    }

    /// Correlation property ids that have a retrieval expression for this message name.
    pub fn correlation_properties_for(&self, message_name: &str) -> Vec<&str> {
        self.correlation_properties
            .iter()
            .filter(|p| p.retrieval.contains_key(message_name))
            .map(|p| p.id.as_str())
            .collect()
    }

    /// The message start event for this message name, if the model starts with it.
    pub fn message_start(&self, message_name: &str) -> Option<&MessageStart> {
        self.message_starts
            .iter()
            .find(|m| m.message_name == message_name)
    }

    /// JSON overview for the API:
    /// `{primary_process_id, files, processes: [{id, name, file, is_primary, start_events:
    /// [{id, name, kind: "none"|"message"|"messages"|"timer"|"signal", message_name, signal_name,
    /// message_names (kind "messages": several message definitions)}]}],
    /// start_messages: [..],
    /// waits_for_messages: [..], sends_messages: [..], service_operators: [..],
    /// correlation_properties: [{id, name, messages: [..]}]}` (name lists sorted, unique).
    pub fn summary(&self) -> Value {
        let mut exchanges = Exchanges::default();
        for process in self.processes.values() {
            exchanges.add(process);
        }
        let processes: Vec<Value> = self
            .processes
            .values()
            .map(|process| self.process_summary(process))
            .collect();
        let start_messages: BTreeSet<&str> = self
            .message_starts
            .iter()
            .map(|m| m.message_name.as_str())
            .collect();
        let props: Vec<Value> = self
            .correlation_properties
            .iter()
            .map(|p| json!({"id": p.id, "name": p.name, "messages": p.retrieval.keys().collect::<Vec<_>>()}))
            .collect();
        json!({
            "primary_process_id": self.primary_process_id,
            "files": self.files,
            "processes": processes,
            "start_messages": start_messages,
            "waits_for_messages": exchanges.waits,
            "sends_messages": exchanges.sends,
            "service_operators": exchanges.operators,
            "correlation_properties": props,
            "warnings": self.warnings.iter().map(|w| json!({
                "file_name": w.file,
                "element_id": w.element_id,
                "reason": w.reason,
            })).collect::<Vec<_>>(),
        })
    }

    /// A process in the summary: `{id, name, file, is_primary, start_events}`.
    fn process_summary(&self, process: &ProcessSpec) -> Value {
        let starts: Vec<Value> = process
            .start_events
            .iter()
            .map(|id| start_event_summary(&process.elements[id]))
            .collect();
        json!({
            "id": process.id,
            "name": process.name,
            "file": process.file,
            "is_primary": process.id == self.primary_process_id,
            "start_events": starts,
        })
    }
}

/// The messages a model waits for and sends, and the connector operators it calls (sorted,
/// unique), for its summary.
#[derive(Default)]
struct Exchanges {
    waits: BTreeSet<String>,
    sends: BTreeSet<String>,
    operators: BTreeSet<String>,
}

impl Exchanges {
    fn add(&mut self, process: &ProcessSpec) {
        for element in process.elements.values() {
            match &element.kind {
                ElementKind::MessageCatch(m) => {
                    self.waits.insert(m.message_name.clone());
                }
                ElementKind::Boundary(BoundarySpec {
                    trigger: BoundaryTrigger::Message(m),
                    ..
                }) => {
                    self.waits.insert(m.message_name.clone());
                }
                ElementKind::MessageThrow(m) | ElementKind::EndEvent(EndKind::Message(m)) => {
                    self.sends.insert(m.message_name.clone());
                }
                ElementKind::ServiceTask(s) => {
                    self.operators.insert(s.operator_id.clone());
                }
                _ => {}
            }
        }
    }
}

/// A start event in the summary: `{id, name, kind, message_name, signal_name}`, and
/// `message_names` for a start with several message definitions.
fn start_event_summary(element: &ElementSpec) -> Value {
    let (kind, message, signal) = match &element.kind {
        ElementKind::StartEvent { message: Some(m) } => {
            ("message", Some(m.message_name.clone()), None)
        }
        ElementKind::MultipleStart(_) => ("messages", None, None),
        ElementKind::TimerStart(_) => ("timer", None, None),
        ElementKind::SignalStart(s) => ("signal", None, Some(s.signal_name.clone())),
        _ => ("none", None, None),
    };
    let mut shown = json!({
        "id": element.id,
        "name": element.name,
        "kind": kind,
        "message_name": message,
        "signal_name": signal,
    });
    if kind == "messages" {
        let names: Vec<&str> = element
            .message_catches()
            .iter()
            .map(|m| m.message_name.as_str())
            .collect();
        shown["message_names"] = json!(names);
    }
    shown
}
