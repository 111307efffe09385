//! SpiffWorkflow's own test models (read from the conformance corpus, never copied), the script-heavy ones
//! and the timer and event-gateway ones, run end to end on the CPython script host, with what
//! SpiffWorkflow's tests say they must give. Timers fire when the test says (no sleeping).
//!
//! By topic: `scripts` (pre- and post-scripts, script tasks), `timers` (timer events and
//! event-based gateways), `events` (signals, multiple events, message starts), `flow`
//! (inclusive gateways, standard loops, transactions), `calls` (call activities and their
//! io specifications), `call_messages` (a call activity talking to another participant by
//! message), `calls_and_starts` (call activities with terminate ends and
//! parallel paths, dependencies, several start events; and in `conformance.md` the list of
//! SpiffWorkflow's structure tests and what checks each), `data` (task io specifications, data objects), `decisions` (business
//! rule tasks).

mod call_messages;
mod calls;
mod calls_and_starts;
mod data;
mod decisions;
mod events;
mod flow;
mod scripts;
mod timers;

use super::*;

pub(super) use crate::test_support::conformance_file;

/// A model of these files (the way SpiffWorkflow's tests load several at once).
pub(super) fn spiffworkflow_models(paths: &[&str], process_id: &str) -> ModelSpec {
    let files: Vec<(String, String)> = paths.iter().map(|path| conformance_file(path)).collect();
    build_model(&files, Some(process_id)).unwrap_or_else(|e| panic!("{paths:?}: {e}"))
}

/// The text of a SpiffWorkflow model whose `bpmn:task`s are user tasks: SpiffWorkflow runs a
/// task without a type as a manual task (its tests complete it with data), this engine passes
/// through it.
pub(super) fn user_tasks_of(path: &str) -> (String, String) {
    let (name, xml) = conformance_file(path);
    let xml = xml
        .replace("<bpmn:task ", "<bpmn:userTask ")
        .replace("</bpmn:task>", "</bpmn:userTask>");
    (name, xml)
}

pub(super) fn with_user_tasks(path: &str, process_id: &str) -> ModelSpec {
    build_model(&[user_tasks_of(path)], Some(process_id)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub(super) fn spiffworkflow_model(path: &str, process_id: &str) -> ModelSpec {
    spiffworkflow_models(&[path], process_id)
}

pub(super) fn waiting(state: &InstanceState) -> Vec<&str> {
    state
        .tasks
        .iter()
        .filter(|t| t.state == TaskState::Waiting)
        .map(|t| t.element_id.as_str())
        .collect()
}

pub(super) fn fire_timer(m: &ModelSpec, state: &mut InstanceState, element: &str) {
    let guid = task(state, element).guid;
    step(m, state, Event::TimerFired { task_guid: guid }).expect("the timer fires");
}

pub(super) fn complete(m: &ModelSpec, state: &mut InstanceState, element: &str) {
    let guid = task(state, element).guid;
    complete_guid(m, state, guid, json!({}));
}
