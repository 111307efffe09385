//! Operator commands: suspend, resume, terminate, retry.

use super::*;

fn retry(m: &ModelSpec, st: &mut InstanceState) -> Result<Vec<Effect>, EngineError> {
    step(m, st, Event::Retry)
}

/// start -> fork -> (user task `u`) and (receive `r`, reply) and (timer `t`, PT1H) and (script `s`).
fn parallel_with_script(script_source: &str) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="start"/><bpmn:parallelGateway id="fork"/>
            <bpmn:userTask id="u"/><bpmn:receiveTask id="r" messageRef="m_reply"/>
            <bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
            {}{}{}{}{}{}"#,
            script("s", script_source),
            flow("f0", "start", "fork"),
            flow("f1", "fork", "u"),
            flow("f2", "fork", "r"),
            flow("f3", "fork", "t"),
            flow("f4", "fork", "s"),
        ),
        CORRELATION,
    )
}

#[test]
fn suspend_then_resume_gives_back_the_status_of_the_live_tasks() {
    let m = parallel_with_script("x = 1");
    let (mut st, _) = start_with(&m, json!({"order_id": 7}));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    suspend(&mut st).unwrap();
    assert_eq!(st.status, InstanceStatus::Suspended);
    assert!(suspend(&mut st).is_err(), "suspended twice");
    let u = task(&st, "u").guid;
    assert!(
        step(
            &m,
            &mut st,
            Event::CompleteTask {
                task_guid: u,
                data: Map::new()
            }
        )
        .is_err(),
        "a suspended instance takes no event"
    );
    resume(&m, &mut st).unwrap();
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert!(resume(&m, &mut st).is_err(), "resumed when not suspended");
}

#[test]
fn terminate_cancels_every_live_task_and_its_waits() {
    let m = parallel_with_script("x = 1");
    let (mut st, _) = start_with(&m, json!({"order_id": 7}));
    let (r, t) = (task(&st, "r").guid, task(&st, "t").guid);
    suspend(&mut st).unwrap();
    let effects = terminate(&m, &mut st).unwrap();
    assert_eq!(st.status, InstanceStatus::Terminated);
    assert!(effects.contains(&Effect::CancelMessageWait { task_guid: r }));
    assert!(effects.contains(&Effect::CancelTimer { task_guid: t }));
    assert_eq!(effects.len(), 2, "{effects:?}");
    assert_eq!(st.live_tasks().count(), 0);
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert!(terminate(&m, &mut st).is_err(), "terminated twice");
}

#[test]
fn retry_runs_the_failed_task_again_and_reopens_the_other_waits() {
    // fails while `divisor` is 0; the operator fixes the data's cause (here: the test edits
    // the data as a completed task could) and retries
    let m = parallel_with_script("x = 10 / divisor");
    let (mut st, effects) = start_with(&m, json!({"order_id": 7, "divisor": 0}));
    assert_eq!(st.status, InstanceStatus::Error, "{effects:?}");
    // what the receive waited for before the failure closed it
    let (_, waited) = start_with(&m, json!({"order_id": 7, "divisor": 1}));
    let waited = waited
        .into_iter()
        .find(|e| matches!(e, Effect::WaitForMessage { .. }))
        .expect("the receive waits");
    assert_eq!(task(&st, "s").state, TaskState::Error);
    let (r, t) = (task(&st, "r").guid, task(&st, "t").guid);

    // still failing: back in error, nothing reopened
    let again = retry(&m, &mut st).unwrap();
    assert_eq!(st.status, InstanceStatus::Error);
    assert!(again.iter().all(Effect::is_cancellation), "{again:?}");

    st.data.insert("divisor".into(), json!(2));
    let effects = retry(&m, &mut st).unwrap();
    assert_eq!(
        st.status,
        InstanceStatus::UserInputRequired,
        "{:?}",
        st.error
    );
    assert!(st.error.is_none());
    assert_eq!(st.data["x"], json!(5.0));
    assert_eq!(task(&st, "s").state, TaskState::Completed);
    let reopened = effects
        .iter()
        .find(|e| matches!(e, Effect::WaitForMessage { task_guid, .. } if *task_guid == r))
        .expect("the receive waits again");
    match (reopened, &waited) {
        (
            Effect::WaitForMessage { name, expected, .. },
            Effect::WaitForMessage {
                name: before,
                expected: expected_before,
                ..
            },
        ) => assert_eq!((name, expected), (before, expected_before)),
        _ => unreachable!(),
    }
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::StartTimer { task_guid, due, .. }
        if *task_guid == t && *due == now() + chrono::Duration::hours(1))));
    assert!(retry(&m, &mut st).is_err(), "not in error");
}

#[test]
fn retry_of_a_failed_service_task_calls_the_connector_again() {
    let m = model(&format!(
        "<bpmn:startEvent id=\"start\"/>{SERVICE}<bpmn:endEvent id=\"end\"/>{}{}",
        flow("f1", "start", "svc"),
        flow("f2", "svc", "end"),
    ));
    let (mut st, _) = start_with(&m, json!({"base": "b", "order_id": 1, "token": "t"}));
    let svc = task(&st, "svc").guid;
    step(
        &m,
        &mut st,
        Event::ServiceFailed {
            task_guid: svc,
            error_code: "connector_down".into(),
            message: "503".into(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Error);
    let effects = retry(&m, &mut st).unwrap();
    assert_eq!(effects, vec![Effect::CallService { task_guid: svc }]);
    assert_eq!(st.status, InstanceStatus::Waiting);
    assert_eq!(task(&st, "svc").state, TaskState::Ready);
}

/// As SpiffWorkflow ("Process X is not executable."): a process marked
/// `isExecutable="false"` loads but does not start.
#[test]
fn a_process_that_is_not_executable_does_not_start() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="end"/>{}"#,
        chain(&["s", "end"])
    ));
    let mut not_executable = m.clone();
    not_executable.processes.get_mut("P").unwrap().is_executable = false;
    assert!(start(&m, "P", start_event(json!({}))).is_ok());
    let refused = start(&not_executable, "P", start_event(json!({}))).unwrap_err();
    assert!(
        refused.to_string().contains("is not executable"),
        "{refused}"
    );
}
