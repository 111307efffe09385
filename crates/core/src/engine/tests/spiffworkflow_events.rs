//! SpiffWorkflow's own event test models (read from the conformance corpus, never copied), run as its
//! tests run them, asserting what they assert: event payloads, conditional events, uncaught
//! escalations, multiple throws, a waiting receive's correlation, and Camunda's
//! message boundaries. Where a model cannot run here, or a behaviour differs on purpose, the
//! test says so and why.
//!
//! Two differences recur. An embedded subprocess works on its instance's data here
//! (SpiffWorkflow gives it a copy that it drops when the subprocess is interrupted), so data
//! set inside an interrupted subprocess stays. The processes of one collaboration run as
//! separate instances here (SpiffWorkflow runs them in one workflow), so a test's messages
//! go from one to the other as the shell would carry them.

use super::spiffworkflow::{
    complete, fire_timer, spiffworkflow_model, spiffworkflow_models, user_tasks_of, waiting,
    with_user_tasks,
};
use super::*;
use crate::bpmn::ElementKind;

/// Completes the waiting task of `element` with `data`.
fn complete_with(m: &ModelSpec, state: &mut InstanceState, element: &str, data: Value) {
    let guid = task(state, element).guid;
    complete_guid(m, state, guid, data);
}

/// The messages a step sent, (name, payload).
fn sent(effects: &[Effect]) -> Vec<(String, Value)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::SendMessage { name, payload, .. } => Some((name.clone(), payload.clone())),
            _ => None,
        })
        .collect()
}

/// EventPayloadTest.testSignalEvent: the throw's payload expression `{'r1': v1, 'r2': v2}`
/// is evaluated with set_data's data; the catch stores it in `result` (the `bpmn:signal`'s
/// variableName). The data is exactly what the test asserts.
#[test]
fn a_signal_payload_is_evaluated_by_the_throw_and_stored_by_the_catch() {
    conformance_or_skip!();
    let m = spiffworkflow_model("spiff/data/signal_event_payload.bpmn", "event_test");
    let mut state = start_process(&m, "event_test", json!({}));
    complete_with(
        &m,
        &mut state,
        "set_data",
        json!({"v1": 1, "v2": 2, "v3": 3}),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"v1": 1, "v2": 2, "v3": 3, "result": {"r1": 1, "r2": 2}})
    );
}

/// The throw hands its payload to the shell with the signal, for other instances.
#[test]
fn a_thrown_signal_carries_its_payload_out() {
    conformance_or_skip!();
    let m = spiffworkflow_model("spiff/data/signal_event_payload.bpmn", "event_test");
    let mut state = start_process(&m, "event_test", json!({}));
    let guid = task(&state, "set_data").guid;
    let effects = complete_guid(&m, &mut state, guid, json!({"v1": "a", "v2": [2]}));
    let thrown: Vec<&Value> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::ThrowSignal { name, payload, .. } if name == "Signal_1624y58" => Some(payload),
            _ => None,
        })
        .collect();
    assert_eq!(thrown, [&json!({"r1": "a", "r2": [2]})]);
}

/// EventPayloadTest.testErrorEvent: the error end event's payload expression `payload` gives
/// "ERROR!", which the error boundary on the subprocess stores in `result`, and the workflow
/// completes. SpiffWorkflow's data is then `{'result': 'ERROR!'}` alone: there the
/// subprocess's data (`error`, `payload`) went with the interrupted subprocess; here the
/// subprocess worked on the instance's data, which keeps them.
#[test]
fn an_error_payload_goes_into_the_boundarys_variable() {
    conformance_or_skip!();
    let m = with_user_tasks("spiff/data/error_event_payload.bpmn", "event_test");
    let mut state = start_process(&m, "event_test", json!({}));
    complete_with(
        &m,
        &mut state,
        "set_data",
        json!({"error": true, "payload": "ERROR!"}),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(state.data["result"], json!("ERROR!"));
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"error": true, "payload": "ERROR!", "result": "ERROR!"})
    );
    assert_eq!(task(&state, "catch").state, TaskState::Completed);
    assert_eq!(task(&state, "Activity_1qrttpi").state, TaskState::Cancelled);
}

/// EventPayloadTest.testEscalationEvent: the same with an escalation end event and an
/// escalation boundary (interrupting), and the same difference in the subprocess's data.
#[test]
fn an_escalation_payload_goes_into_the_boundarys_variable() {
    conformance_or_skip!();
    let m = with_user_tasks("spiff/data/escalation_event_payload.bpmn", "event_test");
    let mut state = start_process(&m, "event_test", json!({}));
    complete_with(
        &m,
        &mut state,
        "set_data",
        json!({"escalation": true, "payload": "ERROR!"}),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"escalation": true, "payload": "ERROR!", "result": "ERROR!"})
    );
    assert_eq!(task(&state, "catch").state, TaskState::Completed);
    assert_eq!(task(&state, "Activity_1qrttpi").state, TaskState::Cancelled);
}

/// Without the escalation, the subprocess completes normally and no payload is stored.
#[test]
fn no_escalation_no_payload() {
    conformance_or_skip!();
    let m = with_user_tasks("spiff/data/escalation_event_payload.bpmn", "event_test");
    let mut state = start_process(&m, "event_test", json!({}));
    complete_with(&m, &mut state, "set_data", json!({"escalation": false}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(!state.data.contains_key("result"));
    assert_eq!(task(&state, "Activity_1qrttpi").state, TaskState::Completed);
}

/// ConditionalEventTest.testIntermediateEvent on conditional_event.bpmn (its `bpmn:task`s are
/// user tasks, completed with the data the test sets): event_1 waits for the data object
/// task_a_done, which task A writes; completing A makes the event fire, and the workflow
/// completes.
#[test]
fn conditional_intermediate_event_waits_for_the_data_object() {
    conformance_or_skip!();
    let m = with_user_tasks("bpmn/data/conditional_event.bpmn", "intermediate");
    let mut state = start_process(&m, "intermediate", json!({}));
    complete(&m, &mut state, "task_b");
    assert_eq!(task(&state, "event_1").state, TaskState::Waiting);
    complete_with(&m, &mut state, "task_a", json!({"task_a_done": true}));
    assert_eq!(task(&state, "event_1").state, TaskState::Completed);
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

/// ConditionalEventTest.testBoundaryEvent: the boundary on D fires when C's data object makes
/// its condition true; D is cancelled and the workflow completes.
#[test]
fn conditional_boundary_event_cancels_its_task() {
    conformance_or_skip!();
    let m = with_user_tasks("bpmn/data/conditional_event.bpmn", "boundary");
    let mut state = start_process(&m, "boundary", json!({}));
    assert_eq!(task(&state, "event_2").state, TaskState::Waiting);
    complete_with(&m, &mut state, "task_c", json!({"task_c_done": true}));
    assert_eq!(task(&state, "event_2").state, TaskState::Completed);
    assert_eq!(task(&state, "task_d").state, TaskState::Cancelled);
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

/// UncaughtEscalationTest: nothing catches the subprocess's escalation, and the workflow
/// completes. SpiffWorkflow also keeps the uncaught event (`workflow.get_events()`), with
/// code `escalation-1`; this engine keeps no uncaught escalation, so the test reads the code
/// the end event throws from the model.
#[test]
fn an_uncaught_escalation_lets_the_workflow_complete() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/uncaught_escalation.bpmn", "top_level");
    let state = start_process(&m, "top_level", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(task(&state, "Event_0rc21k6").state, TaskState::Completed);
    let end = m.process("top_level").unwrap().element("Event_0rc21k6");
    let Some(ElementKind::EndEvent(crate::bpmn::EndKind::Escalation(escalation))) =
        end.map(|e| &e.kind)
    else {
        panic!("an escalation end event");
    };
    assert_eq!(escalation.escalation_code.as_deref(), Some("escalation-1"));
}

/// MultipleThrowEventStartsEventTest: `initiate` throws message_1 and message_2 from one
/// event; they start `respond` at its parallelMultiple start event, after which one user task
/// (any_task) is ready; running it completes the workflow. Here `respond` is an instance the
/// first message starts, waiting at its start event for the second.
#[test]
fn a_multiple_throw_starts_a_parallel_multiple_start_event() {
    conformance_or_skip!();
    let (name, xml) = user_tasks_of("bpmn/data/multiple-throw-start.bpmn");
    let m = build_model(&[(name, xml)], Some("respond")).unwrap();
    let (initiate, effects) = start(&m, "initiate", start_event(json!({}))).unwrap();
    assert_eq!(initiate.status, InstanceStatus::Complete);
    let messages = sent(&effects);
    let names: Vec<&str> = messages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["message_1", "message_2"]);
    let first = message_start(&messages[0].0, messages[0].1.clone());
    let (mut respond, _) = start(&m, "respond", first).unwrap();
    assert_eq!(waiting(&respond), ["Event_07g2lnb"]);
    let start_task = task(&respond, "Event_07g2lnb").guid;
    let (name, payload) = messages[1].clone();
    deliver_guid(&m, &mut respond, start_task, &name, payload).unwrap();
    assert_eq!(waiting(&respond), ["any_task"], "one ready user task");
    complete(&m, &mut respond, "any_task");
    assert_eq!(
        respond.status,
        InstanceStatus::Complete,
        "{:?}",
        respond.error
    );
}

/// WaitingEventTest (spiff): the receive task inside the subprocess waits for message B with
/// uid 1 (its processVariableCorrelation); the message with uid 1 completes the workflow and
/// lands in `a_var`. SpiffWorkflow names the wait's correlation by key
/// (`{'MainCorrelationKey': {'uid': 1}}`); this engine keys a wait by correlation property.
/// (The test's payload is a one-element tuple by a trailing comma, and its last assertion is
/// `assertTrue`, which checks nothing: this test sends the dict it meant and checks
/// `a_var`.)
#[test]
fn a_waiting_receive_shows_its_correlation_and_takes_the_matching_message() {
    conformance_or_skip!();
    let m = spiffworkflow_model("spiff/data/waiting_event.bpmn", "main");
    let (mut state, effects) = start(&m, "main", start_event(json!({}))).unwrap();
    let waits: Vec<(&str, &BTreeMap<String, Value>)> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaitForMessage { name, expected, .. } => Some((name.as_str(), expected)),
            _ => None,
        })
        .collect();
    let expected: BTreeMap<String, Value> = [("uid".to_string(), json!(1))].into();
    assert_eq!(waits, [("B", &expected)]);
    let receive = task(&state, "Activity_0qpzdpu").guid;
    let payload = json!({"uid": 1, "data": "asdf"});
    deliver_guid(&m, &mut state, receive, "B", payload.clone()).unwrap();
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(state.data["a_var"], payload);
}

/// Camunda's MessageBoundaryEventTest: the boss answers "No" twice (the worker's loop of
/// "Do Work" and a short timer goes on meanwhile), then "Yes", which throws
/// Message_Interrupt; the interrupting message boundary on the worker's subprocess ends it,
/// and both complete. The two processes are two instances here; the message goes from one to
/// the other as the shell carries it. Its payload is the boss's data: Camunda's
/// `camunda:expression` payload (and the `<catch>_Response` variable its catch stores) is not
/// read here (SpiffArena models use `spiffworkflow:messagePayload` / `messageVariable`).
#[test]
fn camunda_message_boundary_interrupts_the_subprocess() {
    conformance_or_skip!();
    let m = spiffworkflow_model("camunda/data/MessageBoundary.bpmn", "Process_0srqcj1");
    let mut worker = start_process(&m, "Process_0srqcj1", json!({}));
    let mut boss = start_process(&m, "Process_1kjyavs", json!({}));
    assert_eq!(waiting(&boss), ["Activity_Interrupt"]);
    let mut worker_waits = waiting(&worker);
    worker_waits.sort_unstable();
    assert_eq!(
        worker_waits,
        ["Activity_106f08z", "Event_InterruptBoundary"]
    );
    let mut thrown = vec![];
    for answer in ["No", "No", "Yes"] {
        complete(&m, &mut worker, "Activity_106f08z");
        fire_timer(&m, &mut worker, "Event_0aqmn5y");
        assert_eq!(task(&worker, "Activity_106f08z").state, TaskState::Waiting);
        let guid = task(&boss, "Activity_Interrupt").guid;
        let effects = complete_guid(&m, &mut boss, guid, json!({"interrupt_task": answer}));
        thrown.extend(sent(&effects));
    }
    assert_eq!(boss.status, InstanceStatus::Complete, "{:?}", boss.error);
    assert_eq!(
        thrown,
        [(
            "Message_Interrupt".to_string(),
            json!({"interrupt_task": "Yes"})
        )]
    );
    let boundary = task(&worker, "Event_InterruptBoundary").guid;
    let (name, payload) = thrown.remove(0);
    deliver_guid(&m, &mut worker, boundary, &name, payload).unwrap();
    assert_eq!(
        worker.status,
        InstanceStatus::Complete,
        "{:?}",
        worker.error
    );
    assert_eq!(
        task(&worker, "Activity_1m4766l").state,
        TaskState::Cancelled
    );
}

/// Camunda's NIMessageBoundaryTest: three rounds of "not late" and "not done"; then the boss
/// flags the work late, whose message fires the non-interrupting boundary (the worker is asked
/// why, and works on); then the work is done and described, and the workflow completes with
/// the answers in the data. SpiffWorkflow's final data also holds the boss's `flag_task` and
/// `Event_InterruptBoundary_Response: 'Youre late!'` (its Camunda message payload): here the
/// boss is another instance, and Camunda's message payload dialect is not read (see above).
#[test]
fn camunda_non_interrupting_message_boundary_runs_beside_the_work() {
    conformance_or_skip!();
    let m = spiffworkflow_model(
        "camunda/data/noninterrupting-MessageBoundary.bpmn",
        "Process_1k0py56",
    );
    let mut worker = start_process(&m, "Process_1k0py56", json!({}));
    let mut boss = start_process(&m, "Process_1kjyavs", json!({}));
    for _ in 0..3 {
        complete_with(
            &m,
            &mut boss,
            "Activity_WorkLate",
            json!({"flag_task": "No"}),
        );
        complete_with(
            &m,
            &mut worker,
            "Activity_DoWork",
            json!({"work_done": "No"}),
        );
    }
    let guid = task(&boss, "Activity_WorkLate").guid;
    let effects = complete_guid(&m, &mut boss, guid, json!({"flag_task": "Yes"}));
    assert_eq!(boss.status, InstanceStatus::Complete, "{:?}", boss.error);
    let (name, payload) = sent(&effects).remove(0);
    assert_eq!(name, "Message_Tardy");
    let boundary = task(&worker, "Event_InterruptBoundary").guid;
    deliver_guid(&m, &mut worker, boundary, &name, payload).unwrap();
    let mut asked = waiting(&worker);
    asked.sort_unstable();
    assert_eq!(
        asked,
        [
            "Activity_DoWork",
            "Activity_WorkLateReason",
            "Event_InterruptBoundary"
        ]
    );
    complete_with(
        &m,
        &mut worker,
        "Activity_DoWork",
        json!({"work_done": "No"}),
    );
    complete_with(
        &m,
        &mut worker,
        "Activity_WorkLateReason",
        json!({"work_late_reason": "covid-19"}),
    );
    complete_with(
        &m,
        &mut worker,
        "Activity_DoWork",
        json!({"work_done": "Yes"}),
    );
    // the boundary waits again (for the next message) while the subprocess lives
    assert_eq!(
        waiting(&worker),
        ["Event_InterruptBoundary", "Activity_WorkCompleted"]
    );
    complete_with(
        &m,
        &mut worker,
        "Activity_WorkCompleted",
        json!({"work_completed": "Lots of Stuff"}),
    );
    assert_eq!(
        worker.status,
        InstanceStatus::Complete,
        "{:?}",
        worker.error
    );
    assert_eq!(
        Value::Object(worker.data),
        json!({"work_done": "Yes", "work_completed": "Lots of Stuff", "work_late_reason": "covid-19"})
    );
}

/// Camunda's StartMessageEventTest.testParserCanReturnStartMessages: ThrowCatch starts with
/// ApprovalRequest; random_fact starts with no message. Its run (testRunThroughHappy) is not
/// run here: its gateway decides on `ApprovalResult`, which only Camunda's message dialect
/// sets (the thrower's `camunda:resultVariable` names the catcher's variable, and
/// `camunda:expression` its payload); SpiffArena's dialect, which this engine reads, puts the
/// variable on the catch (`spiffworkflow:messageVariable`).
#[test]
fn camunda_start_messages_are_listed_by_the_model() {
    conformance_or_skip!();
    let m = spiffworkflow_model("camunda/data/message_test.bpmn", "ThrowCatch");
    let starts: Vec<(&str, &str)> = m
        .message_starts
        .iter()
        .map(|s| (s.process_id.as_str(), s.message_name.as_str()))
        .collect();
    assert_eq!(starts, [("ThrowCatch", "ApprovalRequest")]);
    let m = spiffworkflow_models(&["camunda/data/random_fact.bpmn"], "random_fact");
    assert!(m.message_starts.is_empty());
}
