//! SpiffWorkflow's timer models: event-based gateways, durations, dates, and timer
//! boundaries (interrupting or not) on tasks and subprocesses.

use super::*;

/// EventBasedGatewayTest.testEventBasedGateway: message_1 wins, the other message and the
/// timer are cancelled, the workflow completes.
#[test]
fn event_gateway_message_wins() {
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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

/// TimerDurationBoundaryOnTaskTest: the non-interrupting timer's path sets timer_called (on
/// its own copy of the data: SpiffWorkflow's test reads it from that path's last task); the
/// user task can still be completed, and the workflow completes with the user task's path's
/// data, which ended last: SpiffWorkflow's workflow data is `{timer_called: false}` too.
#[test]
fn non_interrupting_timer_on_a_task_leaves_it_ready() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/boundary_timer_on_task.bpmn", "test_timer");
    let mut state = start_process(&m, "test_timer", json!({}));
    fire_timer(&m, &mut state, "Event_0y4hbl0");
    assert_eq!(task(&state, "set_variable").state, TaskState::Completed);
    assert_eq!(task(&state, "user_task").state, TaskState::Waiting);
    complete(&m, &mut state, "user_task");
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(state.data, map(json!({"timer_called": false})));
}

/// NITimerDurationBoundaryTest: while the timer waits there is one user task; after it fires
/// there are two; completing both completes the workflow with both answers in the data.
#[test]
fn non_interrupting_timer_on_a_subprocess_adds_a_task() {
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/timer-date-start.bpmn", "date_timer");
    let mut state = start_process(&m, "date_timer", json!({}));
    assert_eq!(waiting(&state), ["Event_0eb0w95"]);
    fire_timer(&m, &mut state, "Event_0eb0w95");
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
}
