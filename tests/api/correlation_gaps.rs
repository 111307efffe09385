//! Messages whose correlation values cannot be computed, and messages that come before their
//! receiver waits (issue 32, items 9 and 10), over HTTP.

use crate::domain::*;
use crate::helpers::{spawn_app, TestApp};
use crate::messages::orders;
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn code(body: &Value) -> &str {
    body["error_code"].as_str().unwrap_or("")
}

/// A payload without the retrieval expression's key is refused, naming the expression and
/// the error: it neither starts an instance (none with empty correlation values) nor, later,
/// completes one.
#[tokio::test]
async fn a_payload_without_the_correlation_key_is_refused_naming_the_expression() {
    let app = spawn_app().await;
    orders(&app).await;

    let (status, body) = send(&app, "placed", &json!({"amount": 3}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "correlation_value_not_computable", "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("order_id") && detail.contains("NameError"),
        "{detail}"
    );
    assert_eq!(
        body["correlation_properties"][0]["expression"], "order_id",
        "{body}"
    );
    assert_eq!(
        body["correlation_properties"][0]["correlation_property"],
        "order_id"
    );
    let (_, instances) = get(&app, "/v1.0/process-instances").await;
    assert_eq!(instances["pagination"]["total"], 0, "{instances}");

    // an instance that has its value is not completed by a message lacking it
    let (status, started) = send(&app, "placed", &json!({"order_id": 7}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    let (status, body) = send(&app, "paid", &json!({"paid": true}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "correlation_value_not_computable", "{body}");
    assert_eq!(show(&app, id).await["status"], "waiting");

    // null is no value either
    let (status, body) = send(&app, "paid", &json!({"order_id": null}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "correlation_value_not_computable", "{body}");
    assert_eq!(show(&app, id).await["status"], "waiting");

    let (status, done) = send(&app, "paid", &json!({"order_id": 7}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete");
}

/// A message to be buffered follows the same rule: it is refused, not buffered under an empty
/// key for the next receive of any order to take.
#[tokio::test]
async fn a_buffered_message_without_the_correlation_key_is_refused_too() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, body) = send(&app, "paid", &json!({"paid": true}), &query).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "correlation_value_not_computable", "{body}");
    assert!(messages(&app, "name=paid").await.is_empty());

    let (_, started) = send(&app, "placed", &json!({"order_id": 1}), &[]).await;
    assert_eq!(
        started["process_instance"]["status"], "waiting",
        "{started}"
    );
}

/// `shop/packing`: message start `placed` (order_id), a user task `pack`, then waits for
/// `paid` by order_id.
fn packing() -> String {
    definitions(
        r#"<bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_placed"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_paid"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_placed" name="placed" />
  <bpmn:message id="m_paid" name="paid" />
  <bpmn:process id="packing" isExecutable="true">
    <bpmn:startEvent id="placed"><bpmn:messageEventDefinition id="e1" messageRef="m_placed" /></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="placed" targetRef="pack" />
    <bpmn:userTask id="pack" />
    <bpmn:sequenceFlow id="f2" sourceRef="pack" targetRef="paid" />
    <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition id="e2" messageRef="m_paid" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="paid" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

async fn packing_started(app: &TestApp, order_id: i64) -> i64 {
    upload_ok(app, "shop/packing", "packing.bpmn", &packing()).await;
    let (status, started) = send(app, "placed", &json!({ "order_id": order_id }), &[]).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    started["process_instance"]["id"].as_i64().unwrap()
}

/// A message for an instance that has its correlation values but does not wait for it yet
/// is refused with `no_receiver`, saying which instance and suggesting a time to live; the
/// message kept for audit says so too. Sent with a time to live, it is taken when the
/// instance gets there.
#[tokio::test]
async fn an_early_message_says_its_instance_does_not_wait_yet() {
    let app = spawn_app().await;
    let id = packing_started(&app, 5).await;

    let (status, body) = send(&app, "paid", &json!({"order_id": 5}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "message_not_accepted");
    assert_eq!(body["reason"], "no_receiver", "{body}");
    assert_eq!(body["process_instance_id"], id, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("process instance {id}"))
            && detail.contains("not waiting for it yet")
            && detail.contains("time_to_live_in_seconds"),
        "{detail}"
    );
    let kept = messages(&app, "name=paid&status=not_accepted").await;
    assert!(
        kept[0]["failure_cause"]
            .as_str()
            .unwrap()
            .contains("time_to_live_in_seconds"),
        "{kept:?}"
    );

    // another order's message is not taken for this one's
    let (_, other) = send(&app, "paid", &json!({"order_id": 6}), &[]).await;
    assert!(other.get("process_instance_id").is_none(), "{other}");
    assert!(
        !other["detail"].as_str().unwrap().contains("time_to_live"),
        "{other}"
    );

    // as suggested: buffered, then taken once the instance waits for it
    let uuid = uuid::Uuid::new_v4().to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, buffered) = send(&app, "paid", &json!({"order_id": 5}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{buffered}");
    let pack = waiting_task(&app, id, "pack").await;
    let (status, done) = complete_task(&app, id, &pack, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(show(&app, id).await["status"], "complete");
}

/// When other instances wait for the message with other values, the early one is named too.
#[tokio::test]
async fn an_early_message_among_waiting_instances_names_its_instance() {
    let app = spawn_app().await;
    let early = packing_started(&app, 5).await;
    let (_, other) = send(&app, "placed", &json!({"order_id": 8}), &[]).await;
    let other = other["process_instance"]["id"].as_i64().unwrap();
    let pack = waiting_task(&app, other, "pack").await;
    let (status, _) = complete_task(&app, other, &pack, &json!({})).await;
    assert_eq!(status, StatusCode::OK);

    let (status, body) = send(&app, "paid", &json!({"order_id": 5}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["reason"], "correlation_mismatch", "{body}");
    assert_eq!(body["process_instance_id"], early, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("time_to_live_in_seconds"),
        "{body}"
    );
}

/// A message an instance throws follows SpiffWorkflow too: a payload without the key fails the
/// throwing task (the instance is in error, naming the expression); nothing is sent.
#[tokio::test]
async fn a_thrown_message_without_the_correlation_key_errs_its_instance() {
    let app = spawn_app().await;
    let xml = definitions(
        r#"<bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_req"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_req" name="request" />
  <bpmn:process id="asker" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ask" />
    <bpmn:sendTask id="ask" messageRef="m_req"><bpmn:extensionElements>
      <spiffworkflow:messagePayload>{"amount": amount}</spiffworkflow:messagePayload>
    </bpmn:extensionElements></bpmn:sendTask>
    <bpmn:sequenceFlow id="f2" sourceRef="ask" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "shop/asker", "asker.bpmn", &xml).await;
    let (status, started) = start(&app, "shop/asker", &json!({"amount": 3})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(started["process_instance"]["status"], "error", "{started}");
    let error = &started["process_instance"]["error"];
    assert_eq!(error["element_id"], "ask", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("order_id"),
        "{error}"
    );
    assert!(messages(&app, "name=request").await.is_empty());
}
