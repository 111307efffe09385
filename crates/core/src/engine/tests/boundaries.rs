//! Boundary events, errors, signals, subprocesses and terminate end events.

use super::*;

fn user_task_with_boundaries() -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>
            <bpmn:boundaryEvent id="b_msg" attachedToRef="u"><bpmn:messageEventDefinition messageRef="m_reply">
              <bpmn:extensionElements><spiffworkflow:messageVariable>why</spiffworkflow:messageVariable></bpmn:extensionElements>
            </bpmn:messageEventDefinition></bpmn:boundaryEvent>
            <bpmn:boundaryEvent id="b_sig" attachedToRef="u"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:boundaryEvent>
            {}<bpmn:endEvent id="cancelled"/><bpmn:endEvent id="signalled"/>{}{}"#,
            chain(&["s", "u", "e"]),
            script("after_msg", "handled = True"),
            chain(&["b_msg", "after_msg", "cancelled"]) + &flow("fs", "b_sig", "signalled"),
        ),
        &format!(r#"{CORRELATION}<bpmn:signal id="sig" name="STOP"/>"#),
    )
}

#[test]
fn message_boundary_on_user_task_fires_and_cancels_the_task() {
    let m = user_task_with_boundaries();
    let (mut st, effects) = start_with(&m, json!({"customer": "c1"}));
    let b = task(&st, "b_msg").clone();
    assert_eq!(
        (b.state, b.scope, b.element_type.as_str()),
        (TaskState::Waiting, None, "boundaryEvent")
    );
    assert_eq!(
        effects,
        vec![
            Effect::WaitForMessage {
                task_guid: b.guid,
                name: "reply".into(),
                expected: BTreeMap::new()
            },
            Effect::WaitForSignal {
                task_guid: task(&st, "b_sig").guid,
                name: "STOP".into()
            }
        ]
    );
    assert_eq!(task(&st, "b_sig").state, TaskState::Waiting);
    assert_eq!(st.status, InstanceStatus::UserInputRequired);

    let effects = step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: b.guid,
            name: "reply".into(),
            payload: json!({"r": 1}),
        },
    )
    .unwrap();
    let b_sig = task(&st, "b_sig").guid;
    assert_eq!(effects, vec![Effect::CancelSignalWait { task_guid: b_sig }]);
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(task(&st, "b_sig").state, TaskState::Cancelled);
    assert_eq!(task(&st, "b_msg").state, TaskState::Completed);
    assert_eq!(st.data["why"], json!({"r": 1}));
    assert_eq!(st.data["handled"], json!(true));
    assert_eq!(count(&st, "cancelled"), 1);
    assert_eq!(count(&st, "e"), 0);
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.boundaries.is_empty());

    // the user task cannot be completed any more
    let u = task(&st, "u").guid;
    assert!(step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u,
            data: Map::new()
        }
    )
    .is_err());
}

#[test]
fn completing_the_task_cancels_its_boundaries_and_signals_fire_them() {
    let m = user_task_with_boundaries();
    let (mut st, _) = start_with(&m, json!({}));
    let (u, b) = (task(&st, "u").guid, task(&st, "b_msg").guid);
    let b_sig = task(&st, "b_sig").guid;
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(
        effects,
        vec![
            Effect::CancelMessageWait { task_guid: b },
            Effect::CancelSignalWait { task_guid: b_sig }
        ]
    );
    assert_eq!(task(&st, "b_sig").state, TaskState::Cancelled);
    assert_eq!(count(&st, "e"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);

    let (mut st, _) = start_with(&m, json!({}));
    let b = task(&st, "b_msg").guid;
    assert!(step(
        &m,
        &mut st,
        Event::Signal {
            name: "OTHER".into(),
            payload: Value::Null,
        }
    )
    .unwrap()
    .is_empty());
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    let effects = step(
        &m,
        &mut st,
        Event::Signal {
            name: "STOP".into(),
            payload: Value::Null,
        },
    )
    .unwrap();
    let b_sig = task(&st, "b_sig").guid;
    assert_eq!(
        effects,
        vec![
            Effect::CancelSignalWait { task_guid: b_sig },
            Effect::CancelMessageWait { task_guid: b }
        ]
    );
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(count(&st, "signalled"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

fn subprocess_model(inner_end: &str, boundary: bool) -> ModelSpec {
    let b = if boundary {
        format!(
            r#"<bpmn:boundaryEvent id="b_err" attachedToRef="sub"><bpmn:errorEventDefinition errorRef="err"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="caught"/>{}"#,
            flow("fb", "b_err", "caught")
        )
    } else {
        String::new()
    };
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:subProcess id="sub">
              <bpmn:startEvent id="ss"/><bpmn:parallelGateway id="fork"/>
              <bpmn:receiveTask id="wait" messageRef="m_reply"/>
              {}
              {inner_end}
              {}{}{}
            </bpmn:subProcess>
            {b}{}<bpmn:endEvent id="e"/>{}"#,
            script("work", "inner = 1"),
            flow("i1", "ss", "fork"),
            flow("i2", "fork", "wait"),
            flow("i3", "fork", "work") + &flow("i4", "work", "inner_end"),
            script("after", "after = True"),
            chain(&["s", "sub", "after", "e"]),
        ),
        &format!(r#"{CORRELATION}<bpmn:error id="err" name="Out of stock" errorCode="E_STOCK"/>"#),
    )
}

#[test]
fn error_end_event_in_subprocess_is_caught_by_its_boundary() {
    let m = subprocess_model(
        r#"<bpmn:endEvent id="inner_end"><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>"#,
        true,
    );
    let (st, effects) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    let wait = task(&st, "wait");
    assert_eq!(wait.state, TaskState::Cancelled);
    let sub = task(&st, "sub").guid;
    assert_eq!(wait.scope, Some(sub));
    assert_eq!(task(&st, "work").scope, Some(sub));
    assert_eq!(task(&st, "sub").state, TaskState::Cancelled);
    assert_eq!(
        effects,
        vec![
            Effect::WaitForMessage {
                task_guid: wait.guid,
                name: "reply".into(),
                expected: BTreeMap::new()
            },
            Effect::CancelMessageWait {
                task_guid: wait.guid
            }
        ]
    );
    assert_eq!(
        st.data["error"],
        json!({"error_code": "E_STOCK", "message": "Out of stock"})
    );
    assert_eq!(task(&st, "b_err").scope, None);
    assert_eq!(count(&st, "caught"), 1);
    assert_eq!(count(&st, "after"), 0);

    // without a boundary: instance error with the code
    let m = subprocess_model(
        r#"<bpmn:endEvent id="inner_end"><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>"#,
        false,
    );
    let (st, effects) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    assert!(
        effects.is_empty(),
        "effects of a failed step are dropped: {effects:?}"
    );
    let err = st.error.unwrap();
    assert_eq!(
        (err.element_id.as_str(), err.error_code.as_deref()),
        ("inner_end", Some("E_STOCK"))
    );
}

#[test]
fn subprocess_completes_when_all_its_paths_end() {
    let m = subprocess_model(r#"<bpmn:endEvent id="inner_end"/>"#, true);
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Waiting);
    assert_eq!(task(&st, "sub").state, TaskState::Started);
    assert_eq!(count(&st, "after"), 0);
    let wait = task(&st, "wait").guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: wait,
            name: "reply".into(),
            payload: json!({}),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(task(&st, "sub").state, TaskState::Completed);
    assert_eq!(st.data["after"], json!(true));
    assert_eq!(count(&st, "caught"), 0);
}

#[test]
fn terminate_end_event_cancels_everything_and_completes() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/>
            <bpmn:userTask id="u"/><bpmn:receiveTask id="r" messageRef="m_reply"/>
            {SERVICE}
            <bpmn:userTask id="go"/>
            <bpmn:endEvent id="t"><bpmn:terminateEventDefinition/></bpmn:endEvent>
            {}{}{}{}{}"#,
            flow("f0", "s", "fork"),
            flow("f1", "fork", "u"),
            flow("f2", "fork", "r"),
            flow("f3", "fork", "svc"),
            flow("f4", "fork", "go") + &flow("f5", "go", "t"),
        ),
        CORRELATION,
    );
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    let (r, svc, go) = (
        task(&st, "r").guid,
        task(&st, "svc").guid,
        task(&st, "go").guid,
    );
    st.prune_finished();
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: go,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(effects.contains(&Effect::CancelMessageWait { task_guid: r }));
    assert!(effects.contains(&Effect::CancelServiceCall { task_guid: svc }));
    assert_eq!(effects.len(), 2);
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(task(&st, "t").state, TaskState::Completed);
}

#[test]
fn terminate_inside_a_subprocess_ends_only_the_subprocess_and_message_end_sends() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:subProcess id="sub"><bpmn:startEvent id="ss"/><bpmn:parallelGateway id="fork"/>
              <bpmn:userTask id="u"/><bpmn:endEvent id="t"><bpmn:terminateEventDefinition/></bpmn:endEvent>
              {}{}{}</bpmn:subProcess>
            <bpmn:intermediateThrowEvent id="throw"><bpmn:messageEventDefinition messageRef="m_req">
              <bpmn:extensionElements><spiffworkflow:messagePayload>{{"order_id": 1, "tag": "t"}}</spiffworkflow:messagePayload></bpmn:extensionElements>
            </bpmn:messageEventDefinition></bpmn:intermediateThrowEvent>
            <bpmn:endEvent id="e"><bpmn:messageEventDefinition messageRef="m_reply"/></bpmn:endEvent>{}"#,
            flow("i0", "ss", "fork"),
            flow("i1", "fork", "u"),
            flow("i2", "fork", "t"),
            chain(&["s", "sub", "throw", "e"]),
        ),
        CORRELATION,
    );
    let (st, effects) = start_with(&m, json!({"k": 1}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(task(&st, "u").state, TaskState::Cancelled);
    assert_eq!(task(&st, "sub").state, TaskState::Completed);
    let names: Vec<(&str, &Value)> = effects
        .iter()
        .map(|e| match e {
            Effect::SendMessage { name, payload, .. } => (name.as_str(), payload),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("request", &json!({"order_id": 1, "tag": "t"})),
            ("reply", &json!({"k": 1}))
        ]
    );
    assert_eq!(task(&st, "e").element_type, "endEvent");
}
