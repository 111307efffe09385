use super::*;
use crate::bpmn::{build_model, BPMN_NS, SPIFF_NS};
use serde_json::json;

fn model_with(body: &str, extra: &str) -> ModelSpec {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN_NS}" xmlns:spiffworkflow="{SPIFF_NS}" id="Defs">
<bpmn:process id="P" isExecutable="true">{body}</bpmn:process>{extra}
</bpmn:definitions>"#
    );
    build_model(&[("t.bpmn".to_string(), xml)], None).unwrap_or_else(|e| panic!("refused: {e}"))
}

fn model(body: &str) -> ModelSpec {
    model_with(body, "")
}

fn map(v: Value) -> Map {
    v.as_object().cloned().unwrap_or_default()
}

fn start_with(m: &ModelSpec, data: Value) -> (InstanceState, Vec<Effect>) {
    start(
        m,
        "P",
        Event::Start {
            start_event_id: None,
            data: map(data),
            message: None,
        },
    )
    .expect("start")
}

/// The most recent task for an element.
fn task<'a>(st: &'a InstanceState, element: &str) -> &'a Task {
    st.tasks
        .iter()
        .rev()
        .find(|t| t.element_id == element)
        .unwrap_or_else(|| panic!("no task for {element}"))
}

fn count(st: &InstanceState, element: &str) -> usize {
    st.tasks.iter().filter(|t| t.element_id == element).count()
}

fn snapshot(st: &InstanceState) -> Value {
    serde_json::to_value(st).unwrap()
}

/// flows "a->b" helper: `flow("f1", "a", "b")`.
fn flow(id: &str, from: &str, to: &str) -> String {
    format!(r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"/>"#)
}

fn cond_flow(id: &str, from: &str, to: &str, cond: &str) -> String {
    format!(
        r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"><bpmn:conditionExpression>{cond}</bpmn:conditionExpression></bpmn:sequenceFlow>"#
    )
}

fn script(id: &str, src: &str) -> String {
    format!(r#"<bpmn:scriptTask id="{id}"><bpmn:script>{src}</bpmn:script></bpmn:scriptTask>"#)
}

fn chain(ids: &[&str]) -> String {
    ids.windows(2)
        .map(|w| flow(&format!("{}_to_{}", w[0], w[1]), w[0], w[1]))
        .collect()
}

#[test]
fn none_start_to_end_completes() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "e"])
    ));
    let (st, effects) = start_with(&m, json!({"a": 1}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(effects.is_empty());
    assert_eq!(st.data, map(json!({"a": 1})));
    assert_eq!(st.tasks.len(), 2);
    assert!(st
        .tasks
        .iter()
        .all(|t| t.state == TaskState::Completed && t.dirty));
    assert_eq!(task(&st, "s").element_type, "startEvent");
    assert_eq!(st.live_tasks().count(), 0);
    let mut pruned = st.clone();
    pruned.prune_finished();
    assert!(pruned.tasks.is_empty());
    // serialisable round trip
    let back: InstanceState = serde_json::from_value(snapshot(&st)).unwrap();
    assert_eq!(back.status, InstanceStatus::Complete);
}

#[test]
fn script_task_runs_pre_script_script_post_script_in_order() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:scriptTask id="t"><bpmn:extensionElements>
          <spiffworkflow:preScript>log = ["pre"]</spiffworkflow:preScript>
          <spiffworkflow:postScript>log.append("post")</spiffworkflow:postScript></bpmn:extensionElements>
          <bpmn:script>log.append("script")
x = a + 1</bpmn:script></bpmn:scriptTask>
        <bpmn:task id="plain"/>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "t", "plain", "e"])
    ));
    let (st, _) = start_with(&m, json!({"a": 1}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["x"], json!(2));
    assert_eq!(st.data["log"], json!(["pre", "script", "post"]));
    assert_eq!(task(&st, "plain").state, TaskState::Completed);
}

#[test]
fn exclusive_gateway_takes_first_true_condition_then_default() {
    let body = format!(
        r#"<bpmn:startEvent id="s"/>{}
        <bpmn:exclusiveGateway id="g" default="fd"/>
        {}{}{}
        <bpmn:endEvent id="big"/><bpmn:endEvent id="also_big"/><bpmn:endEvent id="small"/><bpmn:endEvent id="other"/>"#,
        flow("f0", "s", "g"),
        cond_flow("fb", "g", "big", "x &gt; 3"),
        cond_flow("fb2", "g", "also_big", "x &gt; 2"),
        cond_flow("fs", "g", "small", "x == 1"),
    ) + &flow("fd", "g", "other");
    let m = model(&body);
    for (x, end) in [(5, "big"), (3, "also_big"), (1, "small"), (0, "other")] {
        let (st, _) = start_with(&m, json!({ "x": x }));
        assert_eq!(st.status, InstanceStatus::Complete, "x={x}: {:?}", st.error);
        let ends: Vec<&str> = st
            .tasks
            .iter()
            .filter(|t| t.element_type == "endEvent")
            .map(|t| t.element_id.as_str())
            .collect();
        assert_eq!(ends, vec![end], "x={x}");
        assert_eq!(task(&st, "g").element_type, "exclusiveGateway");
    }
    // no default, nothing true -> instance error naming the gateway
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:exclusiveGateway id="g"/>{}<bpmn:endEvent id="e"/>"#,
        flow("f0", "s", "g"),
        cond_flow("f1", "g", "e", "x == 1")
    ));
    let (st, effects) = start_with(&m, json!({"x": 2}));
    assert_eq!(st.status, InstanceStatus::Error);
    assert!(effects.is_empty());
    let err = st.error.as_ref().unwrap();
    assert_eq!(err.element_id, "g");
    assert!(err.message.contains("no outgoing flow matched"), "{err}");
    assert_eq!(task(&st, "g").state, TaskState::Error);
}

#[test]
fn conditional_flows_from_tasks_take_every_true_or_unconditioned_flow() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:task id="t"/>{}{}{}{}
        <bpmn:endEvent id="a"/><bpmn:endEvent id="b"/><bpmn:endEvent id="c"/>"#,
        flow("f0", "s", "t"),
        cond_flow("fa", "t", "a", "x"),
        cond_flow("fb", "t", "b", "not x"),
        flow("fc", "t", "c"),
    ));
    let (st, _) = start_with(&m, json!({"x": true}));
    assert_eq!(
        (count(&st, "a"), count(&st, "b"), count(&st, "c")),
        (1, 0, 1)
    );
}

fn parallel_model(branch_b: &str) -> ModelSpec {
    model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/>
        {}{}<bpmn:parallelGateway id="join"/>{}<bpmn:endEvent id="e"/>
        {}{}{}{}{}{}"#,
        script("a", "a = 1"),
        branch_b,
        script("sum", "c = a + b"),
        flow("f0", "s", "fork"),
        flow("f1", "fork", "a"),
        flow("f2", "fork", "b"),
        flow("f3", "a", "join"),
        flow("f4", "b", "join"),
        chain(&["join", "sum", "e"]),
    ))
}

#[test]
fn parallel_fork_and_join_fire_the_join_once() {
    let m = parallel_model(&script("b", "b = 2"));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["c"], json!(3));
    assert_eq!(count(&st, "join"), 1);
    assert_eq!(count(&st, "sum"), 1);
    assert!(st.internal.joins.is_empty());

    // one branch waits: the join waits for it
    let m = parallel_model(r#"<bpmn:userTask id="b"/>"#);
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert_eq!(count(&st, "join"), 0);
    assert_eq!(st.internal.joins.len(), 1);
    // the join counters survive serialisation
    let mut st: InstanceState = {
        st.prune_finished();
        serde_json::from_value(snapshot(&st)).unwrap()
    };
    let guid = task(&st, "b").guid;
    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: guid,
            data: map(json!({"b": 40})),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["c"], json!(41));
    assert_eq!(count(&st, "join"), 1);
}

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
        step(&m, &mut st, Event::Signal { name: "x".into() }),
        Err(EngineError::Invalid(_))
    ));
}

const SERVICE: &str = r#"<bpmn:serviceTask id="svc"><bpmn:extensionElements>
  <spiffworkflow:serviceTaskOperator id="http/GetRequest" resultVariable="resp">
    <spiffworkflow:parameters>
      <spiffworkflow:parameter id="url" type="str" value="base + &#34;/orders/&#34; + str(order_id)" required="true"/>
      <spiffworkflow:parameter id="timeout" type="int" value="5"/>
      <spiffworkflow:parameter id="token" type="str" value="token" required="true"/>
    </spiffworkflow:parameters>
    <spiffworkflow:retry retries="3"/>
  </spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>"#;

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
            error_code: Some("http_404".into())
        })
    );
    assert_eq!(task(&st, "svc").state, TaskState::Error);
    assert_eq!(
        task(&st, "svc").data,
        Some(json!({"error_code": "http_404", "message": "not found"}))
    );
}

const CORRELATION: &str = r#"
  <bpmn:message id="m_req" name="request"/><bpmn:message id="m_reply" name="reply"/>
  <bpmn:correlationProperty id="order_id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_req"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:formalExpression>order["id"]</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:correlationProperty id="customer">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:messagePath>customer</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:correlationProperty id="only_request">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_req"><bpmn:messagePath>tag</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>"#;

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
    let (st, _) = start(
        &m,
        "P",
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: Some(("request".into(), json!({"order_id": 3}))),
        },
    )
    .unwrap();
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
        bad(Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: Some(("nope".into(), json!({})))
        }),
        EngineError::Invalid(_)
    ));
    assert!(matches!(
        bad(Event::Start {
            start_event_id: Some("ghost".into()),
            data: Map::new(),
            message: None
        }),
        EngineError::Invalid(_)
    ));
    assert!(matches!(
        start(
            &m,
            "Q",
            Event::Start {
                start_event_id: None,
                data: Map::new(),
                message: None
            }
        ),
        Err(EngineError::Invalid(_))
    ));
}

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
        vec![Effect::WaitForMessage {
            task_guid: b.guid,
            name: "reply".into(),
            expected: BTreeMap::new()
        }]
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
    assert!(effects.is_empty(), "{effects:?}");
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
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(effects, vec![Effect::CancelMessageWait { task_guid: b }]);
    assert_eq!(task(&st, "b_sig").state, TaskState::Cancelled);
    assert_eq!(count(&st, "e"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);

    let (mut st, _) = start_with(&m, json!({}));
    let b = task(&st, "b_msg").guid;
    assert!(step(
        &m,
        &mut st,
        Event::Signal {
            name: "OTHER".into()
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
        },
    )
    .unwrap();
    assert_eq!(effects, vec![Effect::CancelMessageWait { task_guid: b }]);
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
              <bpmn:extensionElements><spiffworkflow:messagePayload>{{"order_id": 1}}</spiffworkflow:messagePayload></bpmn:extensionElements>
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
            ("request", &json!({"order_id": 1})),
            ("reply", &json!({"k": 1}))
        ]
    );
    assert_eq!(task(&st, "e").element_type, "endEvent");
}

#[test]
fn expression_error_is_an_instance_error_with_element_id() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        script("bad", "x = undefined_name + 1"),
        chain(&["s", "bad", "e"])
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let err = st.error.as_ref().unwrap();
    assert_eq!(err.element_id, "bad");
    assert!(
        err.message.contains("NameError") && err.message.contains("undefined_name"),
        "{err}"
    );
    assert_eq!(err.error_code, None);
    assert_eq!(task(&st, "bad").state, TaskState::Error);

    // a failing condition names the gateway; the pending waits are cancelled
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:receiveTask id="r" messageRef="m_reply"/>
            <bpmn:userTask id="u"/><bpmn:exclusiveGateway id="g"/><bpmn:endEvent id="e"/>{}{}{}{}{}"#,
            flow("f0", "s", "fork"),
            flow("f1", "fork", "r"),
            flow("f2", "fork", "u"),
            flow("f3", "u", "g"),
            cond_flow("f4", "g", "e", "missing &gt; 1"),
        ),
        CORRELATION,
    );
    let (mut st, _) = start_with(&m, json!({}));
    let (r, u) = (task(&st, "r").guid, task(&st, "u").guid);
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Error);
    assert_eq!(st.error.as_ref().unwrap().element_id, "g");
    assert!(st.error.as_ref().unwrap().message.contains("NameError"));
    assert_eq!(effects, vec![Effect::CancelMessageWait { task_guid: r }]);
    assert!(matches!(
        step(
            &m,
            &mut st,
            Event::MessageDelivered {
                task_guid: r,
                name: "reply".into(),
                payload: json!({})
            }
        ),
        Err(EngineError::Invalid(_))
    ));
}

#[test]
fn a_loop_without_wait_state_is_bounded() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:exclusiveGateway id="g" default="back"/>{}{}
        <bpmn:endEvent id="e"/>"#,
        script("inc", "n = n + 1"),
        flow("f0", "s", "inc") + &flow("f1", "inc", "g") + &flow("back", "g", "inc"),
        cond_flow("out", "g", "e", "n &gt; 1000000"),
    ));
    let (st, _) = start_with(&m, json!({"n": 0}));
    assert_eq!(st.status, InstanceStatus::Error);
    let err = st.error.unwrap();
    assert!(err.message.contains("element executions"), "{err}");
    assert!(err.element_id == "inc" || err.element_id == "g");
}

#[test]
fn model_and_state_types_are_thread_safe() {
    fn is<T: Send + Sync>() {}
    is::<InstanceState>();
    is::<Effect>();
    is::<Event>();
    is::<ModelSpec>();
}

// ----- SpiffArena fixtures (read from ../shared when present; never copied) -----

fn fixtures_dir() -> Option<std::path::PathBuf> {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance/spiffarena-fixtures");
    d.is_dir().then_some(d)
}

fn load_fixture(name: &str) -> Option<ModelSpec> {
    let dir = fixtures_dir()?.join(name);
    let mut files = vec![];
    let mut primary = None;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        if file.ends_with(".bpmn") {
            files.push((file, std::fs::read_to_string(&path).unwrap()));
        } else if file == "process_model.json" {
            let j: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            primary = j["primary_process_id"].as_str().map(str::to_string);
        }
    }
    files.sort();
    Some(build_model(&files, primary.as_deref()).unwrap_or_else(|e| panic!("{name}: {e}")))
}

#[test]
fn spiffarena_fixtures_load() {
    let Some(dir) = fixtures_dir() else {
        eprintln!("fixtures not present; skipped");
        return;
    };
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for f in std::fs::read_dir(&path).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "bpmn") {
                let xml = std::fs::read_to_string(&f).unwrap();
                crate::bpmn::parse_file(&f.file_name().unwrap().to_string_lossy(), &xml)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let m = load_fixture(&name).unwrap();
        let _ = m.summary();
        n += 1;
    }
    assert!(n >= 7, "only {n} fixture folders");
}

fn run_fixture(
    name: &str,
    process_id: Option<&str>,
) -> Option<(ModelSpec, InstanceState, Vec<Effect>)> {
    let m = load_fixture(name)?;
    let pid = process_id.unwrap_or(&m.primary_process_id).to_string();
    let (st, effects) = start(
        &m,
        &pid,
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: None,
        },
    )
    .unwrap();
    Some((m, st, effects))
}

#[test]
fn spiffarena_fixtures_run_as_spiffarena_runs_them() {
    // simple-message-send-receive: the primary process sends message_one and completes;
    // the model also starts with message_one.
    let Some((m, st, effects)) = run_fixture("simple-message-send-receive", None) else {
        return;
    };
    assert_eq!(
        m.primary_process_id,
        "Process_simple_message_send_receive_ivod1hz"
    );
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert!(
        matches!(&effects[..], [Effect::SendMessage { name, payload, .. }] if name == "message_one" && payload == &json!({"a": 1}))
    );
    assert_eq!(
        m.message_start("message_one").unwrap().process_id,
        "Process_message_start"
    );
    let (st, _) = start(
        &m,
        "Process_message_start",
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: Some(("message_one".into(), json!({"a": 1}))),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["the_message"].clone()),
        (InstanceStatus::Complete, json!({"a": 1}))
    );

    // message folder, manual task with a message boundary: completing the task completes.
    let (m, mut st, effects) = run_fixture("message", Some("Process_1769024890329")).unwrap();
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert!(matches!(&effects[..], [Effect::WaitForMessage { name, .. }] if name == "A"));
    let manual = task(&st, "Task_1769024890329").guid;
    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: manual,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    // ... or the message cancels it
    let (m, mut st, _) = run_fixture("message", Some("Process_1769024890329")).unwrap();
    let b = task(&st, "Event_0qngnzk").guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: b,
            name: "A".into(),
            payload: json!({}),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(task(&st, "Task_1769024890329").state, TaskState::Cancelled);

    // receive task in a subprocess, correlated by processVariableCorrelation uid = 1
    let (m, mut st, effects) =
        run_fixture("message", Some("Process_from_local_tests_nmkz3hh")).unwrap();
    let r = task(&st, "Activity_0qpzdpu");
    assert_eq!(r.scope, Some(task(&st, "Activity_0ifb3pp").guid));
    assert_eq!(
        effects,
        vec![Effect::WaitForMessage {
            task_guid: r.guid,
            name: "B".into(),
            expected: [("uid".to_string(), json!(1))].into()
        }]
    );
    let r = r.guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: r,
            name: "B".into(),
            payload: json!({"uid": 1}),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["a_var"].clone()),
        (InstanceStatus::Complete, json!({"uid": 1}))
    );

    // invoice conversation: user task, then send with correlation values, then wait for the reply
    let (m, mut st, _) = run_fixture(
        "message_send_one_conversation",
        Some("message_send_process"),
    )
    .unwrap();
    let form = task(&st, "invoice_form").guid;
    let form_data = json!({"customer_id": "sartography", "po_number": 1001, "amount": "One Billion Dollars", "description": "x"});
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: form,
            data: map(form_data),
        },
    )
    .unwrap();
    let values: BTreeMap<String, Value> = [
        ("customer_id".to_string(), json!("sartography")),
        ("po_number".to_string(), json!(1001)),
    ]
    .into();
    assert!(
        matches!(&effects[0], Effect::SendMessage { name, correlation_values, .. } if name == "Request Approval" && correlation_values == &values)
    );
    assert!(
        matches!(&effects[1], Effect::WaitForMessage { name, expected, .. } if name == "Approval Result" && expected == &values)
    );
    assert_eq!(st.data["the_topic"], json!("first_conversation"));
    // the receiver starts with the message and answers with the invoice
    let payload = match &effects[0] {
        Effect::SendMessage { payload, .. } => payload.clone(),
        _ => unreachable!(),
    };
    let (rst, reffects) = start(
        &m,
        "message_receiver_process",
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: Some(("Request Approval".into(), payload.clone())),
        },
    )
    .unwrap();
    assert_eq!(rst.status, InstanceStatus::Complete);
    assert!(
        matches!(&reffects[..], [Effect::SendMessage { name, payload: p, correlation_values, .. }] if name == "Approval Result" && p == &payload && correlation_values == &values)
    );
    let catch = task(&st, "receive_message_response").guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: catch,
            name: "Approval Result".into(),
            payload: payload.clone(),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["the_payload"].clone()),
        (InstanceStatus::Complete, payload)
    );

    // service task: the script checks the response
    for (result, status) in [
        (json!({"do_not_fail": 1}), InstanceStatus::Complete),
        (json!({}), InstanceStatus::Error),
    ] {
        let (m, mut st, effects) = run_fixture("service_task", None).unwrap();
        let svc = task(&st, "Task_1747924731738").guid;
        assert_eq!(effects, vec![Effect::CallService { task_guid: svc }]);
        assert_eq!(
            task(&st, "Event_0ss1sat").state,
            TaskState::Waiting,
            "signal boundary waits"
        );
        let call = service_call(&m, &st, svc).unwrap();
        assert_eq!(
            (call.operator_id.as_str(), call.params.clone()),
            (
                "ed/GetFiles",
                map(json!({"process_id": "a", "encoding": "b"}))
            )
        );
        step(
            &m,
            &mut st,
            Event::ServiceSucceeded {
                task_guid: svc,
                result,
            },
        )
        .unwrap();
        assert_eq!(st.status, status, "{:?}", st.error);
        if status == InstanceStatus::Error {
            let err = st.error.unwrap();
            assert_eq!(err.element_id, "Activity_03sneo2");
            assert!(err.message.contains("KeyError"), "{}", err.message);
        }
    }

    // parallel branch with time.sleep joins after the service task
    let (m, mut st, _) = run_fixture("parallel_service_task_callback", None).unwrap();
    assert_eq!(st.status, InstanceStatus::Waiting, "{:?}", st.error);
    let svc = task(&st, "Task_parallel_callback_service").guid;
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!({"do_not_fail": true}),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "Gateway_join"), 1);

    // retries: retry configuration
    let m = load_fixture("retries").unwrap();
    for (pid, retries, base) in [
        ("Process_Retries", 3, 2.0),
        ("Process_Retries_Backoff_Override", 3, 2.0),
    ] {
        let (st, _) = start(
            &m,
            pid,
            Event::Start {
                start_event_id: None,
                data: Map::new(),
                message: None,
            },
        )
        .unwrap();
        let call = service_call(&m, &st, task(&st, "ServiceTask_1").guid).unwrap();
        assert_eq!((call.retries, call.backoff_base), (retries, base));
    }

    // message start + service task
    let m = load_fixture("message_start_service_task").unwrap();
    let (st, effects) = start(
        &m,
        "message_start_service_task",
        Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: Some(("quick_callback_service_task".into(), json!({"x": 1}))),
        },
    )
    .unwrap();
    assert_eq!(st.data["the_message"], json!({"x": 1}));
    assert!(matches!(&effects[..], [Effect::CallService { .. }]));
}

mod panics {
    use super::*;

    /// A live task whose element the model lacks makes the signal path index a missing element:
    /// a defect, caught at the engine's edge, that puts the instance in error.
    #[test]
    fn a_panic_in_a_step_puts_the_instance_in_error() {
        let model = crate::bpmn::build_model(
            &[(
                "p.bpmn".to_string(),
                format!(
                    "{}<bpmn:process id=\"P\" isExecutable=\"true\"><bpmn:startEvent id=\"s\" />\
                     <bpmn:sequenceFlow id=\"f\" sourceRef=\"s\" targetRef=\"u\" />\
                     <bpmn:userTask id=\"u\" /><bpmn:sequenceFlow id=\"g\" sourceRef=\"u\" targetRef=\"e\" />\
                     <bpmn:endEvent id=\"e\" /></bpmn:process></bpmn:definitions>",
                    r#"<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">"#
                ),
            )],
            Some("P"),
        )
        .expect("model");
        let start = Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: None,
        };
        let (mut state, _) = crate::engine::start(&model, "P", start).expect("started");
        let mut ghost = state.tasks.last().expect("a task").clone();
        ghost.guid = Uuid::new_v4();
        ghost.element_id = "ghost".into();
        ghost.state = TaskState::Waiting;
        state.tasks.push(ghost);
        let effects = crate::engine::step(&model, &mut state, Event::Signal { name: "x".into() })
            .expect("a panic is not a caller mistake");
        assert_eq!(state.status, InstanceStatus::Error);
        let error = state.error.expect("an error");
        assert_eq!(
            error.error_code.as_deref(),
            Some(crate::engine::ENGINE_PANIC)
        );
        assert!(
            error.message.starts_with("internal engine error"),
            "{}",
            error.message
        );
        let _ = effects;
    }
}
