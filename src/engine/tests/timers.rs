//! Timers, event-based gateways, non-interrupting boundaries, signals and escalations.

use super::*;
use chrono::Duration;

fn timer_def(kind: &str, expression: &str) -> String {
    format!(
        r#"<bpmn:timerEventDefinition><bpmn:{kind}>{expression}</bpmn:{kind}></bpmn:timerEventDefinition>"#
    )
}

fn timer_catch(id: &str, kind: &str, expression: &str) -> String {
    format!(
        r#"<bpmn:intermediateCatchEvent id="{id}">{}</bpmn:intermediateCatchEvent>"#,
        timer_def(kind, expression)
    )
}

fn started_timers(effects: &[Effect]) -> Vec<(Uuid, String, chrono::DateTime<chrono::Utc>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartTimer {
                task_guid,
                element_id,
                due,
            } => Some((*task_guid, element_id.clone(), *due)),
            _ => None,
        })
        .collect()
}

fn fire(m: &ModelSpec, st: &mut InstanceState, element: &str) -> Vec<Effect> {
    let guid = task(st, element).guid;
    step(m, st, Event::TimerFired { task_guid: guid }).expect("timer fired")
}

#[test]
fn a_timer_catch_waits_until_its_duration_has_passed() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        timer_catch("wait", "timeDuration", "\"PT1H\""),
        chain(&["s", "wait", "e"])
    ));
    let (mut st, effects) = start_with(&m, json!({}));
    let wait = task(&st, "wait").guid;
    assert_eq!(
        started_timers(&effects),
        vec![(wait, "wait".to_string(), now() + Duration::hours(1))]
    );
    assert_eq!(st.status, InstanceStatus::Waiting);
    assert_eq!(task(&st, "wait").state, TaskState::Waiting);

    let effects = fire(&m, &mut st, "wait");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(st.status, InstanceStatus::Complete);
    // a timer fires once: the same event again is refused
    let again = step(&m, &mut st, Event::TimerFired { task_guid: wait });
    assert!(again.is_err());
}

#[test]
fn timer_expressions_are_python_with_the_task_data() {
    for (kind, expression, due) in [
        (
            "timeDate",
            "\"2027-01-01T08:00:00+01:00\"",
            "2027-01-01T07:00:00Z",
        ),
        (
            "timeDate",
            "datetime(2027, 1, 1, 7)",
            "2027-01-01T07:00:00Z",
        ),
        (
            "timeDuration",
            "timedelta(minutes=delay)",
            "2026-11-26T09:35:00Z",
        ),
        ("timeDuration", "f\"PT{delay}M\"", "2026-11-26T09:35:00Z"),
        ("timeCycle", "\"R3/PT10M\"", "2026-11-26T09:40:00Z"),
    ] {
        let m = model(&format!(
            r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
            timer_catch("wait", kind, expression),
            chain(&["s", "wait", "e"])
        ));
        let (st, effects) = start_with(&m, json!({"delay": 5}));
        assert_eq!(
            st.status,
            InstanceStatus::Waiting,
            "{expression}: {:?}",
            st.error
        );
        let due_at: chrono::DateTime<chrono::Utc> =
            chrono::DateTime::parse_from_rfc3339(due).unwrap().into();
        assert_eq!(started_timers(&effects)[0].2, due_at, "{expression}");
    }
}

#[test]
fn a_timer_expression_of_the_wrong_kind_fails_the_instance_naming_the_element() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        timer_catch("wait", "timeDuration", "5"),
        chain(&["s", "wait", "e"])
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let error = st.error.unwrap();
    assert_eq!(error.element_id, "wait");
    assert!(
        error.message.contains("timeDuration") && error.message.contains("ISO 8601"),
        "{error}"
    );
}

fn user_task_with_timer(cancel_activity: bool, kind: &str, expression: &str) -> ModelSpec {
    model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>
        <bpmn:boundaryEvent id="late" attachedToRef="u" cancelActivity="{cancel_activity}">{}</bpmn:boundaryEvent>
        {}<bpmn:endEvent id="timed_out"/>{}{}"#,
        timer_def(kind, expression),
        script(
            "remind",
            "reminders = get_task_data_value('reminders', 0) + 1"
        ),
        chain(&["s", "u", "e"]),
        chain(&["late", "remind", "timed_out"]),
    ))
}

#[test]
fn an_interrupting_timer_boundary_cancels_its_task() {
    let m = user_task_with_timer(true, "timeDuration", "\"P3D\"");
    let (mut st, effects) = start_with(&m, json!({}));
    let late = task(&st, "late").guid;
    assert_eq!(
        started_timers(&effects),
        vec![(late, "late".to_string(), now() + Duration::days(3))]
    );
    let effects = fire(&m, &mut st, "late");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(count(&st, "timed_out"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

#[test]
fn completing_the_task_cancels_its_timer() {
    let m = user_task_with_timer(true, "timeDuration", "\"P3D\"");
    let (mut st, _) = start_with(&m, json!({}));
    let (u, late) = (task(&st, "u").guid, task(&st, "late").guid);
    let effects = complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(effects, vec![Effect::CancelTimer { task_guid: late }]);
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(step(&m, &mut st, Event::TimerFired { task_guid: late }).is_err());
}

/// A non-interrupting cycle reminds at every occurrence while the task lives: R2 fires twice.
#[test]
fn a_non_interrupting_cycle_fires_at_each_occurrence_and_leaves_the_task() {
    let m = user_task_with_timer(false, "timeCycle", "\"R2/PT10M\"");
    let (mut st, effects) = start_with(&m, json!({}));
    assert_eq!(started_timers(&effects)[0].2, now() + Duration::minutes(10));

    let effects = fire(&m, &mut st, "late");
    assert_eq!(task(&st, "u").state, TaskState::Waiting);
    assert_eq!(st.data["reminders"], json!(1));
    let next = task(&st, "late");
    assert_eq!(next.state, TaskState::Waiting);
    assert_eq!(
        started_timers(&effects),
        vec![(next.guid, "late".to_string(), now() + Duration::minutes(20))]
    );

    let effects = fire(&m, &mut st, "late");
    assert!(started_timers(&effects).is_empty(), "the cycle is over");
    assert_eq!(st.data["reminders"], json!(2));
    assert_eq!(task(&st, "u").state, TaskState::Waiting);
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert_eq!(st.live_tasks().count(), 1, "only the user task is left");
}

/// NITimerDurationBoundaryTest's shape: a non-interrupting duration fires once; the task
/// stays, and both paths complete.
#[test]
fn a_non_interrupting_duration_fires_once() {
    let m = user_task_with_timer(false, "timeDuration", "\"PT0.2S\"");
    let (mut st, _) = start_with(&m, json!({}));
    fire(&m, &mut st, "late");
    assert_eq!(st.data["reminders"], json!(1));
    assert_eq!(st.live_tasks().count(), 1);
    let u = task(&st, "u").guid;
    complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete);
}

fn race_model() -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:eventBasedGateway id="g"/>
            <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition messageRef="m_req"/></bpmn:intermediateCatchEvent>
            {}
            <bpmn:intermediateCatchEvent id="stop"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateCatchEvent>
            <bpmn:endEvent id="ok"/><bpmn:endEvent id="expired"/><bpmn:endEvent id="stopped"/>
            {}{}{}{}{}{}"#,
            timer_catch("deadline", "timeDuration", "\"P3D\""),
            flow("f0", "s", "g"),
            flow("f1", "g", "paid"),
            flow("f2", "g", "deadline"),
            flow("f3", "g", "stop"),
            chain(&["paid", "ok"]) + &chain(&["deadline", "expired"]),
            flow("f4", "stop", "stopped"),
        ),
        &format!(r#"{CORRELATION}<bpmn:signal id="sig" name="STOP"/>"#),
    )
}

#[test]
fn at_an_event_based_gateway_the_timer_wins_and_cancels_the_message_wait() {
    let m = race_model();
    let (mut st, effects) = start_with(&m, json!({}));
    let (paid, deadline, stop) = (
        task(&st, "paid").guid,
        task(&st, "deadline").guid,
        task(&st, "stop").guid,
    );
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::WaitForMessage { task_guid, .. } if *task_guid == paid)));
    assert!(effects.iter().any(|e| matches!(e, Effect::WaitForSignal { task_guid, name } if *task_guid == stop && name == "STOP")));
    assert_eq!(started_timers(&effects)[0].0, deadline);

    let effects = fire(&m, &mut st, "deadline");
    assert_eq!(
        effects,
        vec![
            Effect::CancelMessageWait { task_guid: paid },
            Effect::CancelSignalWait { task_guid: stop }
        ]
    );
    assert_eq!(task(&st, "paid").state, TaskState::Cancelled);
    assert_eq!(count(&st, "expired"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
    // the message comes too late: nothing waits for it
    let late = deliver_guid(&m, &mut st, paid, "request", json!({}));
    assert!(late.is_err());
}

#[test]
fn at_an_event_based_gateway_the_message_wins_and_cancels_the_timer() {
    let m = race_model();
    let (mut st, _) = start_with(&m, json!({}));
    let (paid, deadline) = (task(&st, "paid").guid, task(&st, "deadline").guid);
    let effects = deliver_guid(&m, &mut st, paid, "request", json!({})).unwrap();
    assert!(effects.contains(&Effect::CancelTimer {
        task_guid: deadline
    }));
    assert_eq!(count(&st, "ok"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.races.is_empty());
}

#[test]
fn a_signal_from_outside_wins_the_race() {
    let m = race_model();
    let (mut st, _) = start_with(&m, json!({}));
    let stop = task(&st, "stop").guid;
    let effects = step(
        &m,
        &mut st,
        Event::Signal {
            name: "STOP".into(),
            payload: Value::Null,
        },
    )
    .unwrap();
    assert!(effects.contains(&Effect::CancelSignalWait { task_guid: stop }));
    assert_eq!(count(&st, "stopped"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// A signal thrown inside the instance reaches its own waiting catches at once, and goes out
/// for the others.
#[test]
fn a_thrown_signal_is_caught_in_the_instance_and_broadcast() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/>
            <bpmn:intermediateCatchEvent id="catch"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateCatchEvent>
            <bpmn:intermediateThrowEvent id="throw"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateThrowEvent>
            <bpmn:endEvent id="caught"/><bpmn:endEvent id="thrown"/>
            {}{}{}{}"#,
            flow("f0", "s", "fork"),
            flow("f1", "fork", "catch"),
            flow("f2", "fork", "throw"),
            chain(&["catch", "caught"]) + &chain(&["throw", "thrown"]),
        ),
        r#"<bpmn:signal id="sig" name="GO"/>"#,
    );
    let (st, effects) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "caught"), 1);
    let throw = task(&st, "throw").guid;
    assert!(effects.contains(&Effect::ThrowSignal {
        task_guid: throw,
        name: "GO".into(),
        payload: Value::Null,
    }));
}

#[test]
fn a_non_interrupting_message_boundary_runs_its_path_and_waits_again() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>
            <bpmn:boundaryEvent id="nudge" attachedToRef="u" cancelActivity="false"><bpmn:messageEventDefinition messageRef="m_req"/></bpmn:boundaryEvent>
            {}<bpmn:endEvent id="nudged"/>{}{}"#,
            script("count", "nudges = get_task_data_value('nudges', 0) + 1"),
            chain(&["s", "u", "e"]),
            chain(&["nudge", "count", "nudged"]),
        ),
        CORRELATION,
    );
    let (mut st, _) = start_with(&m, json!({}));
    for n in 1..=2 {
        let nudge = task(&st, "nudge").guid;
        let effects = deliver_guid(&m, &mut st, nudge, "request", json!({})).unwrap();
        assert_eq!(st.data["nudges"], json!(n));
        assert_eq!(task(&st, "u").state, TaskState::Waiting);
        let rearmed = task(&st, "nudge").guid;
        assert_ne!(rearmed, nudge);
        assert!(effects.iter().any(
            |e| matches!(e, Effect::WaitForMessage { task_guid, .. } if *task_guid == rearmed)
        ));
    }
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
}

fn escalating_subprocess(cancel_activity: bool, code: &str) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:subProcess id="sub">
              <bpmn:startEvent id="ss"/>
              <bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="{code}"/></bpmn:intermediateThrowEvent>
              {}<bpmn:endEvent id="se"/>{}
            </bpmn:subProcess>
            <bpmn:boundaryEvent id="escalated" attachedToRef="sub" cancelActivity="{cancel_activity}"><bpmn:escalationEventDefinition escalationRef="esc_big"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="e"/><bpmn:endEvent id="handled"/>{}{}"#,
            script("after", "went_on = True"),
            chain(&["ss", "raise", "after", "se"]),
            chain(&["s", "sub", "e"]),
            chain(&["escalated", "handled"]),
        ),
        r#"<bpmn:escalation id="esc_big" name="Big" escalationCode="big"/><bpmn:escalation id="esc_small" escalationCode="small"/>"#,
    )
}

#[test]
fn an_interrupting_escalation_boundary_ends_the_subprocess() {
    let (st, _) = start_with(&escalating_subprocess(true, "esc_big"), json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "handled"), 1);
    assert_eq!(count(&st, "e"), 0);
    assert_eq!(task(&st, "sub").state, TaskState::Cancelled);
    assert!(!st.data.contains_key("went_on"));
}

#[test]
fn a_non_interrupting_escalation_boundary_lets_the_subprocess_go_on() {
    let (st, _) = start_with(&escalating_subprocess(false, "esc_big"), json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!((count(&st, "handled"), count(&st, "e")), (1, 1));
    assert_eq!(st.data["went_on"], json!(true));
}

#[test]
fn an_uncaught_escalation_does_not_fail_the_instance() {
    let (st, _) = start_with(&escalating_subprocess(true, "esc_small"), json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!((count(&st, "handled"), count(&st, "e")), (0, 1));
}

/// ConditionalEventTest.testIntermediateEvent's shape (with a user task setting the flag,
/// where SpiffWorkflow's test sets it by hand): the catch waits until the flag holds.
#[test]
fn a_conditional_catch_waits_until_its_condition_holds() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:userTask id="a"/>
        <bpmn:intermediateCatchEvent id="when_a"><bpmn:conditionalEventDefinition><bpmn:condition>task_a_done</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>
        <bpmn:parallelGateway id="join"/><bpmn:endEvent id="e"/>{}{}{}{}{}"#,
        flow("f0", "s", "fork"),
        flow("f1", "fork", "a"),
        flow("f2", "fork", "when_a"),
        flow("f3", "a", "join") + &flow("f4", "when_a", "join"),
        flow("f5", "join", "e"),
    ));
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(task(&st, "when_a").state, TaskState::Waiting);
    let a = task(&st, "a").guid;
    complete_guid(&m, &mut st, a, json!({"task_a_done": true}));
    assert_eq!(task(&st, "when_a").state, TaskState::Completed);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// ConditionalEventTest.testBoundaryEvent's shape: the boundary on D fires when C's data makes
/// its condition true, and D is cancelled.
#[test]
fn a_conditional_boundary_interrupts_when_its_condition_holds() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:userTask id="c"/><bpmn:userTask id="d"/>
        <bpmn:boundaryEvent id="when_c" attachedToRef="d"><bpmn:conditionalEventDefinition><bpmn:condition>task_c_done</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:boundaryEvent>
        <bpmn:endEvent id="e_c"/><bpmn:endEvent id="e_d"/><bpmn:endEvent id="e_b"/>{}{}{}{}"#,
        flow("f0", "s", "fork"),
        flow("f1", "fork", "c") + &flow("f2", "fork", "d"),
        chain(&["c", "e_c"]) + &chain(&["d", "e_d"]),
        chain(&["when_c", "e_b"]),
    ));
    let (mut st, _) = start_with(&m, json!({"task_c_done": false}));
    assert_eq!(task(&st, "when_c").state, TaskState::Waiting);
    let c = task(&st, "c").guid;
    complete_guid(&m, &mut st, c, json!({"task_c_done": true}));
    assert_eq!(task(&st, "d").state, TaskState::Cancelled);
    assert_eq!(count(&st, "e_b"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

#[test]
fn a_link_throw_goes_on_at_its_catch() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:intermediateThrowEvent id="go"><bpmn:linkEventDefinition name="page2"/></bpmn:intermediateThrowEvent>
        <bpmn:intermediateCatchEvent id="landed"><bpmn:linkEventDefinition name="page2"/></bpmn:intermediateCatchEvent>
        {}<bpmn:endEvent id="e"/>{}{}"#,
        script("after", "arrived = True"),
        chain(&["s", "go"]),
        chain(&["landed", "after", "e"]),
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["arrived"], json!(true));
}

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

/// Times no timer can wait for, and endless cycles under a second, are the model's error.
#[test]
fn timers_out_of_range_fail_the_instance() {
    for (kind, expression) in [
        ("timeDuration", "\"P99999999Y\""),
        ("timeDuration", "\"P9000Y\""),
        (
            "timeDuration",
            "{'__type__': 'timedelta', 'days': 10**15, 'seconds': 0, 'microseconds': 0}",
        ),
        ("timeCycle", "\"R/P9000Y\""),
        ("timeDate", "\"10000-01-01T00:00:00Z\""),
        ("timeCycle", "\"R/PT0.5S\""),
    ] {
        let m = model(&format!(
            r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
            timer_catch("wait", kind, expression),
            chain(&["s", "wait", "e"])
        ));
        let (st, _) = start_with(&m, json!({}));
        assert_eq!(st.status, InstanceStatus::Error, "{expression}");
        assert_eq!(st.error.unwrap().element_id, "wait", "{expression}");
    }
}

fn several(parallel: bool) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:intermediateCatchEvent id="any" parallelMultiple="{parallel}">
              <bpmn:messageEventDefinition messageRef="m_req"/>
              <bpmn:messageEventDefinition messageRef="m_reply"/>
              {}
            </bpmn:intermediateCatchEvent><bpmn:endEvent id="e"/>{}"#,
            "<bpmn:timerEventDefinition><bpmn:timeDuration>\"P1D\"</bpmn:timeDuration></bpmn:timerEventDefinition>",
            chain(&["s", "any", "e"]),
        ),
        CORRELATION,
    )
}

/// A catch event with several definitions waits for all of them at once; the first to
/// happen completes it and ends the other waits.
#[test]
fn a_catch_with_several_definitions_completes_on_the_first() {
    let m = several(false);
    let (mut st, effects) = start_with(&m, json!({}));
    let any = task(&st, "any").guid;
    let waits: Vec<&str> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaitForMessage { name, .. } => Some(name.as_str()),
            Effect::StartTimer { .. } => Some("timer"),
            _ => None,
        })
        .collect();
    assert_eq!(waits, ["request", "reply", "timer"]);
    let effects = deliver_guid(&m, &mut st, any, "reply", json!({})).unwrap();
    assert_eq!(
        effects,
        vec![
            Effect::CancelMessageWait { task_guid: any },
            Effect::CancelTimer { task_guid: any }
        ]
    );
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// `parallelMultiple`: it completes only when every definition has happened.
#[test]
fn a_parallel_multiple_catch_waits_for_every_definition() {
    let m = several(true);
    let (mut st, _) = start_with(&m, json!({}));
    let any = task(&st, "any").guid;
    fire(&m, &mut st, "any");
    assert_eq!(st.status, InstanceStatus::Waiting);
    for name in ["request", "reply"] {
        deliver_guid(&m, &mut st, any, name, json!({})).unwrap();
    }
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.fired.is_empty());
}
