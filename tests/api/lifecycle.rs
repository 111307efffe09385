//! Operators' commands over HTTP on a real database: suspend, resume, terminate, retry; and
//! what a suspended instance does with a message or a timer that arrives meanwhile. No
//! background worker runs: the tests fire timers themselves with the timer worker's one-shot
//! round, at a `now` of their choosing.

use crate::domain::*;
use crate::helpers::{problem, spawn_app_without_workers, TestApp};
use crate::models::{definitions, keyed_waiter, user_task_process, waits_an_hour};
use chrono::{Duration, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};
use workflow_backend::workers::timer_firer::fire_due_once;

/// POST /v1.0/process-instances/{id}/{command} with a token of `scope`.
async fn command_as(app: &TestApp, id: i64, command: &str, scope: &str) -> (StatusCode, Value) {
    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/{command}"),
            &Value::Null,
            scope,
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn command(app: &TestApp, id: i64, command: &str) -> (StatusCode, Value) {
    command_as(app, id, command, ADMIN).await
}

/// The command is refused with 409 and `code`.
async fn assert_refused(app: &TestApp, id: i64, name: &str, code: &str) {
    let (status, body) = command(app, id, name).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::CONFLICT, Some(code)),
        "{name}: {body}"
    );
}

async fn command_ok(app: &TestApp, id: i64, name: &str) -> Value {
    let (status, body) = command(app, id, name).await;
    assert_eq!(status, StatusCode::OK, "{name}: {body}");
    body
}

/// start -> fork -> user task `approve`, receive `ping` (keyed), timer PT1H -> each to an end.
fn three_waits() -> String {
    definitions(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_ping"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_ping" name="three ping" />
  <bpmn:process id="three" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="fork" />
    <bpmn:parallelGateway id="fork" />
    <bpmn:sequenceFlow id="f1" sourceRef="fork" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="ping" />
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="wait" />
    <bpmn:userTask id="approve" />
    <bpmn:intermediateCatchEvent id="ping"><bpmn:messageEventDefinition messageRef="m_ping"><bpmn:extensionElements>
      <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>key</spiffworkflow:propertyId><spiffworkflow:expression>key</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
    </bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f4" sourceRef="approve" targetRef="e1" />
    <bpmn:sequenceFlow id="f5" sourceRef="ping" targetRef="e2" />
    <bpmn:sequenceFlow id="f6" sourceRef="wait" targetRef="e3" />
    <bpmn:endEvent id="e1" /><bpmn:endEvent id="e2" /><bpmn:endEvent id="e3" />
  </bpmn:process>"#,
    )
}

/// start -> script `total = amount * rate` -> user task `check` -> end: fails while `rate`
/// is not in the data.
fn needs_a_rate() -> String {
    definitions(
        r#"<bpmn:process id="rated" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="price" />
    <bpmn:scriptTask id="price"><bpmn:script>total = amount * get_secret("rate_factor").count("x")</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="price" targetRef="check" />
    <bpmn:manualTask id="check" />
    <bpmn:sequenceFlow id="f3" sourceRef="check" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// The instance's receives, as the message list shows them.
async fn receives_of(app: &TestApp, id: i64) -> Vec<Value> {
    messages(
        app,
        &format!("process_instance_id={id}&message_type=receive"),
    )
    .await
}

fn status_of(body: &Value) -> &str {
    body["process_instance"]["status"]
        .as_str()
        .unwrap_or_else(|| body["status"].as_str().unwrap_or(""))
}

#[tokio::test]
async fn a_message_for_a_suspended_instance_is_buffered_and_delivered_on_resume() {
    let app = spawn_app_without_workers().await;
    upload_ok(
        &app,
        "ops/waiter",
        "w.bpmn",
        &keyed_waiter("waiter", "ping"),
    )
    .await;
    let id = start_ok(&app, "ops/waiter", &json!({"key": "k1"})).await;
    let suspended = command_ok(&app, id, "suspend").await;
    assert_eq!(status_of(&suspended), "suspended", "{suspended}");
    // the receive stays on the list, waiting, with the stored status saying why it takes nothing
    let receives = receives_of(&app, id).await;
    assert_eq!(receives[0]["status"], "suspended");
    assert_eq!(receives[0]["state"], "waiting");

    // without buffering: refused, as if nothing waited (the rule documented on /suspend)
    let (status, refused) = send(&app, "ping", &json!({"key": "k1"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error_code"], "message_not_accepted");
    // with buffering: buffered until the instance is resumed
    let uuid = uuid::Uuid::new_v4().to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, buffered) = send(&app, "ping", &json!({"key": "k1", "n": 2}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{buffered}");
    assert_eq!(buffered["message_instance"]["state"], "buffered");
    assert_eq!(show(&app, id).await["status"], "suspended");

    let resumed = command_ok(&app, id, "resume").await;
    assert_eq!(status_of(&resumed), "complete", "{resumed}");
    assert_eq!(
        resumed["task_data"]["received"],
        json!({"key": "k1", "n": 2})
    );
    let sent = messages(&app, "name=ping&message_type=send").await;
    let states: Vec<&str> = sent.iter().map(|m| m["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["completed", "rejected"], "{sent:?}");
}

#[tokio::test]
async fn a_timer_due_while_suspended_fires_on_resume_and_never_before() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "ops/hour", "h.bpmn", &waits_an_hour()).await;
    let id = start_ok(&app, "ops/hour", &json!({})).await;
    command_ok(&app, id, "suspend").await;
    let later = Utc::now() + Duration::hours(2);
    let round = fire_due_once(&app.state, later).await;
    assert_eq!(
        round.claimed, 0,
        "a suspended instance's timer is held: {round:?}"
    );
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "suspended");
    assert_eq!(shown["pending_timers"].as_array().unwrap().len(), 1);

    let resumed = command_ok(&app, id, "resume").await;
    assert_eq!(status_of(&resumed), "waiting");
    let round = fire_due_once(&app.state, later).await;
    assert_eq!((round.claimed, round.fired), (1, 1), "{round:?}");
    assert_eq!(show(&app, id).await["status"], "complete");
}

#[tokio::test]
async fn a_suspended_instance_takes_no_task_completion_until_resumed() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "ops/approve", "a.bpmn", &user_task_process("approve")).await;
    let id = start_ok(&app, "ops/approve", &json!({"amount": 2})).await;
    let guid = waiting_task(&app, id, "approve").await;
    command_ok(&app, id, "suspend").await;
    // twice: no change
    let again = command_ok(&app, id, "suspend").await;
    assert_eq!(status_of(&again), "suspended");
    let (status, refused) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error_code"], "process_instance_suspended");

    let resumed = command_ok(&app, id, "resume").await;
    assert_eq!(status_of(&resumed), "user_input_required");
    let (status, done) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(status_of(&done), "complete");
    assert_eq!(done["task_data"]["total"], json!(4));
}

#[tokio::test]
async fn terminate_cancels_every_live_task_timer_and_receive_in_one_go() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "ops/three", "t.bpmn", &three_waits()).await;
    let id = start_ok(&app, "ops/three", &json!({"key": "t1"})).await;
    assert_eq!(show(&app, id).await["status"], "user_input_required");

    let terminated = command_ok(&app, id, "terminate").await;
    assert_eq!(status_of(&terminated), "terminated", "{terminated}");
    let shown = show(&app, id).await;
    assert!(
        shown["pending_timers"].as_array().unwrap().is_empty(),
        "{shown}"
    );
    for element in ["approve", "ping", "wait"] {
        let task = shown["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["element_id"] == element)
            .unwrap_or_else(|| panic!("no task {element}: {shown}"));
        assert_eq!(task["state"], "CANCELLED", "{element}: {shown}");
    }
    let receives = receives_of(&app, id).await;
    assert_eq!(receives[0]["status"], "cancelled");
    assert_eq!(receives[0]["state"], "cancelled");
    let (status, _) = send(&app, "three ping", &json!({"key": "t1"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "nothing waits any more");
    let round = fire_due_once(&app.state, Utc::now() + Duration::hours(2)).await;
    assert_eq!(round.claimed, 0, "{round:?}");
    // twice: no change; and a terminated instance cannot be suspended or resumed
    assert_eq!(
        status_of(&command_ok(&app, id, "terminate").await),
        "terminated"
    );
    assert_refused(&app, id, "suspend", "process_instance_finished").await;
    assert_refused(&app, id, "resume", "process_instance_not_suspended").await;
}

#[tokio::test]
async fn a_suspended_instance_can_be_terminated_and_its_receive_closes() {
    let app = spawn_app_without_workers().await;
    upload_ok(
        &app,
        "ops/waiter",
        "w.bpmn",
        &keyed_waiter("waiter", "ping"),
    )
    .await;
    let id = start_ok(&app, "ops/waiter", &json!({"key": "k2"})).await;
    command_ok(&app, id, "suspend").await;
    command_ok(&app, id, "terminate").await;
    let receives = receives_of(&app, id).await;
    assert_eq!(receives[0]["status"], "cancelled");
}

#[tokio::test]
async fn retry_runs_the_failed_task_again_once_its_cause_is_fixed() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "ops/rated", "r.bpmn", &needs_a_rate()).await;
    let (status, started) = start(&app, "ops/rated", &json!({"amount": 5})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(status_of(&started), "error", "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    assert_refused(&app, id, "resume", "process_instance_not_suspended").await;
    assert_refused(&app, id, "suspend", "process_instance_finished").await;

    // still failing: back in error
    let again = command_ok(&app, id, "retry").await;
    assert_eq!(status_of(&again), "error", "{again}");

    // the operator fixes the cause, then retries
    let response = app
        .request(reqwest::Method::PUT, "/v1.0/secrets/rate_factor")
        .bearer_auth(app.token(ADMIN))
        .json(&json!({"value": "xxx"}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let retried = command_ok(&app, id, "retry").await;
    assert_eq!(status_of(&retried), "user_input_required", "{retried}");
    assert_eq!(retried["task_data"]["total"], json!(15));
    assert!(retried["process_instance"]["error"].is_null(), "{retried}");
    let shown = show(&app, id).await;
    let price = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["element_id"] == "price")
        .unwrap();
    assert_eq!(price["state"], "COMPLETED", "{shown}");

    assert_refused(&app, id, "retry", "process_instance_not_in_error").await;
}

#[tokio::test]
async fn commands_need_the_update_scope_and_an_existing_instance() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "ops/approve", "a.bpmn", &user_task_process("approve")).await;
    let id = start_ok(&app, "ops/approve", &json!({"amount": 1})).await;
    for name in ["suspend", "resume", "terminate", "retry"] {
        let (status, body) = command_as(&app, id, name, "instances:read:ops/approve").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}: {body}");
        let (status, body) = command(&app, 999_999, name).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        assert_eq!(body["error_code"], "process_instance_not_found");
    }
    let (status, body) = command_as(&app, id, "suspend", "instances:update:ops/approve").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // a token for another model learns nothing about this instance
    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/terminate"),
            &Value::Null,
            "instances:update:other",
        )
        .await;
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}
