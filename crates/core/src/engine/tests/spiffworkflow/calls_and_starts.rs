//! SpiffWorkflow's structure tests that had no counterpart here (call activities that talk
//! to another process by message, camunda `CallActivityMessageTest`, are in `call_messages`):
//! call activities with
//! terminate ends and parallel paths (`ApprovalsTest`), an embedded subprocess with a parallel
//! split (camunda `SubWorkflowTest`), the order of a call activity's tasks (`CallActivityTest`)
//! and what a model needs of others (`ProcessDependencyTest`). The list of every
//! structure-related SpiffWorkflow test, and where each is checked, is in `conformance.md`
//! beside this file (this module's documentation).
//!
//! SpiffWorkflow runs the tasks a test completes as READY; here a user or manual task that
//! waits. A task inside a call activity has the call activity's id before its own
//! (`call/task`); SpiffWorkflow's tests name the task by its own id. SpiffWorkflow's
//! save/restore variants serialise the workflow between steps: here the state goes through
//! JSON and back, which is what the service stores between steps anyway.
#![doc = include_str!("conformance.md")]

use super::*;
use crate::bpmn::ElementKind;

/// An element's own id: `call/task` is `task`.
pub(super) fn own_id(element_id: &str) -> &str {
    element_id.rsplit('/').next().unwrap_or(element_id)
}

/// The waiting user and manual tasks (SpiffWorkflow's READY manual tasks), in task order.
pub(super) fn ready(state: &InstanceState) -> Vec<&Task> {
    state
        .tasks
        .iter()
        .filter(|t| {
            t.state == TaskState::Waiting
                && matches!(t.element_type.as_str(), "userTask" | "manualTask")
        })
        .collect()
}

pub(super) fn ready_ids(state: &InstanceState) -> Vec<&str> {
    ready(state).iter().map(|t| own_id(&t.element_id)).collect()
}

/// `do_next_named_step`: exactly one ready task has this own id; it completes with `data`.
pub(super) fn do_named(m: &ModelSpec, state: &mut InstanceState, name: &str, data: Value) {
    let named: Vec<Uuid> = ready(state)
        .iter()
        .filter(|t| own_id(&t.element_id) == name)
        .map(|t| t.guid)
        .collect();
    assert_eq!(
        named.len(),
        1,
        "one ready task '{name}' (ready: {:?})",
        ready_ids(state)
    );
    complete_guid(m, state, named[0], data);
}

/// `do_next_exclusive_step`: the only ready task is this one; it completes.
pub(super) fn do_exclusive(m: &ModelSpec, state: &mut InstanceState, name: &str) {
    assert_eq!(ready_ids(state), [name], "the only ready task");
    do_named(m, state, name, json!({}));
}

/// SpiffWorkflow's `save_restore`: the state as it is stored, read back.
pub(super) fn save_restore(state: &mut InstanceState) {
    let stored = serde_json::to_string(&*state).unwrap();
    *state = serde_json::from_str(&stored).unwrap();
}

// --- camunda/CallActivityMessageTest ---------------------------------------------------

fn approvals() -> (ModelSpec, InstanceState) {
    let m = spiffworkflow_model("bpmn/data/Approvals.bpmn", "Approvals");
    let state = start_process(&m, "Approvals", json!({}));
    (m, state)
}

/// ApprovalsTest.testRunThroughHappy and testRunThroughHappyOtherOrders: in the first call
/// activity either approval ends it (terminate end events: the other approval is cancelled
/// and "First Approval Wins Done" is the only ready task); the parallel approvals join;
/// inside the second call activity the manager's and the operator's paths join at End2, and
/// "Parallel SP Done" is then the only ready task.
#[test]
fn approvals_test_run_through_in_either_order() {
    conformance_or_skip!();
    let orders: [[&str; 6]; 2] = [
        [
            "First_Approval_Wins.Manager_Approval",
            "Approvals.Manager_Approval__P_",
            "Approvals.Supervisor_Approval__P_",
            "Parallel_Approvals_SP.Step1",
            "Parallel_Approvals_SP.Manager_Approval",
            "Parallel_Approvals_SP.Supervisor_Approval",
        ],
        [
            "First_Approval_Wins.Supervisor_Approval",
            "Approvals.Supervisor_Approval__P_",
            "Approvals.Manager_Approval__P_",
            "Parallel_Approvals_SP.Manager_Approval",
            "Parallel_Approvals_SP.Step1",
            "Parallel_Approvals_SP.Supervisor_Approval",
        ],
    ];
    for [first, p1, p2, sp1, sp2, sp3] in orders {
        let (m, mut state) = approvals();
        do_named(&m, &mut state, first, json!({}));
        do_exclusive(&m, &mut state, "Approvals.First_Approval_Wins_Done");
        assert_eq!(
            task(
                &state,
                "Approvals.First_Approval_Wins/First_Approval_Wins.Supervisor_Approval"
            )
            .state,
            if first.ends_with("Manager_Approval") {
                TaskState::Cancelled
            } else {
                TaskState::Completed
            }
        );
        do_named(&m, &mut state, p1, json!({}));
        do_named(&m, &mut state, p2, json!({}));
        do_exclusive(&m, &mut state, "Approvals.Parallel_Approvals_Done");
        do_named(&m, &mut state, sp1, json!({}));
        do_named(&m, &mut state, sp2, json!({}));
        do_named(&m, &mut state, sp3, json!({}));
        do_exclusive(&m, &mut state, "Approvals.Parallel_SP_Done");
        assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    }
}

/// ApprovalsTest.testSaveRestore and testSaveRestoreWaiting: the same run with the state
/// stored and read back between steps; Step1 and then Supervisor_Approval are each the only
/// ready task once the manager approved inside Parallel_SP.
#[test]
fn approvals_test_save_restore() {
    conformance_or_skip!();
    let (m, mut state) = approvals();
    do_named(
        &m,
        &mut state,
        "First_Approval_Wins.Manager_Approval",
        json!({}),
    );
    save_restore(&mut state);
    do_exclusive(&m, &mut state, "Approvals.First_Approval_Wins_Done");
    save_restore(&mut state);
    do_named(
        &m,
        &mut state,
        "Approvals.Supervisor_Approval__P_",
        json!({}),
    );
    save_restore(&mut state);
    do_named(&m, &mut state, "Approvals.Manager_Approval__P_", json!({}));
    save_restore(&mut state);
    do_exclusive(&m, &mut state, "Approvals.Parallel_Approvals_Done");
    save_restore(&mut state);
    do_named(
        &m,
        &mut state,
        "Parallel_Approvals_SP.Manager_Approval",
        json!({}),
    );
    save_restore(&mut state);
    do_exclusive(&m, &mut state, "Parallel_Approvals_SP.Step1");
    save_restore(&mut state);
    do_exclusive(&m, &mut state, "Parallel_Approvals_SP.Supervisor_Approval");
    save_restore(&mut state);
    do_exclusive(&m, &mut state, "Approvals.Parallel_SP_Done");
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}

// --- camunda/SubWorkflowTest --------------------------------------------------------------

/// SubWorkflowTest.testRunThroughHappy and testRunThroughSaveRestore: A inside the
/// subprocess, then its parallel A1 and A2 (the first ready is A1), then B after it; every
/// form's field is in the data at the end.
#[test]
fn sub_workflow_test_runs_the_forms_in_order() {
    conformance_or_skip!();
    let m = spiffworkflow_model("camunda/data/subWorkflowComplex.bpmn", "SubWorkflow");
    for save in [false, true] {
        let mut state = start_process(&m, "SubWorkflow", json!({}));
        for answer in ["A", "A1", "A2", "B"] {
            let first = ready(&state)[0];
            assert_eq!(first.element_id, format!("Activity_{answer}"));
            let guid = first.guid;
            complete_guid(
                &m,
                &mut state,
                guid,
                json!({format!("Field{answer}"): answer}),
            );
            if save {
                save_restore(&mut state);
            }
        }
        assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
        assert_eq!(
            Value::Object(state.data.clone()),
            json!({"FieldA": "A", "FieldA1": "A1", "FieldA2": "A2", "FieldB": "B"})
        );
    }
}

// --- CallActivityTest ---------------------------------------------------------------------

/// CallActivityTest.test_order_of_tasks_in_get_task_is_call_acitivty_task_first_then_sub_tasks,
/// on the files its `call_activity_*.bpmn` matches: the call activity's task comes before the
/// tasks of the called process (the last script's `print`s, which SpiffArena's script globals
/// lack, replaced by `pass`).
#[test]
fn call_activity_task_comes_before_the_called_process_tasks() {
    conformance_or_skip!();
    let (caller_name, caller) = conformance_file("bpmn/data/call_activity_end_event.bpmn");
    let prints = "print(pre_var)\nprint(my_var)\nprint(my_other_var)";
    assert!(caller.contains(prints));
    let files = [
        (caller_name, caller.replace(prints, "pass")),
        conformance_file("bpmn/data/call_activity_call_activity.bpmn"),
        conformance_file("bpmn/data/call_activity_with_error.bpmn"),
    ];
    let m = build_model(&files, Some("Process_8200379")).unwrap();
    let state = start_process(&m, "Process_8200379", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    let index_of = |element: &str| {
        state
            .tasks
            .iter()
            .position(|t| t.element_id == element)
            .unwrap_or_else(|| panic!("no task {element}"))
    };
    let call = index_of("Activity_Call_Activity");
    for inside in [
        "Start_Called_Activity",
        "Sub_Bpmn_Task",
        "End_Called_Activity",
    ] {
        let inside = format!("Activity_Call_Activity/{inside}");
        assert!(call < index_of(&inside), "{inside}");
        let task = &state.tasks[index_of(&inside)];
        assert_eq!(task.scope, Some(state.tasks[call].guid), "{inside}");
    }
}

// --- ProcessDependencyTest ------------------------------------------------------------------

/// What a model still needs of other models, by `Callee::key`: the processes its call
/// activities call and the decisions its business rule tasks ask for that it does not
/// define. (What the engine asks the service for, one at a time, when it reaches them:
/// `EngineError::CalleeNeeded`.)
fn dependencies(m: &ModelSpec) -> std::collections::BTreeSet<String> {
    m.processes
        .values()
        .flat_map(|process| process.elements.values())
        .filter_map(|element| match &element.kind {
            ElementKind::CallActivity { called_element } => {
                Some(Callee::Process(called_element.clone()).key())
            }
            ElementKind::BusinessRuleTask { decision_id }
                if !m.decisions.contains_key(decision_id) =>
            {
                Some(Callee::Decision(decision_id.clone()).key())
            }
            _ => None,
        })
        .collect()
}

/// ProcessDependencyTest (spiff parser): call_activity_nested.bpmn needs the processes
/// Level2 and Level2b and the decision Level2c; with call_activity_level_2.bpmn added,
/// Level2 is resolved and Level3 (which it calls) is needed too. Difference: SpiffWorkflow's
/// `get_dependencies` still counts Level2 once its file is added (4 in all); here a process
/// the model defines is no longer a dependency (the call is resolved at load), so the set is
/// Level2b, Level2c and Level3. The run asks for the first callee it reaches. (The Camunda
/// parser variant reads `camunda:decisionRef`; this file carries both, and the business rule
/// task's decision is the same.)
#[test]
fn process_dependencies_are_what_the_model_calls_and_does_not_define() {
    conformance_or_skip!();
    let dir = "bpmn/data/call_activity_nested";
    let nested = spiffworkflow_model(&format!("{dir}/call_activity_nested.bpmn"), "Level1");
    let expected: std::collections::BTreeSet<String> = ["Level2", "Level2b", "decision:Level2c"]
        .map(String::from)
        .into();
    assert_eq!(dependencies(&nested), expected);
    let event = start_event(json!({}));
    match start(&nested, "Level1", event) {
        Err(EngineError::CalleeNeeded(callee)) => assert_eq!(callee.key(), "Level2"),
        other => panic!("asks for Level2, got {:?}", other.map(|(s, _)| s.status)),
    }

    let with_level_2 = spiffworkflow_models(
        &[
            &format!("{dir}/call_activity_nested.bpmn"),
            &format!("{dir}/call_activity_level_2.bpmn"),
        ],
        "Level1",
    );
    let expected: std::collections::BTreeSet<String> = ["Level2b", "Level3", "decision:Level2c"]
        .map(String::from)
        .into();
    assert_eq!(dependencies(&with_level_2), expected);
}

// --- spiff/PrescriptPostscriptTest (call activity) ----------------------------------------

/// PrescriptPostscriptTest.testCallActivity (and its save/restore variant): the call
/// activity's pre-script sets `in_data`, the called process (with an ioSpecification) makes
/// `out_data` of it, the post-script copies it to `new`; the caller's `old` is unchanged and
/// what the scripts set on the call activity stays.
#[test]
fn prescript_postscript_on_a_call_activity() {
    conformance_or_skip!();
    let m = spiffworkflow_models(
        &[
            "spiff/data/prescript_postscript_parent.bpmn",
            "spiff/data/prescript_postscript_call_activity.bpmn",
        ],
        "parent",
    );
    let state = start_process(&m, "parent", json!({"old": "hello"}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"old": "hello", "in_data": "hello", "out_data": "HELLO", "new": "HELLO"})
    );
}

// --- StartEventSplitTest ------------------------------------------------------------------

/// StartEventSplitTest: message_1 starts the process at start_1, and the one path goes on to
/// any_task (run as a user task, as SpiffWorkflow runs a `bpmn:task`); then it completes.
/// Difference: SpiffWorkflow makes a WAITING task of both message start events and cancels
/// start_2 when start_1 catches; here an instance is created by the message, from the one
/// start event that catches it, so start_2 has no task at all.
#[test]
fn start_event_split_starts_from_the_event_its_message_names() {
    conformance_or_skip!();
    let m = with_user_tasks("bpmn/data/start_event_split.bpmn", "main");
    for (message, fired, other) in [
        ("message_1", "start_1", "start_2"),
        ("message_2", "start_2", "start_1"),
    ] {
        let event = message_start(message, json!({}));
        let (mut state, _) = start(&m, "main", event).expect("start");
        assert_eq!(task(&state, fired).state, TaskState::Completed);
        assert_eq!(count(&state, other), 0);
        assert_eq!(ready_ids(&state), ["any_task"]);
        save_restore(&mut state);
        do_named(&m, &mut state, "any_task", json!({}));
        assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    }
}

/// ProcessParserTest.testReturnsEmptyListIfNoCallActivities, testHandlesSingleCallActivity,
/// testHandlesMultipleCallActivities and testHandlesNestedCallActivity: the processes each
/// model calls and does not define (as a set: SpiffWorkflow's list is in document order).
#[test]
fn called_element_ids_are_the_models_dependencies() {
    conformance_or_skip!();
    for (file, process_id, called) in [
        ("no-tasks.bpmn", "no_tasks", &[][..]),
        (
            "single_call_activity.bpmn",
            "Process_p4pfxhq",
            &["SingleTask_Process"][..],
        ),
        (
            "multiple_call_activities.bpmn",
            "Process_90mmqlw",
            &["Process_sypm122", "Process_diu8ta2", "Process_l14lar1"][..],
        ),
        (
            "nested_call_activity.bpmn",
            "Process_expand_call_activity",
            &["is_this_missing", "set_permissions_process"][..],
        ),
    ] {
        let m = spiffworkflow_model(&format!("bpmn/data/{file}"), process_id);
        let expected: std::collections::BTreeSet<String> =
            called.iter().map(|id| id.to_string()).collect();
        assert_eq!(dependencies(&m), expected, "{file}");
    }
}
