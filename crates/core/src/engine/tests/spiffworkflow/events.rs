//! SpiffWorkflow's event models: a signal starting an event subprocess, multiple and
//! parallel multiple events, and message start events.

use super::*;

/// EventSubprocessTest: the signal thrown by the main flow starts the event subprocess, whose
/// task sees the data; then the workflow completes.
#[test]
fn a_signal_starts_the_event_subprocess() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/event-subprocess.bpmn", "main");
    let state = start_process(&m, "main", json!({"v1": true, "v2": false}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(task(&state, "task").state, TaskState::Completed);
    assert_eq!(task(&state, "sub").state, TaskState::Completed);
    assert_eq!(Value::Object(state.data), json!({"v1": true, "v2": false}));
}

/// MultipleThrowEventIntermediateCatchTest: `initiate` throws message_1 and message_2 from one
/// event; `respond` waits for both at one catch event (`parallelMultiple`) and completes once
/// both arrived. Here the processes are two instances and the shell carries the messages.
#[test]
fn a_multiple_throw_reaches_a_parallel_multiple_catch() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/multiple-throw.bpmn", "respond");
    let mut respond = start_process(&m, "respond", json!({}));
    let catch = task(&respond, "StartEvent_1").guid;
    assert_eq!(task(&respond, "StartEvent_1").state, TaskState::Waiting);
    let (initiate, effects) = start(&m, "initiate", start_event(json!({}))).unwrap();
    assert_eq!(initiate.status, InstanceStatus::Complete);
    let sent: Vec<&str> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::SendMessage { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(sent, ["message_1", "message_2"]);
    for (n, name) in sent.iter().enumerate() {
        step(
            &m,
            &mut respond,
            Event::MessageDelivered {
                task_guid: catch,
                name: name.to_string(),
                payload: json!({}),
            },
        )
        .unwrap();
        let expected = if n == 0 {
            InstanceStatus::Waiting
        } else {
            InstanceStatus::Complete
        };
        assert_eq!(respond.status, expected, "after {name}");
    }
}

fn start_by_message(m: &ModelSpec, name: &str) -> InstanceState {
    let event = message_start(name, json!({}));
    start(m, "main", event).expect("start").0
}

/// MultipleStartEventTest: either message starts the process; its first task is then ready.
#[test]
fn a_start_event_with_several_messages_starts_on_either() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/multiple-start.bpmn", "main");
    let starts: Vec<&str> = m
        .message_starts
        .iter()
        .map(|s| s.message_name.as_str())
        .collect();
    assert_eq!(starts, ["message_1", "message_2"]);
    for name in ["message_1", "message_2"] {
        let state = start_by_message(&m, name);
        assert_eq!(task(&state, "StartEvent_1").state, TaskState::Completed);
        // any_task is a bpmn:task: it runs at once here, so the process completes
        assert_eq!(state.status, InstanceStatus::Complete, "{name}");
    }
}

/// ParallelStartEventTest: after message_1 the start event still waits (for message_2); after
/// message_2 the process goes on.
#[test]
fn a_parallel_start_event_waits_for_every_message() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/multiple-start-parallel.bpmn", "main");
    let mut state = start_by_message(&m, "message_1");
    assert_eq!(waiting(&state), ["StartEvent_1"]);
    assert_eq!(state.status, InstanceStatus::Waiting);
    let start_task = task(&state, "StartEvent_1").guid;
    step(
        &m,
        &mut state,
        Event::MessageDelivered {
            task_guid: start_task,
            name: "message_2".into(),
            payload: json!({}),
        },
    )
    .unwrap();
    assert_eq!(task(&state, "StartEvent_1").state, TaskState::Completed);
    assert_eq!(state.status, InstanceStatus::Complete);
}
