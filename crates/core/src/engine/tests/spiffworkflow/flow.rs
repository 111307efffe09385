//! SpiffWorkflow's flow models: inclusive gateways, standard loops, transactions and cancel
//! boundaries.

use super::*;

/// InclusiveGatewayTest: the split takes every true condition (the default when none), the
/// join waits for what can still arrive; with no true condition after the join it fails there.
#[test]
fn inclusive_gateway_splits_and_joins_as_spiffworkflow_does() {
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
    let (_, xml) = conformance_file("bpmn/data/invalid_cancel.bpmn");
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
