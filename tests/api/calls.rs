//! Call activities and start events over HTTP, beyond what `structure.rs` shows: what happens
//! inside a called process of another model (escalations reaching the call activity, timers
//! and signals firing in the child, data passed by an ioSpecification), several none start
//! events, and compensation refused where a transaction would need it.

use crate::domain::*;
use crate::helpers::spawn_app_without_workers;
use crate::models::definitions;
use chrono::{DateTime, Duration, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};
use workflow_backend::workers::timer_firer::fire_due_once;

/// `order` calls `called` (a process of another model); a boundary on the call may follow.
fn caller(called: &str, boundary: &str) -> String {
    definitions(&format!(
        r#"<bpmn:escalation id="esc_late" escalationCode="late" />
  <bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="call" />
    <bpmn:callActivity id="call" calledElement="{called}" />
    <bpmn:sequenceFlow id="f1" sourceRef="call" targetRef="done" />
    <bpmn:endEvent id="done" />
    {boundary}
  </bpmn:process>"#
    ))
}

fn state_of(shown: &Value, element: &str) -> Option<String> {
    shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["element_id"] == element)
        .map(|t| t["state"].as_str().unwrap().to_string())
        .next_back()
}

/// An escalation thrown inside a process of another model reaches the interrupting escalation
/// boundary on the call activity: the call is cancelled and the flow goes on from the boundary.
#[tokio::test]
async fn an_escalation_in_a_called_process_reaches_the_call_activity() {
    let app = spawn_app_without_workers().await;
    let callee = definitions(
        r#"<bpmn:escalation id="esc_late" escalationCode="late" />
  <bpmn:process id="slow_shipping" isExecutable="true">
    <bpmn:startEvent id="s_start" />
    <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="late" />
    <bpmn:intermediateThrowEvent id="late"><bpmn:escalationEventDefinition escalationRef="esc_late" /></bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="s1" sourceRef="late" targetRef="wait" />
    <bpmn:userTask id="wait" />
    <bpmn:sequenceFlow id="s2" sourceRef="wait" targetRef="s_end" />
    <bpmn:endEvent id="s_end" />
  </bpmn:process>"#,
    );
    let boundary = r#"<bpmn:boundaryEvent id="escalated" attachedToRef="call"><bpmn:escalationEventDefinition escalationRef="esc_late" /></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="escalated" targetRef="handled" />
    <bpmn:endEvent id="handled" />"#;
    upload_ok(&app, "calls/slow", "slow.bpmn", &callee).await;
    upload_ok(
        &app,
        "calls/order",
        "order.bpmn",
        &caller("slow_shipping", boundary),
    )
    .await;
    let id = start_ok(&app, "calls/order", &json!({})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(state_of(&shown, "handled").as_deref(), Some("COMPLETED"));
    assert_eq!(state_of(&shown, "done"), None, "{shown}");
    // the child's user task was cancelled with its call
    assert_ne!(
        state_of(&shown, "call/wait").as_deref(),
        Some("READY"),
        "{shown}"
    );
}

/// A timer and then a signal catch inside a called process of another model: the timer fires
/// in the child (pending on the instance until then), the signal reaches it, and the caller
/// completes.
#[tokio::test]
async fn a_timer_and_a_signal_inside_a_called_process_fire() {
    let app = spawn_app_without_workers().await;
    let callee = definitions(
        r#"<bpmn:signal id="sig_go" name="go" />
  <bpmn:process id="reminding" isExecutable="true">
    <bpmn:startEvent id="s_start" />
    <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="hour" />
    <bpmn:intermediateCatchEvent id="hour"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="s1" sourceRef="hour" targetRef="go" />
    <bpmn:intermediateCatchEvent id="go"><bpmn:signalEventDefinition signalRef="sig_go" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="s2" sourceRef="go" targetRef="s_end" />
    <bpmn:endEvent id="s_end" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "calls/reminding", "r.bpmn", &callee).await;
    upload_ok(&app, "calls/order", "order.bpmn", &caller("reminding", "")).await;
    let id = start_ok(&app, "calls/order", &json!({})).await;
    let shown = show(&app, id).await;
    let timers = shown["pending_timers"].as_array().unwrap().clone();
    assert_eq!(timers.len(), 1, "{shown}");
    assert_eq!(timers[0]["element_id"], "call/hour", "{shown}");
    let due: DateTime<Utc> = DateTime::parse_from_rfc3339(timers[0]["due_at"].as_str().unwrap())
        .unwrap()
        .into();

    assert_eq!(
        fire_due_once(&app.state, due - Duration::seconds(1))
            .await
            .fired,
        0
    );
    assert_eq!(fire_due_once(&app.state, due).await.fired, 1);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    assert_eq!(
        state_of(&shown, "call/go").as_deref(),
        Some("WAITING"),
        "{shown}"
    );

    let response = app
        .client
        .post(app.url("/v1.0/signals/go"))
        .bearer_auth(app.token("signals:send"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["delivered_to"], json!([id]), "{answer}");
    assert_eq!(show(&app, id).await["status"], "complete");
}

/// A called process with an ioSpecification sees only its data inputs, and only its data
/// outputs come back to the caller (SpiffWorkflow's rule); without one, everything is copied in
/// and merged back.
#[tokio::test]
async fn an_io_specification_passes_only_its_inputs_and_outputs() {
    let app = spawn_app_without_workers().await;
    let callee = definitions(
        r#"<bpmn:process id="doubling" isExecutable="true">
    <bpmn:ioSpecification>
      <bpmn:dataInput id="amount" name="amount" />
      <bpmn:dataOutput id="total" name="total" />
      <bpmn:inputSet><bpmn:dataInputRefs>amount</bpmn:dataInputRefs></bpmn:inputSet>
      <bpmn:outputSet><bpmn:dataOutputRefs>total</bpmn:dataOutputRefs></bpmn:outputSet>
    </bpmn:ioSpecification>
    <bpmn:startEvent id="s_start" />
    <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="double" />
    <bpmn:scriptTask id="double"><bpmn:script>try:
    total = note
except NameError:
    total = amount * 2
scratch = True</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="s1" sourceRef="double" targetRef="s_end" />
    <bpmn:endEvent id="s_end" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "calls/doubling", "d.bpmn", &callee).await;
    upload_ok(&app, "calls/order", "order.bpmn", &caller("doubling", "")).await;
    let id = start_ok(&app, "calls/order", &json!({"amount": 21, "note": "kept"})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(
        shown["data"],
        json!({"amount": 21, "note": "kept", "total": 42}),
        "{shown}"
    );
}

/// A process with two none start events starts on both: each path runs.
#[tokio::test]
async fn several_none_start_events_each_start_a_path() {
    let app = spawn_app_without_workers().await;
    let model = definitions(
        r#"<bpmn:process id="two_ways" isExecutable="true">
    <bpmn:startEvent id="start_a" />
    <bpmn:sequenceFlow id="a0" sourceRef="start_a" targetRef="review" />
    <bpmn:userTask id="review" />
    <bpmn:sequenceFlow id="a1" sourceRef="review" targetRef="end_a" />
    <bpmn:endEvent id="end_a" />
    <bpmn:startEvent id="start_b" />
    <bpmn:sequenceFlow id="b0" sourceRef="start_b" targetRef="note" />
    <bpmn:scriptTask id="note"><bpmn:script>noted = True</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="b1" sourceRef="note" targetRef="end_b" />
    <bpmn:endEvent id="end_b" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "starts/two", "two.bpmn", &model).await;
    let id = start_ok(&app, "starts/two", &json!({})).await;
    let shown = show(&app, id).await;
    assert_eq!(
        state_of(&shown, "end_b").as_deref(),
        Some("COMPLETED"),
        "{shown}"
    );
    assert_eq!(shown["data"]["noted"], true, "{shown}");
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    let guid = waiting_task(&app, id, "review").await;
    let (status, body) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
}

/// Compensation stays refused, inside a transaction too, with the element and the reason.
#[tokio::test]
async fn compensation_inside_a_transaction_is_refused_with_its_reason() {
    let app = spawn_app_without_workers().await;
    let model = definitions(
        r#"<bpmn:process id="booking" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="tx" />
    <bpmn:transaction id="tx">
      <bpmn:startEvent id="tx_start" />
      <bpmn:sequenceFlow id="t0" sourceRef="tx_start" targetRef="book" />
      <bpmn:scriptTask id="book"><bpmn:script>booked = True</bpmn:script></bpmn:scriptTask>
      <bpmn:boundaryEvent id="undo_book" attachedToRef="book"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
      <bpmn:sequenceFlow id="t1" sourceRef="book" targetRef="tx_end" />
      <bpmn:endEvent id="tx_end" />
    </bpmn:transaction>
    <bpmn:sequenceFlow id="f1" sourceRef="tx" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    let (status, body) = upload(&app, "tx/booking", "booking.bpmn", &model).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("undo_book"), "{body}");
    assert!(detail.to_lowercase().contains("compensation"), "{body}");
}
