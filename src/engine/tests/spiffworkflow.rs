//! SpiffWorkflow's own test models (read from ../shared, never copied), the script-heavy ones
//! and the timer and event-gateway ones, run end to end on the CPython script host, with what
//! SpiffWorkflow's tests say they must give. Timers fire when the test says (no sleeping).

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

pub(super) fn start_process(m: &ModelSpec, process_id: &str, data: Value) -> InstanceState {
    let event = Event::Start {
        start_event_id: None,
        data: map(data),
        message: None,
        signal: None,
    };
    start(m, process_id, event).expect("start").0
}

/// PrescriptPostscriptTest.task_test: the pre-script sets x, y and z = x + y; the
/// post-script sets c = z * 2 and deletes x and y.
#[test]
fn prescript_postscript_leaves_a_b_c_z() {
    let m = spiffworkflow_model("spiff/data/prescript_postscript.bpmn", "Process_1");
    let state = start_process(&m, "Process_1", json!({"a": 1, "b": 2}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"a": 1, "b": 2, "c": 12, "z": 6})
    );
}

/// PrescriptPostscriptTest.test_for_error: without a and b the pre-script fails, and the task
/// is in error.
#[test]
fn prescript_postscript_without_data_fails_in_the_prescript() {
    let m = spiffworkflow_model("spiff/data/prescript_postscript.bpmn", "Process_1");
    let state = start_process(&m, "Process_1", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().expect("an error");
    assert_eq!(error.element_id, "Activity_1iqs4li");
    assert!(error.message.contains("(in the preScript)"), "{error}");
    assert!(error.message.starts_with("NameError"), "{error}");
    assert_eq!(task(&state, "Activity_1iqs4li").state, TaskState::Error);
}

/// PythonScriptEngineTest.testRunThroughHappy and testFunctionsAndGlobalsAreRemoved: the
/// scripts build `testvar`, `testvar2` and `sample`; the function they define is not kept.
#[test]
fn script_test_builds_its_data_and_drops_its_function() {
    let m = spiffworkflow_model("bpmn/data/ScriptTest.bpmn", "Process_1l85e0n");
    let state = start_process(&m, "Process_1l85e0n", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({
            "testvar": {"a": 1, "b": 2, "new": "Test"},
            "testvar2": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c"}],
            "sample": ["b", "c"],
        })
    );
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

/// EventBasedGatewayTest.testEventBasedGateway: message_1 wins, the other message and the
/// timer are cancelled, the workflow completes.
#[test]
fn event_gateway_message_wins() {
    let m = spiffworkflow_model("bpmn/data/event-gateway.bpmn", "Process_0pvx19v");
    let mut state = start_process(&m, "Process_0pvx19v", json!({}));
    let mut racing = waiting(&state);
    racing.sort_unstable();
    assert_eq!(
        racing,
        ["message_1_event", "message_2_event", "timer_event"]
    );
    let guid = task(&state, "message_1_event").guid;
    step(
        &m,
        &mut state,
        Event::MessageDelivered {
            task_guid: guid,
            name: "message_1".into(),
            payload: json!({}),
        },
    )
    .unwrap();
    assert_eq!(state.status, InstanceStatus::Complete);
    assert_eq!(task(&state, "message_1_event").state, TaskState::Completed);
    assert_eq!(task(&state, "message_2_event").state, TaskState::Cancelled);
    assert_eq!(task(&state, "timer_event").state, TaskState::Cancelled);
}

/// EventBasedGatewayTest.testTimeout: the timer wins; both messages are cancelled.
#[test]
fn event_gateway_timer_wins() {
    let m = spiffworkflow_model("bpmn/data/event-gateway.bpmn", "Process_0pvx19v");
    let mut state = start_process(&m, "Process_0pvx19v", json!({}));
    fire_timer(&m, &mut state, "timer_event");
    assert_eq!(state.status, InstanceStatus::Complete);
    assert_eq!(task(&state, "message_1_event").state, TaskState::Cancelled);
    assert_eq!(task(&state, "message_2_event").state, TaskState::Cancelled);
    assert_eq!(task(&state, "timer_event").state, TaskState::Completed);
}

/// TimerDurationTest: one timer waits ("PT0.25S"); once it fires, nothing waits.
#[test]
fn timer_duration_waits_then_completes() {
    let m = spiffworkflow_model("bpmn/data/timer.bpmn", "timer");
    let mut state = start_process(&m, "timer", json!({}));
    assert_eq!(waiting(&state), ["Event_0bxivgz"]);
    fire_timer(&m, &mut state, "Event_0bxivgz");
    assert_eq!(state.status, InstanceStatus::Complete);
}

/// TimerDurationBoundaryTest: the timer on the subprocess interrupts it (the subprocess is
/// CANCELLED), and the remaining user tasks complete the workflow.
#[test]
fn timer_boundary_on_a_subprocess_cancels_it() {
    let m = spiffworkflow_model("bpmn/data/boundary.bpmn", "boundary_event");
    let mut state = start_process(&m, "boundary_event", json!({}));
    // the first ready task (before the subprocess) is a user task
    let first = state
        .live_tasks()
        .find(|t| t.state == TaskState::Waiting && t.element_type != "boundaryEvent")
        .map(|t| t.element_id.clone())
        .expect("a first task");
    complete(&m, &mut state, &first);
    assert_eq!(task(&state, "Subworkflow").state, TaskState::Started);
    fire_timer(&m, &mut state, "Event_0iiih8g");
    assert_eq!(task(&state, "Subworkflow").state, TaskState::Cancelled);
    loop {
        let next = state
            .live_tasks()
            .find(|t| t.state == TaskState::Waiting)
            .map(|t| t.element_id.clone());
        let Some(next) = next else { break };
        complete(&m, &mut state, &next);
    }
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

/// TimerDurationBoundaryOnTaskTest: the non-interrupting timer sets timer_called; the user
/// task can still be completed, and the workflow completes.
#[test]
fn non_interrupting_timer_on_a_task_leaves_it_ready() {
    let m = spiffworkflow_model("bpmn/data/boundary_timer_on_task.bpmn", "test_timer");
    let mut state = start_process(&m, "test_timer", json!({}));
    fire_timer(&m, &mut state, "Event_0y4hbl0");
    assert_eq!(state.data["timer_called"], json!(true));
    assert_eq!(task(&state, "user_task").state, TaskState::Waiting);
    complete(&m, &mut state, "user_task");
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

/// NITimerDurationBoundaryTest: while the timer waits there is one user task; after it fires
/// there are two; completing both completes the workflow with both answers in the data.
#[test]
fn non_interrupting_timer_on_a_subprocess_adds_a_task() {
    let m = spiffworkflow_model(
        "bpmn/data/timer-non-interrupt-boundary.bpmn",
        "NonInterruptTimer",
    );
    let mut state = start_process(&m, "NonInterruptTimer", json!({}));
    let users = |state: &InstanceState| {
        let mut ids: Vec<String> = state
            .live_tasks()
            .filter(|t| t.element_type == "userTask")
            .map(|t| t.element_id.clone())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(users(&state), ["Activity_Work"]);
    fire_timer(&m, &mut state, "Event_0jyy8ao");
    assert_eq!(users(&state), ["Activity_Work", "GetReason"]);
    for (element, key, value) in [
        ("GetReason", "delay_reason", "Just Because"),
        ("Activity_Work", "work_done", "Yes"),
    ] {
        let guid = task(&state, element).guid;
        let mut data = Map::new();
        data.insert(key.into(), json!(value));
        step(
            &m,
            &mut state,
            Event::CompleteTask {
                task_guid: guid,
                data,
            },
        )
        .unwrap();
    }
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"work_done": "Yes", "delay_reason": "Just Because"})
    );
}

/// TimerDateTest: the script computes `futuredate` (an ISO string of a naive local time); the
/// timer waits for it, then the workflow completes.
#[test]
fn timer_date_from_a_script_variable() {
    let m = spiffworkflow_model("bpmn/data/timer-date-start.bpmn", "date_timer");
    let mut state = start_process(&m, "date_timer", json!({}));
    assert_eq!(waiting(&state), ["Event_0eb0w95"]);
    fire_timer(&m, &mut state, "Event_0eb0w95");
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

/// EventSubprocessTest: the signal thrown by the main flow starts the event subprocess, whose
/// task sees the data; then the workflow completes.
#[test]
fn a_signal_starts_the_event_subprocess() {
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
    let m = spiffworkflow_model("bpmn/data/multiple-throw.bpmn", "respond");
    let mut respond = start_process(&m, "respond", json!({}));
    let catch = task(&respond, "StartEvent_1").guid;
    assert_eq!(task(&respond, "StartEvent_1").state, TaskState::Waiting);
    let (initiate, effects) = start(
        &m,
        "initiate",
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: None,
            signal: None,
        },
    )
    .unwrap();
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
    let event = Event::Start {
        start_event_id: None,
        data: Map::new(),
        message: Some((name.to_string(), json!({}))),
        signal: None,
    };
    start(m, "main", event).expect("start").0
}

/// MultipleStartEventTest: either message starts the process; its first task is then ready.
#[test]
fn a_start_event_with_several_messages_starts_on_either() {
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

/// InclusiveGatewayTest: the split takes every true condition (the default when none), the
/// join waits for what can still arrive; with no true condition after the join it fails there.
#[test]
fn inclusive_gateway_splits_and_joins_as_spiffworkflow_does() {
    let m = spiffworkflow_model("bpmn/data/inclusive_gateway.bpmn", "main");
    for (data, expected) in [
        (
            json!({"v": -1, "u": -1, "w": -1}),
            Some(json!({"v": 0, "u": -1, "w": -1})),
        ),
        (
            json!({"v": 0, "u": 1, "w": 1}),
            Some(json!({"v": 0, "u": 1, "w": 1})),
        ),
        (json!({"v": 0, "u": -1, "w": -1}), None),
    ] {
        let mut state = start_process(&m, "main", json!({}));
        let guid = task(&state, "set_data").guid;
        step(
            &m,
            &mut state,
            Event::CompleteTask {
                task_guid: guid,
                data: data.as_object().cloned().unwrap(),
            },
        )
        .unwrap();
        match expected {
            Some(expected) => {
                assert_eq!(
                    state.status,
                    InstanceStatus::Complete,
                    "{data}: {:?}",
                    state.error
                );
                assert_eq!(Value::Object(state.data.clone()), expected, "{data}");
            }
            None => {
                assert_eq!(state.status, InstanceStatus::Error, "{data}");
                assert_eq!(task(&state, "second").state, TaskState::Error);
            }
        }
    }
}

/// StandardLoopTest.testLoopMaximum and testSkipLoop: `not done` with loopMaximum 3 and
/// testBefore: three runs while not done; none when done from the start.
#[test]
fn a_standard_loop_runs_to_its_maximum_or_not_at_all() {
    let m = spiffworkflow_model("bpmn/data/standard_loop.bpmn", "main");
    let runs = |state: &InstanceState| {
        state
            .tasks
            .iter()
            .filter(|t| t.element_id == "any_task")
            .count()
    };
    let state = start_process(&m, "main", json!({"done": false}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(runs(&state), 3);
    assert!(state.internal.loops.is_empty());
    let state = start_process(&m, "main", json!({"done": true}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(runs(&state), 1, "one skipped task, no run");
}

/// ParseStandardLoop: a loop with neither a condition nor a maximum is refused.
#[test]
fn a_standard_loop_without_an_end_is_refused() {
    let file = conformance_file("bpmn/data/standard_loop_invalid.bpmn");
    let error = build_model(&[file], Some("main")).expect_err("refused");
    assert!(
        error.reason.contains("loopCondition or a loopMaximum"),
        "{error}"
    );
}

/// TransactionSubprocessTest (testSubworkflowCancelEvent, testSubworkflowErrorCodeNone,
/// testSubworkflowErrorCodeOne). testNormalCompletion is left out: its last script calls
/// `print`, which SpiffArena's script globals (and so ours) do not have.
#[test]
fn a_transaction_is_cancelled_or_caught_as_spiffworkflow_says() {
    let m = spiffworkflow_model("bpmn/data/transaction.bpmn", "Main_Process");
    let run = |value: &str, quantity: Option<i64>| {
        let mut state = start_process(&m, "Main_Process", json!({}));
        let guid = task(&state, "Activity_Get_Data").guid;
        let data = json!({"value": value}).as_object().cloned().unwrap();
        step(
            &m,
            &mut state,
            Event::CompleteTask {
                task_guid: guid,
                data,
            },
        )
        .unwrap();
        if let Some(quantity) = quantity {
            let guid = task(&state, "Activity_Get_Quantity").guid;
            let data = json!({"quantity": quantity}).as_object().cloned().unwrap();
            step(
                &m,
                &mut state,
                Event::CompleteTask {
                    task_guid: guid,
                    data,
                },
            )
            .unwrap();
        }
        state
    };
    let ran = |state: &InstanceState, element: &str| {
        state
            .tasks
            .iter()
            .any(|t| t.element_id == element && t.state == TaskState::Completed)
    };

    // cancel: the cancel boundary's path runs, and what the transaction set is undone
    let state = run("", None);
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(ran(&state, "Cancel_Action"));
    assert_eq!(task(&state, "Subprocess").state, TaskState::Cancelled);
    assert!(!state.data.contains_key("value"), "{:?}", state.data);
    assert!(!ran(&state, "Error_1_Action") && !ran(&state, "Error_None_Action"));
    assert!(!ran(&state, "Activity_Print_Data"));

    // an error without a code: caught by the catch-all boundary; the data stays
    let state = run("asdf", Some(0));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(ran(&state, "Error_None_Action") && !ran(&state, "Error_1_Action"));
    assert_eq!(state.data["value"], json!("asdf"));
    assert!(!ran(&state, "Cancel_Action") && !ran(&state, "Activity_Print_Data"));

    // error 1: caught by its own boundary
    let state = run("asdf", Some(-1));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(ran(&state, "Error_1_Action") && !ran(&state, "Error_None_Action"));
}

/// CancelBoundaryEventTest: a cancel boundary event on a user task is refused at load.
#[test]
fn a_cancel_boundary_outside_a_transaction_is_refused() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance/spiffworkflow-tests/bpmn/data/invalid_cancel.bpmn");
    let xml = std::fs::read_to_string(file).expect("../shared beside the checkout");
    let error = build_model(
        &[("invalid_cancel.bpmn".into(), xml)],
        Some("Process_1dagb7t"),
    )
    .expect_err("refused");
    assert_eq!(error.element_id.as_deref(), Some("Event_TokenReset"));
    assert!(
        error.reason.contains("attaches to a transaction"),
        "{error}"
    );
}

/// CallActivityTest.test_call_activity_missing_subprocess_sets_task_error_state: without the
/// called process, reaching the call activity fails it with SpiffWorkflow's message.
#[test]
fn a_call_activity_without_its_process_fails_as_spiffworkflow_says() {
    let m = spiffworkflow_models(&["bpmn/data/call_activity_with_error.bpmn"], "ErroringBPMN");
    // no model defines it (as the shell finds when the step asks for it)
    let reason =
        "The called process 'Call_Activity_Get_Data' was not found: no process model defines it";
    let m = m
        .with_callees(
            &[],
            [("Call_Activity_Get_Data".to_string(), reason.to_string())].into(),
        )
        .unwrap();
    let state = start_process(&m, "ErroringBPMN", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().unwrap();
    assert!(
        error
            .message
            .contains("The called process 'Call_Activity_Get_Data' was not found"),
        "{error}"
    );
    assert_eq!(task(&state, "Activity_12zat0d").state, TaskState::Error);
}

/// CallActivityTest.test_call_activity_errors_include_task_trace: with the called process, the
/// error comes from its task, inside the call activity (the task id says where).
#[test]
fn an_error_inside_a_called_process_names_the_task_inside_the_call() {
    let m = spiffworkflow_models(
        &[
            "bpmn/data/call_activity_with_error.bpmn",
            "bpmn/data/call_activity_call_activity.bpmn",
        ],
        "ErroringBPMN",
    );
    let state = start_process(&m, "ErroringBPMN", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().unwrap();
    assert_eq!(
        error.element_id, "Activity_12zat0d/Sub_Bpmn_Task",
        "{error}"
    );
    assert_eq!(
        task(&state, "Activity_12zat0d/Sub_Bpmn_Task").state,
        TaskState::Error
    );
    assert_eq!(task(&state, "Activity_12zat0d").scope, None);
}

/// SpiffWorkflow's io_spec models (IOSpecTest.CallActivityDataTest), the caller's set_data
/// script changed as each test changes it.
fn io_spec_model(set_data: &str, transform: &str) -> ModelSpec {
    let (parent_name, parent) = conformance_file("bpmn/data/io_spec_parent.bpmn");
    let (callee_name, callee) = conformance_file("bpmn/data/io_spec.bpmn");
    let original = r#"in_1, in_2, unused = 1, "hello world", True"#;
    let transform_original = "out_1, out_2, unused = in_1 * 2, in_2.upper(), False";
    assert!(parent.contains(original) && callee.contains(transform_original));
    let files = [
        (parent_name, parent.replace(original, set_data)),
        (callee_name, callee.replace(transform_original, transform)),
    ];
    build_model(&files, Some("parent")).unwrap()
}

/// testCallActivityWithIOSpec: only the inputs go in, only the outputs come back; the
/// caller's own variables are untouched.
#[test]
fn a_called_process_with_an_io_specification_passes_only_its_inputs_and_outputs() {
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, out_2, unused = in_1 * 2, in_2.upper(), False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"in_1": 1, "in_2": "hello world", "unused": true, "out_1": 2, "out_2": "HELLO WORLD"})
    );
    // what is not an input is not there
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, out_2 = in_1 * 2, unused",
    );
    let state = start_process(&m, "parent", json!({}));
    let error = state.error.expect("the callee cannot see 'unused'");
    assert!(
        error.message.starts_with("NameError: name 'unused'"),
        "{error}"
    );
}

/// testCallActivityMissingInput: the call fails naming the missing input.
#[test]
fn a_called_process_missing_an_input_fails() {
    let m = io_spec_model(
        "in_1, unused = 1, True",
        "out_1, out_2, unused = in_1 * 2, in_2.upper(), False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data input 'in_2'"));
}

/// testCallActivityMissingOutput: the call fails naming the output not set.
#[test]
fn a_called_process_missing_an_output_fails() {
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, unused = in_1 * 2, False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data output 'out_2'"));
}

/// CallActivityTest.test_data_persists_through_call_activity and
/// test_call_activity_allows_removal_of_data: the called process's data comes back, and a
/// variable it deleted is gone. (Its last script prints, and `print` is not among SpiffArena's
/// script globals: the prints are replaced by `pass`.)
#[test]
fn data_persists_through_a_call_activity_and_a_deleted_variable_is_gone() {
    let (caller_name, caller) = conformance_file("bpmn/data/call_activity_end_event.bpmn");
    let prints = "print(pre_var)\nprint(my_var)\nprint(my_other_var)";
    assert!(caller.contains(prints));
    let files = [
        (caller_name, caller.replace(prints, "pass")),
        conformance_file("bpmn/data/call_activity_call_activity.bpmn"),
    ];
    let m = build_model(&files, Some("Process_8200379")).unwrap();
    let state = start_process(&m, "Process_8200379", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"pre_var": "some string", "my_var": "World", "my_other_var": "Mike"})
    );
}

fn io_spec_on_task(set_data: &str) -> ModelSpec {
    let (name, xml) = conformance_file("bpmn/data/io_spec_on_task.bpmn");
    let original = r#"in_1, in_2, unused = 1, "hello world", True"#;
    assert!(xml.contains(original));
    build_model(&[(name, xml.replace(original, set_data))], Some("main")).unwrap()
}

/// IOSpecOnTaskTest.testIOSpecOnTask: the task sees its inputs only; only its outputs go on.
#[test]
fn a_task_with_an_io_specification_sees_its_inputs_and_hands_on_its_outputs() {
    let m = io_spec_on_task(r#"in_1, in_2, unused = 1, "hello world", True"#);
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "any_task").guid;
    assert_eq!(
        Value::Object(state.internal.local_data[&guid].clone()),
        json!({"in_1": 1, "in_2": "hello world"})
    );
    complete_guid(
        &m,
        &mut state,
        guid,
        json!({"out_1": 1, "out_2": "bye", "extra": true}),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"out_1": 1, "out_2": "bye"})
    );
}

/// testIOSpecOnTaskMissingInput and testIOSpecOnTaskMissingOutput.
#[test]
fn a_task_missing_an_input_or_an_output_fails() {
    let m = io_spec_on_task("in_1, unused = 1, True");
    let state = start_process(&m, "main", json!({}));
    assert!(state.error.unwrap().message.contains("data input 'in_2'"));
    let m = io_spec_on_task(r#"in_1, in_2, unused = 1, "hello world", True"#);
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "any_task").guid;
    complete_guid(&m, &mut state, guid, json!({"out_1": 1}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data output 'out_2'"));
}

/// DataObjectTest.actual_test on data_object.bpmn (its `bpmn:task` run as a user task, as
/// SpiffWorkflow runs it): a data object is written from a task's data and leaves it; a task
/// that reads it sees the object's value, not what its data held; one that only reads it does
/// not change it; a task inside a subprocess reads and writes its parent's data object.
#[test]
fn data_objects_are_read_and_written_through_associations_only() {
    let m = with_user_tasks("bpmn/data/data_object.bpmn", "Process");
    let mut state = start_process(&m, "Process", json!({}));
    let complete_with = |state: &mut InstanceState, element: &str, data: Value| {
        let guid = task(state, element).guid;
        complete_guid(&m, state, guid, data);
    };
    complete_with(&mut state, "generate_data", json!({"obj_1": "hello"}));
    assert_eq!(state.internal.data_objects["obj_1"], json!("hello"));
    assert!(
        !state.data.contains_key("obj_1"),
        "copied out of the task data"
    );

    complete_with(&mut state, "task_1", json!({"obj_1": "hello again"}));
    assert_eq!(
        state.data["obj_1"],
        json!("hello"),
        "read_data sees the data object"
    );
    complete_with(&mut state, "read_data", json!({"obj_1": "hello again"}));
    assert_eq!(
        state.internal.data_objects["obj_1"],
        json!("hello"),
        "unchanged"
    );
    // the subprocess's task reads it now (its data is the instance's): the object's value,
    // not what read_data left
    assert_eq!(state.data["obj_1"], json!("hello"));
    complete_with(&mut state, "placeholder", json!({"obj_1": "hello again"}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(!state.data.contains_key("obj_1"));
    assert_eq!(state.internal.data_objects["obj_1"], json!("hello again"));
}

/// DataObjectTest.testMissingDataOutput: a task that writes a data object its data does not
/// hold fails.
#[test]
fn a_data_object_missing_from_the_writers_data_fails() {
    let (name, xml) = conformance_file("bpmn/data/data_object.bpmn");
    let m = build_model(&[(name, xml)], Some("Process")).unwrap();
    let mut state = start_process(&m, "Process", json!({}));
    let guid = task(&state, "generate_data").guid;
    complete_guid(&m, &mut state, guid, json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data object 'obj_1'"));
}

/// DataObjectGatewayTest.testExpression: the gateway decides on the data object the task
/// wrote, which is not left in the data.
#[test]
fn a_gateway_decides_on_a_data_object() {
    let m = with_user_tasks("bpmn/data/data_object_gateway.bpmn", "main");
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "set_data").guid;
    complete_guid(&m, &mut state, guid, json!({"val": true}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(task(&state, "yes").state, TaskState::Completed);
    assert_eq!(count(&state, "no"), 0);
    assert!(!state.data.contains_key("val"));
}

/// BusinessRuleTaskTest (spiff): a script sets the question, the table answers it, and the
/// process completes with the answer merged into the task data.
#[test]
fn a_business_rule_task_answers_from_its_decision_table() {
    let m = spiffworkflow_models(
        &[
            "spiff/data/business_rule_task.bpmn",
            "spiff/data/dmn/business_rules.dmn",
        ],
        "Process_bd2e724",
    );
    let state = start_process(&m, "Process_bd2e724", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"question": "X", "answer": "Y"})
    );
}

/// BusinessRuleTaskParserTest (camunda): x = 3 takes the gateway's default flow to the
/// decision (Camunda's `decisionRef`), which gives y = "A".
#[test]
fn a_camunda_business_rule_task_decides_after_the_gateway() {
    let m = spiffworkflow_models(
        &[
            "camunda/data/ExclusiveGatewayIfElseAndDecision.bpmn",
            "camunda/data/dmn/test_integer_decision.dmn",
        ],
        "Process_1",
    );
    let state = start_process(&m, "Process_1", json!({"x": 3}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data), json!({"x": 3, "y": "A"}));
}

/// InvalidBusinessRuleTaskParserTest: `spam= 1` fails the task when its rule runs, naming
/// the row (the upload's syntax check refuses the file before that can happen).
#[test]
fn a_decision_whose_rule_does_not_run_fails_the_task_with_its_row() {
    let m = spiffworkflow_models(
        &[
            "camunda/data/invalid/InvalidDecision.bpmn",
            "camunda/data/dmn/invalid_decision.dmn",
        ],
        "Process_1",
    );
    let state = start_process(&m, "Process_1", json!({"x": 3}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.unwrap();
    assert_eq!(error.element_id, "InvalidDecisionTaskId");
    assert!(error.message.contains("SyntaxError"), "{}", error.message);
    assert!(error.message.contains("row 1"), "{}", error.message);
}

/// A decision that is not in the model is asked for (the shell finds it in another model);
/// one no model defines fails the task with the reason.
#[test]
fn a_decision_the_model_lacks_is_asked_for_then_fails_when_missing() {
    let m = spiffworkflow_models(&["spiff/data/business_rule_task.bpmn"], "Process_bd2e724");
    assert!(m.calls_elsewhere);
    let event = Event::Start {
        start_event_id: None,
        data: Map::new(),
        message: None,
        signal: None,
    };
    let asked = start(&m, "Process_bd2e724", event).expect_err("the step needs the decision");
    assert_eq!(
        asked,
        EngineError::CalleeNeeded(Callee::Decision("decision_1".into()))
    );
    let dmn = spiffworkflow_models(
        &[
            "spiff/data/business_rule_task.bpmn",
            "spiff/data/dmn/business_rules.dmn",
        ],
        "Process_bd2e724",
    );
    let linked = m
        .with_callees(
            &[(Callee::Decision("decision_1".into()), &dmn)],
            Default::default(),
        )
        .unwrap();
    let state = start_process(&linked, "Process_bd2e724", json!({}));
    assert_eq!(state.data["answer"], json!("Y"));
    let reason = "The decision 'decision_1' was not found: no process model defines it";
    let missing = m
        .with_callees(
            &[],
            [("decision:decision_1".to_string(), reason.to_string())].into(),
        )
        .unwrap();
    let state = start_process(&missing, "Process_bd2e724", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert_eq!(state.error.unwrap().message, reason);
}
