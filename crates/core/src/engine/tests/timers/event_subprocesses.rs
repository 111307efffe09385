//! Event subprocesses: message, error, escalation and timer starts, interrupting or beside
//! the flow, and listeners that end with their process.

use super::*;

fn event_subprocess(id: &str, start: &str, interrupting: bool, body: &str) -> String {
    format!(
        r#"<bpmn:subProcess id="{id}" triggeredByEvent="true">
          <bpmn:startEvent id="{id}_start" isInterrupting="{interrupting}">{start}</bpmn:startEvent>
          {body}<bpmn:endEvent id="{id}_end"/>{}
        </bpmn:subProcess>"#,
        chain(&[
            &format!("{id}_start"),
            &format!("{id}_work"),
            &format!("{id}_end")
        ])
    )
}

/// A message cancels the order: the interrupting event subprocess ends the main flow (its
/// user task) and runs; the instance completes when it does.
#[test]
fn an_interrupting_message_event_subprocess_ends_the_main_flow() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}{}"#,
            chain(&["s", "u", "e"]),
            event_subprocess(
                "cancel",
                r#"<bpmn:messageEventDefinition messageRef="m_req"><bpmn:extensionElements><spiffworkflow:messageVariable>why</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition>"#,
                true,
                &script("cancel_work", "cancelled = why['reason']"),
            ),
        ),
        CORRELATION,
    );
    let (mut st, effects) = start_with(&m, json!({}));
    let listener = task(&st, "cancel_start").guid;
    assert!(effects.iter().any(|e| matches!(e, Effect::WaitForMessage { task_guid, name, .. } if *task_guid == listener && name == "request")));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    deliver_guid(
        &m,
        &mut st,
        listener,
        "request",
        json!({"reason": "changed my mind"}),
    )
    .unwrap();
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(st.data["cancelled"], json!("changed my mind"));
    assert_eq!(count(&st, "e"), 0);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// Without its trigger the listener does not hold the process open: the main flow completes
/// the instance and the listener's wait is cancelled.
#[test]
fn an_event_subprocess_listener_ends_with_its_process() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}{}"#,
            chain(&["s", "u", "e"]),
            event_subprocess(
                "nudge",
                r#"<bpmn:signalEventDefinition signalRef="sig"/>"#,
                false,
                &script("nudge_work", "nudged = True"),
            ),
        ),
        r#"<bpmn:signal id="sig" name="NUDGE"/>"#,
    );
    let (mut st, _) = start_with(&m, json!({}));
    let listener = task(&st, "nudge_start").guid;
    // a non-interrupting signal: the task stays, the listener waits again
    step(
        &m,
        &mut st,
        Event::Signal {
            name: "NUDGE".into(),
            payload: Value::Null,
        },
    )
    .unwrap();
    assert_eq!(st.data["nudged"], json!(true));
    assert_eq!(task(&st, "u").state, TaskState::Waiting);
    let again = task(&st, "nudge_start").guid;
    assert_ne!(again, listener);
    assert_eq!(task(&st, "nudge_start").state, TaskState::Waiting);

    let u = task(&st, "u").guid;
    let effects = complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(effects, vec![Effect::CancelSignalWait { task_guid: again }]);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// A failed service call inside a subprocess is caught by the subprocess's error event
/// subprocess (before any boundary further out), with the error in its variable.
#[test]
fn an_error_event_subprocess_catches_a_failure_in_its_subprocess() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:subProcess id="sub"><bpmn:startEvent id="ss"/>{SERVICE}<bpmn:endEvent id="se"/>{}{}</bpmn:subProcess>
            <bpmn:boundaryEvent id="outer" attachedToRef="sub"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>
            <bpmn:endEvent id="e"/><bpmn:endEvent id="outer_end"/>{}{}"#,
            chain(&["ss", "svc", "se"]),
            event_subprocess(
                "on_error",
                r#"<bpmn:errorEventDefinition errorRef="err404"/>"#,
                true,
                &script("on_error_work", "handled = error['error_code']"),
            ),
            chain(&["s", "sub", "e"]),
            chain(&["outer", "outer_end"]),
        ),
        r#"<bpmn:error id="err404" errorCode="http_404"/>"#,
    );
    let (mut st, _) = start_with(&m, json!({"base": "http://x", "order_id": 1, "token": "t"}));
    let svc = task(&st, "svc").guid;
    step(
        &m,
        &mut st,
        Event::ServiceFailed {
            task_guid: svc,
            error_code: "http_404".into(),
            message: "not found".into(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["handled"], json!("http_404"));
    assert_eq!(count(&st, "outer_end"), 0);
    assert_eq!(
        count(&st, "e"),
        1,
        "the subprocess completed after its event subprocess"
    );
}

/// An escalation thrown in the main flow reaches a non-interrupting escalation event
/// subprocess; the main flow goes on.
#[test]
fn an_escalation_event_subprocess_runs_beside_the_flow() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:intermediateThrowEvent>
            {}<bpmn:endEvent id="e"/>{}{}"#,
            script("after", "went_on = True"),
            chain(&["s", "raise", "after", "e"]),
            event_subprocess(
                "escalated",
                r#"<bpmn:escalationEventDefinition escalationRef="esc"/>"#,
                false,
                &script("escalated_work", "told_manager = True"),
            ),
        ),
        r#"<bpmn:escalation id="esc" escalationCode="late"/>"#,
    );
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["told_manager"], json!(true));
    assert_eq!(st.data["went_on"], json!(true));
}

/// A timer event subprocess (non-interrupting) fires while the process waits.
#[test]
fn a_timer_event_subprocess_fires_while_the_process_waits() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}{}"#,
        chain(&["s", "u", "e"]),
        event_subprocess(
            "reminder",
            &timer_def("timeDuration", "\"PT1H\""),
            false,
            &script("reminder_work", "reminded = True"),
        ),
    ));
    let (mut st, effects) = start_with(&m, json!({}));
    assert_eq!(started_timers(&effects)[0].2, now() + Duration::hours(1));
    fire(&m, &mut st, "reminder_start");
    assert_eq!(st.data["reminded"], json!(true));
    assert_eq!(task(&st, "u").state, TaskState::Waiting);
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
}

/// An interrupting event subprocess ends everything else in its process, a non-interrupting
/// event subprocess under way included, with the tasks inside it: nothing is left waiting in
/// a process that has moved on (SpiffWorkflow cancels the whole subtree).
#[test]
fn an_interrupting_event_subprocess_ends_one_under_way_with_its_tasks() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}{}{}"#,
            chain(&["s", "u", "e"]),
            event_subprocess(
                "side",
                r#"<bpmn:signalEventDefinition signalRef="note"/>"#,
                false,
                r#"<bpmn:userTask id="side_work"/>"#,
            ),
            event_subprocess(
                "stop",
                r#"<bpmn:signalEventDefinition signalRef="halt"/>"#,
                true,
                &script("stop_work", "stopped = True"),
            ),
        ),
        r#"<bpmn:signal id="note" name="NOTE"/><bpmn:signal id="halt" name="HALT"/>"#,
    );
    let (mut st, _) = start_with(&m, json!({}));
    let signal = |name: &str| Event::Signal {
        name: name.into(),
        payload: Value::Null,
    };
    step(&m, &mut st, signal("NOTE")).unwrap();
    assert_eq!(task(&st, "side_work").state, TaskState::Waiting);
    step(&m, &mut st, signal("HALT")).unwrap();
    assert_eq!(st.data["stopped"], json!(true));
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(task(&st, "side_work").state, TaskState::Cancelled);
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.tasks);
}
