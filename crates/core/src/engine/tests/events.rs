//! Message events: sending with correlation values, waiting with expected values, receiving.

use super::*;

fn send_receive_model(catch_ext: &str) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:sendTask id="send" messageRef="m_req"><bpmn:extensionElements>
              <spiffworkflow:messagePayload>{{"order_id": order_id, "tag": "t1", "n": n * 2}}</spiffworkflow:messagePayload>
            </bpmn:extensionElements></bpmn:sendTask>
            <bpmn:intermediateCatchEvent id="catch"><bpmn:messageEventDefinition messageRef="m_reply">
              <bpmn:extensionElements>{catch_ext}</bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
            <bpmn:endEvent id="e"/>{}"#,
            chain(&["s", "send", "catch", "e"])
        ),
        CORRELATION,
    )
}

#[test]
fn send_task_emits_payload_and_correlation_values_and_establishes_them() {
    let m = send_receive_model("");
    let (st, effects) = start_with(&m, json!({"order_id": 7, "n": 2}));
    let send = task(&st, "send").guid;
    assert_eq!(
        effects[0],
        Effect::SendMessage {
            task_guid: send,
            name: "request".into(),
            payload: json!({"order_id": 7, "tag": "t1", "n": 4}),
            correlation_values: [
                ("only_request".to_string(), json!("t1")),
                ("order_id".to_string(), json!(7))
            ]
            .into(),
        }
    );
    assert_eq!(
        st.correlations,
        [
            ("only_request".to_string(), json!("t1")),
            ("order_id".to_string(), json!(7))
        ]
        .into()
    );
    assert_eq!(task(&st, "send").state, TaskState::Completed);

    // without messagePayload the whole task data is sent
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:sendTask id="send" messageRef="m_req"/>{}"#,
            chain(&["s", "send"])
        ),
        CORRELATION,
    );
    let (st, effects) = start_with(&m, json!({"order_id": 8, "x": [1]}));
    let Effect::SendMessage {
        payload,
        correlation_values,
        ..
    } = &effects[0]
    else {
        panic!()
    };
    assert_eq!(payload, &json!({"order_id": 8, "x": [1]}));
    assert_eq!(
        correlation_values,
        &[("order_id".to_string(), json!(8))].into()
    );
    assert_eq!(st.status, InstanceStatus::Complete);
}

#[test]
fn catch_event_waits_with_expected_values_and_delivery_sets_the_variable() {
    let m = send_receive_model(
        r#"<spiffworkflow:messageVariable>answer</spiffworkflow:messageVariable>
           <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>customer</spiffworkflow:propertyId>
             <spiffworkflow:expression>cust.upper()</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
           <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>only_request</spiffworkflow:propertyId>
             <spiffworkflow:expression>"ignored"</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>"#,
    );
    let (mut st, effects) = start_with(&m, json!({"order_id": 7, "n": 1, "cust": "acme"}));
    let catch = task(&st, "catch").guid;
    assert_eq!(effects.len(), 2);
    // established order_id (from the send) + processVariableCorrelation; only properties the
    // reply message can carry
    assert_eq!(
        effects[1],
        Effect::WaitForMessage {
            task_guid: catch,
            name: "reply".into(),
            expected: [
                ("customer".to_string(), json!("ACME")),
                ("order_id".to_string(), json!(7))
            ]
            .into(),
        }
    );
    assert_eq!(task(&st, "catch").state, TaskState::Waiting);
    assert_eq!(st.status, InstanceStatus::Waiting);

    // wrong name: caller mistake
    let before = snapshot(&st);
    let e = step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: catch,
            name: "request".into(),
            payload: json!({}),
        },
    );
    assert!(matches!(e, Err(EngineError::Invalid(_))));
    assert_eq!(snapshot(&st), before);

    let payload = json!({"order": {"id": 7}, "customer": "ACME", "ok": true});
    let effects = step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: catch,
            name: "reply".into(),
            payload: payload.clone(),
        },
    )
    .unwrap();
    assert!(effects.is_empty());
    assert_eq!(st.data["answer"], payload);
    assert!(
        !st.data.contains_key("ok"),
        "the payload reaches data only via messageVariable"
    );
    assert_eq!(st.correlations["customer"], json!("ACME"));
    assert_eq!(st.status, InstanceStatus::Complete);
    let e = step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: catch,
            name: "reply".into(),
            payload: json!({}),
        },
    );
    assert!(e.is_err());
}

#[test]
fn receive_task_without_established_values_waits_unconstrained() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:receiveTask id="r" messageRef="m_reply"/>{}"#,
            chain(&["s", "r"])
        ),
        CORRELATION,
    );
    let (mut st, effects) = start_with(&m, json!({}));
    let r = task(&st, "r").guid;
    assert_eq!(
        effects,
        vec![Effect::WaitForMessage {
            task_guid: r,
            name: "reply".into(),
            expected: BTreeMap::new()
        }]
    );
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: r,
            name: "reply".into(),
            payload: json!({"order": {"id": 1}}),
        },
    )
    .unwrap();
    // no messageVariable: data untouched, correlation established
    assert!(st.data.is_empty());
    assert_eq!(st.correlations["order_id"], json!(1));
    assert_eq!(st.status, InstanceStatus::Complete);
}

#[test]
fn message_start_event_sets_variable_and_correlations() {
    let m = model_with(
        r#"<bpmn:startEvent id="plain"/>
           <bpmn:startEvent id="ms"><bpmn:messageEventDefinition messageRef="m_req"><bpmn:extensionElements>
             <spiffworkflow:messageVariable>incoming</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>"#,
        CORRELATION,
    );
    let (st, _) = start(&m, "P", message_start("request", json!({"order_id": 3}))).unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(st.data["incoming"], json!({"order_id": 3}));
    assert_eq!(st.correlations, [("order_id".to_string(), json!(3))].into());
    assert_eq!(st.tasks.len(), 1);
    assert_eq!(st.tasks[0].element_id, "ms");
    // plain start fires only the none start event
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.tasks.len(), 1);
    assert_eq!(st.tasks[0].element_id, "plain");
    // caller mistakes
    let bad = |e: Event| start(&m, "P", e).unwrap_err();
    assert!(matches!(
        bad(message_start("nope", json!({}))),
        EngineError::Invalid(_)
    ));
    assert!(matches!(
        bad(Event::Start {
            start_event_id: Some("ghost".into()),
            data: Map::new(),
            message: None,
            signal: None
        }),
        EngineError::Invalid(_)
    ));
    assert!(matches!(
        start(&m, "Q", start_event(json!({}))),
        Err(EngineError::Invalid(_))
    ));
}

/// As in SpiffWorkflow (a retrieval expression that raises fails the throw): a payload without
/// a correlation property's key fails the send task, naming the expression; nothing is sent.
#[test]
fn a_thrown_payload_without_a_correlation_value_fails_the_send_task() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:sendTask id="send" messageRef="m_req"><bpmn:extensionElements>
              <spiffworkflow:messagePayload>{{"order_id": order_id}}</spiffworkflow:messagePayload>
            </bpmn:extensionElements></bpmn:sendTask>{}"#,
            chain(&["s", "send"])
        ),
        CORRELATION,
    );
    // `tag` (property only_request) is missing from the payload
    let (st, effects) = start_with(&m, json!({"order_id": 1}));
    assert_eq!(st.status, InstanceStatus::Error);
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::SendMessage { .. })),
        "{effects:?}"
    );
    let error = st.error.as_ref().expect("an error");
    assert_eq!(error.element_id, "send");
    assert!(
        error.message.contains("NameError") && error.message.contains("correlation property"),
        "{error:?}"
    );
}

/// A `processVariableCorrelation` whose property the message cannot carry (`only_request` has
/// no retrieval expression for the reply) constrains nothing, but its expression is still
/// evaluated when the catch event is reached, as SpiffWorkflow does (it computes every
/// process correlation then): one that raises errs the instance at the catch event instead of
/// letting it wait. (SpiffWorkflow's receive_correlations.bpmn with its task completed with
/// `{}` raises `NameError: name 'value_1' is not defined` there.)
#[test]
fn a_process_correlation_the_message_cannot_carry_is_still_evaluated() {
    let m = send_receive_model(
        r#"<spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>only_request</spiffworkflow:propertyId>
             <spiffworkflow:expression>value_1</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>"#,
    );
    let (st, _) = start_with(&m, json!({"order_id": 7, "n": 1}));
    assert_eq!(st.status, InstanceStatus::Error);
    let error = st.error.as_ref().expect("an error");
    assert_eq!(error.element_id, "catch");
    assert!(
        error
            .message
            .contains("NameError: name 'value_1' is not defined")
            && error
                .message
                .contains("processVariableCorrelation for 'only_request'"),
        "{error}"
    );

    // with the variable there, the instance waits, expecting only what the reply carries
    let (st, effects) = start_with(&m, json!({"order_id": 7, "n": 1, "value_1": "x"}));
    assert_eq!(st.status, InstanceStatus::Waiting, "{:?}", st.error);
    assert!(
        matches!(&effects[1], Effect::WaitForMessage { expected, .. }
        if *expected == [("order_id".to_string(), json!(7))].into())
    );
}
