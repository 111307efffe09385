//! Event payloads (SpiffWorkflow's `payloadExpression` / `variableName` on a `bpmn:signal`,
//! `bpmn:error` or `bpmn:escalation`) on small models: where a catch stores what arrived, for
//! each kind of catching event, and what happens without either extension.

use super::*;

/// `GO` with a variable `got`; `BARE` with neither extension.
const SIGNALS: &str = r#"
  <bpmn:signal id="go" name="GO"><bpmn:extensionElements>
    <spiffworkflow:payloadExpression>{"n": n + 1}</spiffworkflow:payloadExpression>
    <spiffworkflow:variableName>got</spiffworkflow:variableName>
  </bpmn:extensionElements></bpmn:signal>
  <bpmn:signal id="bare" name="BARE"/>"#;

fn signal(name: &str, payload: Value) -> Event {
    Event::Signal {
        name: name.into(),
        payload,
    }
}

/// A user task with a signal boundary (`cancel_activity`) of `signal_ref`.
fn boundary_model(signal_ref: &str, cancel_activity: bool) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="work"/><bpmn:endEvent id="e"/>
            <bpmn:boundaryEvent id="b" attachedToRef="work" cancelActivity="{cancel_activity}">
              <bpmn:signalEventDefinition signalRef="{signal_ref}"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="b_end"/>{}{}"#,
            chain(&["s", "work", "e"]),
            flow("f_b", "b", "b_end")
        ),
        SIGNALS,
    )
}

/// A signal from outside reaches an interrupting boundary, which stores its payload.
#[test]
fn a_signal_boundary_stores_the_payload_in_its_variable() {
    let m = boundary_model("go", true);
    let (mut st, _) = start_with(&m, json!({}));
    step(&m, &mut st, signal("GO", json!({"from": "outside"}))).unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["got"], json!({"from": "outside"}));
    assert_eq!(task(&st, "work").state, TaskState::Cancelled);
}

/// Non-interrupting: each signal's payload goes to its own path's data, and the task goes
/// on; when the process ends the paths' data merge in the order they ended, so the last
/// payload is kept.
#[test]
fn a_non_interrupting_boundary_stores_each_payload() {
    let m = boundary_model("go", false);
    let (mut st, _) = start_with(&m, json!({}));
    step(&m, &mut st, signal("GO", json!(1))).unwrap();
    step(&m, &mut st, signal("GO", json!(2))).unwrap();
    assert_eq!(count(&st, "b_end"), 2);
    assert_eq!(task(&st, "work").state, TaskState::Waiting);
    let work = task(&st, "work").guid;
    complete_guid(&m, &mut st, work, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(st.data["got"], json!(2));
}

/// As in SpiffWorkflow: a catch whose signal has no variableName stores nothing; one with a
/// variable stores null when the signal carried nothing.
#[test]
fn without_a_variable_nothing_is_stored_and_without_a_payload_null_is() {
    let m = boundary_model("bare", true);
    let (mut st, _) = start_with(&m, json!({}));
    step(&m, &mut st, signal("BARE", json!({"ignored": true}))).unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.data.is_empty(), "{:?}", st.data);

    let m = boundary_model("go", true);
    let (mut st, _) = start_with(&m, json!({}));
    step(&m, &mut st, signal("GO", Value::Null)).unwrap();
    assert_eq!(Value::Object(st.data), json!({"got": null}));
}

/// A signal event subprocess's start event stores the payload where the subprocess's tasks
/// see it.
#[test]
fn a_signal_event_subprocess_sees_the_payload() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="work"/><bpmn:endEvent id="e"/>{}
            <bpmn:subProcess id="esp" triggeredByEvent="true">
              <bpmn:startEvent id="esp_start" isInterrupting="false">
                <bpmn:signalEventDefinition signalRef="go"/></bpmn:startEvent>
              <bpmn:scriptTask id="esp_work"><bpmn:script>seen = got["n"] * 10</bpmn:script></bpmn:scriptTask>
              <bpmn:endEvent id="esp_end"/>{}
            </bpmn:subProcess>"#,
            chain(&["s", "work", "e"]),
            chain(&["esp_start", "esp_work", "esp_end"])
        ),
        SIGNALS,
    );
    let (mut st, _) = start_with(&m, json!({}));
    step(&m, &mut st, signal("GO", json!({"n": 4}))).unwrap();
    assert_eq!(st.data["seen"], json!(40));
    assert_eq!(task(&st, "work").state, TaskState::Waiting);
}

/// A thrown signal's payload expression runs with the thrower's data; the instance's own
/// catch stores it, and the shell gets it for the others.
#[test]
fn a_throw_evaluates_its_payload_with_its_data() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="split"/>
            <bpmn:intermediateCatchEvent id="catch"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateCatchEvent>
            <bpmn:intermediateThrowEvent id="throw"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateThrowEvent>
            <bpmn:endEvent id="e1"/><bpmn:endEvent id="e2"/>{}{}{}"#,
            flow("f0", "s", "split"),
            chain(&["split", "catch", "e1"]),
            chain(&["split", "throw", "e2"]),
        ),
        SIGNALS,
    );
    let (st, effects) = start_with(&m, json!({"n": 1}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["got"], json!({"n": 2}));
    assert!(effects.iter().any(|e| matches!(e,
        Effect::ThrowSignal { name, payload, .. } if name == "GO" && *payload == json!({"n": 2}))));
}

/// A payload expression that fails puts the instance in error at the throw, naming it.
#[test]
fn a_failing_payload_expression_fails_the_throw() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="throw"><bpmn:signalEventDefinition signalRef="go"/></bpmn:endEvent>{}"#,
            chain(&["s", "throw"])
        ),
        SIGNALS,
    );
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let error = st.error.unwrap();
    assert_eq!(error.element_id, "throw");
    assert!(error.message.contains("payloadExpression"), "{error}");
    assert!(error.message.contains("NameError"), "{error}");
}

/// A signal start event stores the payload of the signal that started the instance.
#[test]
fn a_signal_start_event_stores_the_payload() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"><bpmn:signalEventDefinition signalRef="go"/></bpmn:startEvent>
            <bpmn:userTask id="work"/>{}"#,
            chain(&["s", "work"])
        ),
        SIGNALS,
    );
    let event = Event::Start {
        start_event_id: Some("s".into()),
        data: Map::new(),
        message: None,
        signal: Some(json!(["a", 1])),
    };
    let (st, _) = start(&m, "P", event).unwrap();
    assert_eq!(Value::Object(st.data), json!({"got": ["a", 1]}));
}

/// An escalation's payload reaches an escalation event subprocess's variable; an error
/// without a payload expression still gives `{error_code, message}`.
#[test]
fn escalation_and_error_payloads_reach_event_subprocesses() {
    let extra = r#"
      <bpmn:escalation id="esc" escalationCode="late"><bpmn:extensionElements>
        <spiffworkflow:payloadExpression>reason</spiffworkflow:payloadExpression>
        <spiffworkflow:variableName>why</spiffworkflow:variableName>
      </bpmn:extensionElements></bpmn:escalation>
      <bpmn:error id="err" errorCode="broken"/>"#;
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:intermediateThrowEvent id="up"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:intermediateThrowEvent>
            <bpmn:endEvent id="fail"><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>{}
            <bpmn:subProcess id="on_esc" triggeredByEvent="true">
              <bpmn:startEvent id="on_esc_start" isInterrupting="false">
                <bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:startEvent>
              <bpmn:endEvent id="on_esc_end"/>{}
            </bpmn:subProcess>
            <bpmn:subProcess id="on_err" triggeredByEvent="true">
              <bpmn:startEvent id="on_err_start"><bpmn:errorEventDefinition errorRef="err"/></bpmn:startEvent>
              <bpmn:endEvent id="on_err_end"/>{}
            </bpmn:subProcess>"#,
            chain(&["s", "up", "fail"]),
            flow("f_esc", "on_esc_start", "on_esc_end"),
            flow("f_err", "on_err_start", "on_err_end"),
        ),
        extra,
    );
    let (st, _) = start_with(&m, json!({"reason": "traffic"}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["why"], json!("traffic"));
    assert_eq!(
        st.data["error"],
        json!({"error_code": "broken", "message": "broken"})
    );
}
