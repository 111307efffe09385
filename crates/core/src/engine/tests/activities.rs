//! User, manual and service tasks: waiting, completion, connector results and failures.

use super::*;

#[test]
fn user_task_waits_and_completes_and_caller_mistakes_leave_state_untouched() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u" name="Approve"/><bpmn:manualTask id="mt"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "u", "mt", "e"])
    ));
    let (mut st, effects) = start_with(&m, json!({"a": 1}));
    assert!(effects.is_empty());
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    let u = task(&st, "u").clone();
    assert_eq!(
        (u.state, u.name.as_deref(), u.element_type.as_str()),
        (TaskState::Waiting, Some("Approve"), "userTask")
    );
    assert_eq!(st.live_tasks().count(), 1);

    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u.guid,
            data: map(json!({"ok": true, "a": 2})),
        },
    )
    .unwrap();
    assert_eq!(st.data, map(json!({"a": 2, "ok": true})));
    assert_eq!(task(&st, "u").state, TaskState::Completed);
    assert!(task(&st, "u").dirty);
    assert!(!task(&st, "s").dirty, "dirty is reset at every step");
    assert_eq!(st.status, InstanceStatus::UserInputRequired);

    // second completion of the same task: NotWaiting, state unchanged
    let before = snapshot(&st);
    let e = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u.guid,
            data: Map::new(),
        },
    )
    .unwrap_err();
    assert_eq!(e, EngineError::NotWaiting { task_guid: u.guid });
    assert_eq!(snapshot(&st), before);
    let ghost = Uuid::new_v4();
    let e = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: ghost,
            data: Map::new(),
        },
    )
    .unwrap_err();
    assert_eq!(e, EngineError::UnknownTask { task_guid: ghost });
    // a message for a user task is a caller mistake too
    let mt = task(&st, "mt").guid;
    let e = step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: mt,
            name: "x".into(),
            payload: json!({}),
        },
    )
    .unwrap_err();
    assert_eq!(e, EngineError::NotWaiting { task_guid: mt });
    assert_eq!(snapshot(&st), before);

    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: mt,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    // a finished instance takes no more events
    assert!(matches!(
        step(
            &m,
            &mut st,
            Event::Signal {
                name: "x".into(),
                payload: Value::Null
            }
        ),
        Err(EngineError::Invalid(_))
    ));
}

#[test]
fn a_call_accepted_outside_a_step_starts_its_task_and_nothing_else() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE}<bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "svc", "e"])
    ));
    let (mut st, _) = start_with(&m, json!({"base": "http://x", "order_id": 7, "token": "t"}));
    let svc = task(&st, "svc").guid;
    let before = st.clone();
    assert!(crate::engine::accept_call(&m, &mut st, svc));
    assert_eq!(task(&st, "svc").state, TaskState::Started);
    assert!(task(&st, "svc").dirty);
    assert_eq!((&st.data, st.status), (&before.data, before.status));
    // as a repeated 202: nothing more to do
    assert!(!crate::engine::accept_call(&m, &mut st, svc));
    // a task that moved on (here: completed by its callback) is left as it is
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!(1),
        },
    )
    .unwrap();
    let after = serde_json::to_value(&st).unwrap();
    assert!(!crate::engine::accept_call(&m, &mut st, svc));
    assert!(!crate::engine::accept_call(&m, &mut st, Uuid::new_v4()));
    assert_eq!(serde_json::to_value(&st).unwrap(), after);
}

#[test]
fn service_task_call_accept_and_succeed() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE}<bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "svc", "e"])
    ));
    let (mut st, effects) =
        start_with(&m, json!({"base": "http://x", "order_id": 7, "token": "t"}));
    let svc = task(&st, "svc").guid;
    assert_eq!(effects, vec![Effect::CallService { task_guid: svc }]);
    assert_eq!(task(&st, "svc").state, TaskState::Ready);
    assert_eq!(st.status, InstanceStatus::Waiting);

    let call = service_call(&m, &st, svc).unwrap();
    assert_eq!(call.operator_id, "http/GetRequest");
    assert_eq!(
        call.params,
        map(json!({"url": "http://x/orders/7", "timeout": 5, "token": "t"}))
    );
    assert_eq!(call.result_variable.as_deref(), Some("resp"));
    assert_eq!((call.retries, call.backoff_base), (3, 2.0));

    // a required parameter that is None
    let mut none_token = st.clone();
    none_token.data.insert("token".into(), Value::Null);
    let e = service_call(&m, &none_token, svc).unwrap_err();
    assert_eq!(e.element_id, "svc");
    assert!(e.message.contains("'token'"), "{e}");
    // a parameter whose expression fails
    let mut no_base = st.clone();
    no_base.data.remove("base");
    let e = service_call(&m, &no_base, svc).unwrap_err();
    assert!(
        e.message.contains("NameError") && e.message.contains("'url'"),
        "{e}"
    );
    // fail() puts the instance in error and cancels the call
    let effects = fail(&m, &mut no_base, Some(svc), e);
    assert_eq!(no_base.status, InstanceStatus::Error);
    assert_eq!(task(&no_base, "svc").state, TaskState::Error);
    assert!(
        effects.is_empty(),
        "the failed task's own call is not cancelled: {effects:?}"
    );

    step(&m, &mut st, Event::ServiceAccepted { task_guid: svc }).unwrap();
    assert_eq!(task(&st, "svc").state, TaskState::Started);
    assert_eq!(st.status, InstanceStatus::Waiting);
    // accepted twice: no-op
    assert_eq!(
        step(&m, &mut st, Event::ServiceAccepted { task_guid: svc }).unwrap(),
        vec![]
    );
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!({"body": 1}),
        },
    )
    .unwrap();
    assert_eq!(st.data["resp"], json!({"body": 1}));
    assert_eq!(st.status, InstanceStatus::Complete);
    let e = step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!(1),
        },
    );
    assert!(e.is_err());
}

#[test]
fn service_success_straight_from_ready() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE}{}"#,
        chain(&["s", "svc"])
    ));
    let (mut st, _) = start_with(&m, json!({}));
    let svc = task(&st, "svc").guid;
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!(2),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["resp"].clone()),
        (InstanceStatus::Complete, json!(2))
    );
}

/// SpiffWorkflow's rule (spiff ServiceTask): an operator without `resultVariable` stores the
/// result in `spiff__<task id, "-" as "_">_result` (found by the differential test:
/// `service_task.bpmn` ended without the result here).
#[test]
fn service_result_without_a_variable_goes_where_spiffworkflow_puts_it() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="call-it"><bpmn:extensionElements>
          <spiffworkflow:serviceTaskOperator id="http/GetRequest"/></bpmn:extensionElements>
        </bpmn:serviceTask>{}"#,
        chain(&["s", "call-it"])
    ));
    let (mut st, _) = start_with(&m, json!({}));
    let call = task(&st, "call-it").guid;
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: call,
            result: json!({"body": 3}),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["spiff__call_it_result"].clone()),
        (InstanceStatus::Complete, json!({"body": 3}))
    );
}

fn service_with_boundaries() -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>{SERVICE}<bpmn:endEvent id="e"/>
            <bpmn:boundaryEvent id="b_e1" attachedToRef="svc"><bpmn:errorEventDefinition errorRef="err1"/></bpmn:boundaryEvent>
            <bpmn:boundaryEvent id="b_any" attachedToRef="svc"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>
            <bpmn:boundaryEvent id="b_msg" attachedToRef="svc"><bpmn:messageEventDefinition messageRef="m_cancel"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="e1"/><bpmn:endEvent id="e_any"/><bpmn:endEvent id="e_msg"/>
            {}{}{}{}"#,
            chain(&["s", "svc", "e"]),
            flow("fe1", "b_e1", "e1"),
            flow("fany", "b_any", "e_any"),
            flow("fmsg", "b_msg", "e_msg"),
        ),
        r#"<bpmn:error id="err1" errorCode="E1"><bpmn:extensionElements><spiffworkflow:variableName>failure</spiffworkflow:variableName></bpmn:extensionElements></bpmn:error>
           <bpmn:message id="m_cancel" name="cancel order"/>"#,
    )
}

#[test]
fn service_failure_caught_by_matching_code_then_catch_all() {
    let m = service_with_boundaries();
    for (code, boundary, end, var) in [
        ("E1", "b_e1", "e1", "failure"),
        ("E2", "b_any", "e_any", "error"),
    ] {
        let (mut st, effects) = start_with(&m, json!({}));
        let svc = task(&st, "svc").guid;
        let b_msg = task(&st, "b_msg").guid;
        assert_eq!(
            effects,
            vec![
                Effect::CallService { task_guid: svc },
                Effect::WaitForMessage {
                    task_guid: b_msg,
                    name: "cancel order".into(),
                    expected: BTreeMap::new()
                }
            ]
        );
        step(&m, &mut st, Event::ServiceAccepted { task_guid: svc }).unwrap();
        let effects = step(
            &m,
            &mut st,
            Event::ServiceFailed {
                task_guid: svc,
                error_code: code.into(),
                message: "boom".into(),
            },
        )
        .unwrap();
        assert_eq!(
            effects,
            vec![Effect::CancelMessageWait { task_guid: b_msg }],
            "{code}"
        );
        assert_eq!(
            st.status,
            InstanceStatus::Complete,
            "{code}: {:?}",
            st.error
        );
        assert_eq!(
            st.data[var],
            json!({"error_code": code, "message": "boom"}),
            "{code}"
        );
        assert_eq!(task(&st, "svc").state, TaskState::Error);
        assert_eq!(task(&st, boundary).state, TaskState::Completed);
        assert_eq!(task(&st, "b_msg").state, TaskState::Cancelled);
        assert_eq!(count(&st, end), 1);
        assert_eq!(count(&st, "e"), 0);
    }
}

#[test]
fn uncaught_service_failure_is_an_instance_error_with_the_code() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE}{}"#,
        chain(&["s", "svc"])
    ));
    let (mut st, _) = start_with(&m, json!({}));
    let svc = task(&st, "svc").guid;
    let effects = step(
        &m,
        &mut st,
        Event::ServiceFailed {
            task_guid: svc,
            error_code: "http_404".into(),
            message: "not found".into(),
        },
    )
    .unwrap();
    assert!(effects.is_empty());
    assert_eq!(st.status, InstanceStatus::Error);
    assert_eq!(
        st.error,
        Some(InstanceError {
            element_id: "svc".into(),
            message: "not found".into(),
            error_code: Some("http_404".into()),
            file: Some("t.bpmn".into()),
        })
    );
    assert_eq!(task(&st, "svc").state, TaskState::Error);
    assert_eq!(
        task(&st, "svc").data,
        Some(json!({"error_code": "http_404", "message": "not found"}))
    );
}
