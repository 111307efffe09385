//! Boundary events: timers (interrupting, non-interrupting cycles and durations), a
//! non-interrupting message boundary, and escalation boundaries on a subprocess.

use super::*;

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
    assert_eq!(count(&st, "timed_out"), 1);
    let next = task(&st, "late");
    assert_eq!(next.state, TaskState::Waiting);
    assert_eq!(
        started_timers(&effects),
        vec![(next.guid, "late".to_string(), now() + Duration::minutes(20))]
    );

    let effects = fire(&m, &mut st, "late");
    assert!(started_timers(&effects).is_empty(), "the cycle is over");
    assert_eq!(count(&st, "timed_out"), 2);
    assert_eq!(task(&st, "u").state, TaskState::Waiting);
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert_eq!(st.live_tasks().count(), 1, "only the user task is left");
    // each reminder's path counted on its own copy of the data the task was reached with,
    // and the task's path ended last: SpiffWorkflow ends with reminders == 1 too
    assert!(st.data.get("reminders").is_none());
    let u = task(&st, "u").guid;
    complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(st.data["reminders"], json!(1));
}

/// NITimerDurationBoundaryTest's shape: a non-interrupting duration fires once; the task
/// stays, and both paths complete.
#[test]
fn a_non_interrupting_duration_fires_once() {
    let m = user_task_with_timer(false, "timeDuration", "\"PT0.2S\"");
    let (mut st, _) = start_with(&m, json!({}));
    fire(&m, &mut st, "late");
    assert_eq!(count(&st, "timed_out"), 1);
    assert_eq!(st.live_tasks().count(), 1);
    let u = task(&st, "u").guid;
    complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(st.data["reminders"], json!(1));
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
        assert_eq!(count(&st, "nudged"), n);
        assert_eq!(task(&st, "u").state, TaskState::Waiting);
        let rearmed = task(&st, "nudge").guid;
        assert_ne!(rearmed, nudge);
        assert!(effects.iter().any(
            |e| matches!(e, Effect::WaitForMessage { task_guid, .. } if *task_guid == rearmed)
        ));
    }
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    // each nudge's path counted on its own copy of the data (see branches.rs)
    let u = task(&st, "u").guid;
    complete_guid(&m, &mut st, u, json!({}));
    assert_eq!(st.data["nudges"], json!(1));
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
