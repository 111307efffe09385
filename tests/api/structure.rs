//! BPMN structure over HTTP: the inclusive join, standard loops, a transaction's cancel end
//! event, call activities.

use crate::domain::*;
use crate::helpers::spawn_app;
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::json;

/// The split takes `review` (a user task) and `notify` (a script), not `escalate` (its
/// condition is false): the join waits for the review only, then runs once.
#[tokio::test]
async fn an_inclusive_join_does_not_wait_for_a_branch_that_cannot_arrive() {
    let app = spawn_app().await;
    let xml = definitions(
        r#"<bpmn:process id="incl" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="split" />
    <bpmn:inclusiveGateway id="split" />
    <bpmn:sequenceFlow id="to_review" sourceRef="split" targetRef="review"><bpmn:conditionExpression>amount &gt; 100</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="to_notify" sourceRef="split" targetRef="notify"><bpmn:conditionExpression>True</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="to_escalate" sourceRef="split" targetRef="escalate"><bpmn:conditionExpression>amount &gt; 10000</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:userTask id="review" />
    <bpmn:scriptTask id="notify"><bpmn:script>notified = True</bpmn:script></bpmn:scriptTask>
    <bpmn:scriptTask id="escalate"><bpmn:script>escalated = True</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="r" sourceRef="review" targetRef="join" />
    <bpmn:sequenceFlow id="n" sourceRef="notify" targetRef="join" />
    <bpmn:sequenceFlow id="e" sourceRef="escalate" targetRef="join" />
    <bpmn:inclusiveGateway id="join" />
    <bpmn:sequenceFlow id="f9" sourceRef="join" targetRef="count" />
    <bpmn:scriptTask id="count"><bpmn:script>joined = get_task_data_value('joined', 0) + 1</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f10" sourceRef="count" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "gateways/inclusive", "i.bpmn", &xml).await;
    let id = start_ok(&app, "gateways/inclusive", &json!({"amount": 500})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert_eq!(shown["data"]["notified"], true);
    let review = waiting_task(&app, id, "review").await;
    let (status, done) = complete_task(&app, id, &review, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    assert_eq!(done["task_data"]["joined"], 1, "{done}");
    assert!(done["task_data"].get("escalated").is_none(), "{done}");
}

/// A user task in a standard loop (at most three runs) asks again until the answer is yes.
#[tokio::test]
async fn a_standard_loop_asks_again_until_the_answer_is_yes() {
    let app = spawn_app().await;
    let xml = definitions(
        r#"<bpmn:process id="ask" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="question" />
    <bpmn:userTask id="question">
      <bpmn:standardLoopCharacteristics loopMaximum="3"><bpmn:loopCondition>answer != 'yes'</bpmn:loopCondition></bpmn:standardLoopCharacteristics>
    </bpmn:userTask>
    <bpmn:sequenceFlow id="f1" sourceRef="question" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "loops/ask", "a.bpmn", &xml).await;
    let id = start_ok(&app, "loops/ask", &json!({})).await;
    for answer in ["no", "maybe"] {
        let question = waiting_task(&app, id, "question").await;
        let (status, body) = complete_task(&app, id, &question, &json!({"answer": answer})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["process_instance"]["status"], "user_input_required",
            "{body}"
        );
    }
    let question = waiting_task(&app, id, "question").await;
    let (_, body) = complete_task(&app, id, &question, &json!({"answer": "yes"})).await;
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    let shown = show(&app, id).await;
    let runs = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["element_id"] == "question")
        .count();
    assert_eq!(runs, 3, "{shown}");
}

/// A transaction reserves (a script sets `reserved`), then asks for confirmation; a refusal
/// ends it with a cancel end event: the reservation is undone (the data as it was before the
/// transaction) and the cancel boundary's path runs.
#[tokio::test]
async fn a_cancel_end_event_undoes_its_transaction() {
    let app = spawn_app().await;
    let xml = definitions(
        r#"<bpmn:process id="booking" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="book" />
    <bpmn:transaction id="book">
      <bpmn:startEvent id="t_start" />
      <bpmn:sequenceFlow id="t0" sourceRef="t_start" targetRef="reserve" />
      <bpmn:scriptTask id="reserve"><bpmn:script>reserved = True</bpmn:script></bpmn:scriptTask>
      <bpmn:sequenceFlow id="t1" sourceRef="reserve" targetRef="confirm" />
      <bpmn:userTask id="confirm" />
      <bpmn:sequenceFlow id="t2" sourceRef="confirm" targetRef="decide" />
      <bpmn:exclusiveGateway id="decide" default="ok" />
      <bpmn:sequenceFlow id="refused" sourceRef="decide" targetRef="cancel"><bpmn:conditionExpression>not confirmed</bpmn:conditionExpression></bpmn:sequenceFlow>
      <bpmn:sequenceFlow id="ok" sourceRef="decide" targetRef="t_end" />
      <bpmn:endEvent id="cancel"><bpmn:cancelEventDefinition /></bpmn:endEvent>
      <bpmn:endEvent id="t_end" />
    </bpmn:transaction>
    <bpmn:boundaryEvent id="on_cancel" attachedToRef="book"><bpmn:cancelEventDefinition /></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="on_cancel" targetRef="undone" />
    <bpmn:scriptTask id="undone"><bpmn:script>outcome = 'cancelled'</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="undone" targetRef="end_cancelled" />
    <bpmn:endEvent id="end_cancelled" />
    <bpmn:sequenceFlow id="f3" sourceRef="book" targetRef="booked" />
    <bpmn:scriptTask id="booked"><bpmn:script>outcome = 'booked'</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f4" sourceRef="booked" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "tx/booking", "b.bpmn", &xml).await;
    for (confirmed, outcome, reserved) in [(false, "cancelled", false), (true, "booked", true)] {
        let id = start_ok(&app, "tx/booking", &json!({})).await;
        let confirm = waiting_task(&app, id, "confirm").await;
        let (status, done) =
            complete_task(&app, id, &confirm, &json!({"confirmed": confirmed})).await;
        assert_eq!(status, StatusCode::OK, "{done}");
        assert_eq!(done["process_instance"]["status"], "complete", "{done}");
        assert_eq!(done["task_data"]["outcome"], outcome, "{done}");
        assert_eq!(
            done["task_data"].get("reserved").is_some(),
            reserved,
            "{done}"
        );
    }
}

/// A call activity whose process comes in a file uploaded after the caller's: until then the
/// call fails when reached; then the called process runs inside the instance, and a message
/// is correlated to the receive waiting inside it.
#[tokio::test]
async fn a_call_activity_runs_a_process_uploaded_after_its_caller() {
    let app = spawn_app().await;
    let caller = caller_of("shipping");
    upload_ok(&app, "calls/order", "a_order.bpmn", &caller).await;
    let (status, body) = start(&app, "calls/order", &json!({"order_id": "o1"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "error", "{body}");
    assert_eq!(
        body["process_instance"]["error"]["element_id"], "ship",
        "{body}"
    );

    let callee = shipping("v1");
    upload_ok(&app, "calls/order", "b_shipping.bpmn", &callee).await;
    let id = start_ok(&app, "calls/order", &json!({"order_id": "o2"})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    let waiting = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["state"] == "WAITING")
        .unwrap()
        .clone();
    assert_eq!(waiting["element_id"], "ship/wait", "{shown}");

    let (status, sent) = send(
        &app,
        "shipped",
        &json!({"order_id": "o2", "carrier": "x"}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["process_instance"]["id"], id, "{sent}");
    assert_eq!(sent["process_instance"]["status"], "complete", "{sent}");
    assert_eq!(sent["task_data"]["shipment"]["carrier"], "x", "{sent}");
}

/// `order` calls `shipping`, a process of another model: a receive inside it takes a message,
/// and its script's result comes back to the caller.
fn caller_of(called: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="ship" />
    <bpmn:callActivity id="ship" calledElement="{called}" />
    <bpmn:sequenceFlow id="f1" sourceRef="ship" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

fn shipping(label: &str) -> String {
    definitions(&format!(
        r#"<bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_shipped"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_shipped" name="shipped" />
  <bpmn:process id="shipping" isExecutable="true">
    <bpmn:startEvent id="s_start" />
    <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="wait" />
    <bpmn:receiveTask id="wait" messageRef="m_shipped">
      <bpmn:extensionElements>
        <spiffworkflow:messageVariable>shipment</spiffworkflow:messageVariable>
        <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>order_id</spiffworkflow:propertyId><spiffworkflow:expression>order_id</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
      </bpmn:extensionElements>
    </bpmn:receiveTask>
    <bpmn:sequenceFlow id="s1" sourceRef="wait" targetRef="label" />
    <bpmn:scriptTask id="label"><bpmn:script>label = "{label}"</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="s2" sourceRef="label" targetRef="s_end" />
    <bpmn:endEvent id="s_end" />
  </bpmn:process>"#
    ))
}

async fn ship(app: &crate::helpers::TestApp, order_id: &str) -> serde_json::Value {
    let (status, sent) = send(app, "shipped", &json!({"order_id": order_id}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    sent
}

/// A call activity finds its process in another model (uploaded after the caller): until then
/// the call fails the instance when reached; then each instance runs the callee's version
/// current when it first called it, whatever is uploaded meanwhile.
#[tokio::test]
async fn a_call_activity_runs_a_process_of_another_model_on_the_version_it_started_with() {
    let app = spawn_app().await;
    upload_ok(&app, "calls/order", "order.bpmn", &caller_of("shipping")).await;
    let (status, body) = start(&app, "calls/order", &json!({"order_id": "o1"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let error = &body["process_instance"]["error"];
    assert_eq!(body["process_instance"]["status"], "error", "{body}");
    assert_eq!(error["element_id"], "ship", "{body}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("The called process 'shipping' was not found"),
        "{body}"
    );

    upload_ok(&app, "calls/shipping", "shipping.bpmn", &shipping("v1")).await;
    let first = start_ok(&app, "calls/order", &json!({"order_id": "o2"})).await;
    let shown = show(&app, first).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    let waiting: Vec<&str> = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["state"] == "WAITING")
        .map(|t| t["element_id"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["ship/wait"], "{shown}");
    // the tree: which process each task belongs to
    let process_of = |element: &str| {
        shown["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["element_id"] == element)
            .map(|t| t["process_id"].clone())
            .unwrap()
    };
    assert_eq!(process_of("ship"), "order", "{shown}");
    assert_eq!(process_of("ship/wait"), "shipping", "{shown}");

    // a new version of the callee: the waiting instance keeps the one it started with
    upload_ok(&app, "calls/shipping", "shipping.bpmn", &shipping("v2")).await;
    let second = start_ok(&app, "calls/order", &json!({"order_id": "o3"})).await;
    let sent = ship(&app, "o2").await;
    assert_eq!(sent["process_instance"]["id"], first, "{sent}");
    assert_eq!(sent["process_instance"]["status"], "complete", "{sent}");
    assert_eq!(sent["task_data"]["label"], "v1", "{sent}");
    let sent = ship(&app, "o3").await;
    assert_eq!(sent["process_instance"]["id"], second, "{sent}");
    assert_eq!(sent["task_data"]["label"], "v2", "{sent}");
}

/// Process ids are looked up across models, so a second model defining one is refused, with
/// both names.
#[tokio::test]
async fn two_models_may_not_define_the_same_process_id() {
    let app = spawn_app().await;
    upload_ok(&app, "calls/shipping", "shipping.bpmn", &shipping("v1")).await;
    let (status, body) = upload(&app, "calls/other", "shipping.bpmn", &shipping("v1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "process_id_conflict", "{body}");
    assert_eq!(body["process_id"], "shipping", "{body}");
    assert_eq!(body["process_model_identifier"], "calls/shipping", "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("calls/shipping") && detail.contains("calls/other"),
        "{body}"
    );
    // the model itself may define it again (a new version)
    upload_ok(&app, "calls/shipping", "shipping.bpmn", &shipping("v2")).await;
}

/// An error thrown inside a process of another model reaches the call activity's boundary.
#[tokio::test]
async fn an_error_in_a_called_process_of_another_model_reaches_the_call_activity() {
    let app = spawn_app().await;
    let caller = definitions(
        r#"<bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="ship" />
    <bpmn:callActivity id="ship" calledElement="failing" />
    <bpmn:sequenceFlow id="f1" sourceRef="ship" targetRef="done" />
    <bpmn:endEvent id="done" />
    <bpmn:boundaryEvent id="failed" attachedToRef="ship"><bpmn:errorEventDefinition /></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="failed" targetRef="handled" />
    <bpmn:endEvent id="handled" />
  </bpmn:process>"#,
    );
    let callee = definitions(
        r#"<bpmn:error id="e_out" errorCode="out_of_stock" />
  <bpmn:process id="failing" isExecutable="true">
    <bpmn:startEvent id="s_start" />
    <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="s_end" />
    <bpmn:endEvent id="s_end"><bpmn:errorEventDefinition errorRef="e_out" /></bpmn:endEvent>
  </bpmn:process>"#,
    );
    upload_ok(&app, "calls/failing", "failing.bpmn", &callee).await;
    upload_ok(&app, "calls/order", "order.bpmn", &caller).await;
    let id = start_ok(&app, "calls/order", &json!({})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(
        shown["data"]["error"]["error_code"], "out_of_stock",
        "{shown}"
    );
    let handled = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["element_id"] == "handled" && t["state"] == "COMPLETED");
    assert!(handled, "{shown}");
}

/// Models stored before process ids were indexed are indexed at startup, and their process
/// ids are then taken: another model defining one is refused.
#[tokio::test]
async fn the_processes_of_models_stored_before_the_index_are_indexed() {
    let app = spawn_app().await;
    upload_ok(&app, "calls/shipping", "shipping.bpmn", &shipping("v1")).await;
    // as a database migrated from before the index holds it
    sqlx::query("DELETE FROM process_definitions")
        .execute(&app.pool)
        .await
        .unwrap();
    workflow_backend::services::models::index_process_definitions(&app.pool, &app.state.models)
        .await
        .unwrap();
    let indexed: Vec<(String, String)> =
        sqlx::query_as("SELECT process_id, process_model_identifier FROM process_definitions")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        indexed,
        [("shipping".to_string(), "calls/shipping".to_string())]
    );
    let (status, body) = upload(&app, "calls/other", "shipping.bpmn", &shipping("v1")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "process_id_conflict", "{body}");
}
