//! The path of a non-interrupting boundary event works on its own copy of the task data, and
//! merges back when it ends, as SpiffWorkflow's per-task data does (each outcome below is
//! what SpiffWorkflow 3.2 gives for the same model).

use super::*;

/// SpiffWorkflow's TimerDurationBoundaryOnTaskTest model (boundary_timer_on_task.bpmn), as a
/// model of our own: `timer_called = False`, a user task with a non-interrupting timer whose
/// path sets `timer_called = True` and `side = 1` (then waits at `late` when `wait_late`).
fn timer_on_task(wait_late: bool) -> ModelSpec {
    let late = if wait_late {
        format!(
            r#"<bpmn:userTask id="late"/>{}"#,
            chain(&["set_variable", "late"])
        )
    } else {
        String::new()
    };
    model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:userTask id="user_task"/><bpmn:endEvent id="e"/>
        <bpmn:boundaryEvent id="timer" attachedToRef="user_task" cancelActivity="false">
          <bpmn:timerEventDefinition><bpmn:timeDuration>"PT1S"</bpmn:timeDuration></bpmn:timerEventDefinition>
        </bpmn:boundaryEvent>{}{late}{}{}"#,
        script("set_false", "timer_called = False"),
        script("set_variable", "timer_called = True\nside = 1"),
        chain(&["s", "set_false", "user_task", "e"]),
        chain(&["timer", "set_variable"]),
    ))
}

fn fire_timer_of(m: &ModelSpec, st: &mut InstanceState) {
    let guid = task(st, "timer").guid;
    step(m, st, Event::TimerFired { task_guid: guid }).expect("the timer fires");
}

fn complete_task(m: &ModelSpec, st: &mut InstanceState, element: &str) {
    let guid = task(st, element).guid;
    complete_guid(m, st, guid, json!({}));
}

/// The boundary's path ends first, while the user task waits: the activity's path does not
/// see its writes (`timer_called` stays False for it), and ends last, so its values win;
/// what only the branch wrote (`side`) is kept. SpiffWorkflow ends with `timer_called: false`.
#[test]
fn a_boundary_path_that_ends_first_does_not_override_the_activity_path() {
    let m = timer_on_task(false);
    let (mut st, _) = start_with(&m, json!({}));
    fire_timer_of(&m, &mut st);
    assert_eq!(task(&st, "set_variable").state, TaskState::Completed);
    assert_eq!(st.data["timer_called"], json!(false));
    complete_task(&m, &mut st, "user_task");
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data, map(json!({"timer_called": false, "side": 1})));
}

/// The boundary's path ends last (it waits at `late` after the activity's path ended): its
/// values win. SpiffWorkflow: `{timer_called: true, side: 1}`; and with `late` completed
/// before the user task, `{timer_called: false, side: 1}`.
#[test]
fn the_path_that_ends_last_wins() {
    let m = timer_on_task(true);
    let (mut st, _) = start_with(&m, json!({}));
    fire_timer_of(&m, &mut st);
    // the branch's user task sees the branch's data; the instance's data is the activity's
    assert_eq!(st.data["timer_called"], json!(false));
    complete_task(&m, &mut st, "user_task");
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    complete_task(&m, &mut st, "late");
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data, map(json!({"timer_called": true, "side": 1})));

    let (mut st, _) = start_with(&m, json!({}));
    fire_timer_of(&m, &mut st);
    complete_task(&m, &mut st, "late");
    complete_task(&m, &mut st, "user_task");
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data, map(json!({"timer_called": false, "side": 1})));
}
