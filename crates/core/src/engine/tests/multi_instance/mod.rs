//! Multi-instance activities, on SpiffWorkflow's own models (`ParallelMultiInstanceTest`,
//! `SequentialMultiInstanceTest`, spiff's `MultiInstanceTaskTest`) with what those tests
//! assert, and on small models of our own (scripts, subprocesses, service tasks, boundaries).
//!
//! SpiffWorkflow's tests change the task spec before running (another input or output, a
//! completion condition); here the same change is made to the file's text. Its models use
//! `bpmn:task`, which SpiffWorkflow runs as a manual task and this engine passes through, so
//! they are loaded as user tasks. One difference is deliberate: parallel instances that
//! complete out of order still give their results in item order (SpiffWorkflow appends them
//! in completion order).
//!
//! Checked: every test of ParallelMultiInstanceTest.py and SequentialMultiInstanceTest.py
//! (list/dict input and output, existing and new output, in-place update, cardinality,
//! empty collection, completion condition, non-empty output refused, invalid model refused;
//! the save/restore variants are the same runs, our state being serialised between steps
//! anyway) and MultiInstanceTaskTest.py (scripts on the activity, scripts on the instances).
//! Not run: the `set` inputs (JSON has no sets).
//!
//! By topic: `parallel` (ParallelMultiInstanceTest), `sequential` (SequentialMultiInstanceTest
//! and MultiInstanceTaskTest), `data` (our models: each instance's data, outputs,
//! subprocesses), `activities` (our models: service tasks, errors, boundaries, receives,
//! limits).

mod activities;
mod data;
mod parallel;
mod sequential;

use super::spiffworkflow::{conformance_file, user_tasks_of};
use super::*;

/// A SpiffWorkflow model with the test's changes made to its text.
fn changed_model(path: &str, process_id: &str, changes: &[(&str, String)]) -> ModelSpec {
    let (name, mut xml) = user_tasks_of(path);
    for (from, to) in changes {
        assert!(xml.contains(from), "{path} has no {from}");
        xml = xml.replace(from, to.as_str());
    }
    build_model(&[(name, xml)], Some(process_id)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const PARALLEL: &str = "bpmn/data/parallel_multiinstance_loop_input.bpmn";
const SEQUENTIAL: &str = "bpmn/data/sequential_multiinstance_loop_input.bpmn";
const PARALLEL_CARDINALITY: &str = "bpmn/data/parallel_multiinstance_cardinality.bpmn";
const SEQUENTIAL_CARDINALITY: &str = "bpmn/data/sequential_multiinstance_cardinality.bpmn";
const OUTPUT_REF: &str = "<bpmn:loopDataOutputRef>output_data</bpmn:loopDataOutputRef>";

fn in_place() -> (&'static str, String) {
    (
        OUTPUT_REF,
        "<bpmn:loopDataOutputRef>input_data</bpmn:loopDataOutputRef>".to_string(),
    )
}

fn condition(source: &'static str) -> (&'static str, String) {
    (
        "</bpmn:multiInstanceLoopCharacteristics>",
        format!("<bpmn:completionCondition>{source}</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics>"),
    )
}

/// The waiting instances of `any_task`, with their own data.
fn instances(state: &InstanceState) -> Vec<(Uuid, Map)> {
    state
        .tasks
        .iter()
        .filter(|t| t.element_id == "any_task" && t.state == TaskState::Waiting)
        .map(|t| (t.guid, state.internal.local_data[&t.guid].clone()))
        .collect()
}

/// Completes every instance as SpiffWorkflow's tests do (`output_item = input_item * 2`), the
/// first waiting one first; `at_once` instances wait at the start (and, when it is 1, at
/// every step: a sequential activity).
fn double_every_item(m: &ModelSpec, state: &mut InstanceState, at_once: usize) {
    let mut first = true;
    loop {
        let waiting = instances(state);
        if waiting.is_empty() {
            return;
        }
        if first || at_once == 1 {
            assert_eq!(waiting.len(), at_once, "instances waiting at once");
        }
        first = false;
        let (guid, data) = waiting[0].clone();
        let item = data["input_item"]
            .as_i64()
            .expect("the instance has its item");
        complete_guid(m, state, guid, json!({"output_item": item * 2}));
    }
}

fn run(m: &ModelSpec, process_id: &str, data: Value, at_once: usize) -> InstanceState {
    let mut state = start_process(m, process_id, data);
    double_every_item(m, &mut state, at_once);
    state
}

fn completed_with(state: &InstanceState, data: Value) {
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data.clone()), data);
    assert!(state.internal.local_data.is_empty() && state.internal.multi.is_empty());
}

fn refused_with(state: &InstanceState, message: &str) {
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.as_ref().expect("an error");
    assert_eq!(error.element_id, "any_task");
    assert!(error.message.contains(message), "{error}");
}

const ITEMS: &str = r#"<bpmn:multiInstanceLoopCharacteristics>
  <bpmn:loopDataInputRef>orders</bpmn:loopDataInputRef>
  <bpmn:loopDataOutputRef>results</bpmn:loopDataOutputRef>
  <bpmn:inputDataItem id="order"/><bpmn:outputDataItem id="result"/>
</bpmn:multiInstanceLoopCharacteristics>"#;
