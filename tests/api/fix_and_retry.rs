//! Fix the model, then retry (issue 32, item 8), as a new user does it over HTTP: a script
//! fails, the fixed model is uploaded, and the instance runs the fix.

use crate::domain::*;
use crate::helpers::{spawn_app_without_workers, TestApp};
use crate::models::scripted;
use reqwest::StatusCode;
use serde_json::{json, Value};

const MODEL: &str = "ops/fixme";

const BROKEN: &str = "total = amount * rate";
const FIXED: &str = "total = amount * 2";

/// Uploads the broken model and starts an instance: it is in error at `price`.
async fn failed_instance(app: &TestApp) -> (i64, String) {
    upload_ok(app, MODEL, "fixme.bpmn", &scripted("price", BROKEN)).await;
    let (status, started) = start(app, MODEL, &json!({"amount": 5})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(started["process_instance"]["status"], "error", "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    (id, version_of(app, id).await)
}

async fn version_of(app: &TestApp, id: i64) -> String {
    show(app, id).await["process_model_version"]
        .as_str()
        .expect("an instance shows its version")
        .to_string()
}

async fn current_version(app: &TestApp) -> String {
    let (status, model) = get(
        app,
        &format!("/v1.0/process-models/{}", MODEL.replace('/', ":")),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{model}");
    model["current_version"].as_str().unwrap().to_string()
}

async fn post(app: &TestApp, id: i64, command: &str, body: Option<Value>) -> (StatusCode, Value) {
    let request = app
        .client
        .post(app.url(&format!("/v1.0/process-instances/{id}/{command}")))
        .bearer_auth(app.token(ADMIN));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Upload the fix, migrate the instance in error, retry: the fixed script runs and the
/// instance completes. A retry without the migration runs the version it is on.
#[tokio::test]
async fn an_instance_in_error_moves_to_the_fixed_version_and_completes_on_retry() {
    let app = spawn_app_without_workers().await;
    let (id, v1) = failed_instance(&app).await;
    upload_ok(&app, MODEL, "fixme.bpmn", &scripted("price", FIXED)).await;
    let v2 = current_version(&app).await;
    assert_ne!(v1, v2);

    // a plain retry runs the instance's own version: the broken script again
    let (status, again) = post(&app, id, "retry", None).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["process_instance"]["status"], "error", "{again}");

    let (status, moved) = post(&app, id, "migrate", Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert_eq!(moved["previous_version"], v1.as_str(), "{moved}");
    assert_eq!(moved["process_instance"]["status"], "error", "{moved}");
    assert_eq!(version_of(&app, id).await, v2);

    let (status, retried) = post(&app, id, "retry", None).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(
        retried["process_instance"]["status"], "user_input_required",
        "{retried}"
    );
    assert_eq!(retried["task_data"]["total"], json!(10));
    let check = waiting_task(&app, id, "check").await;
    let (status, done) = complete_task(&app, id, &check, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");

    // a complete instance does not move
    let (status, body) = post(&app, id, "migrate", Some(json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "migration_not_possible");
}

/// Retry takes the version to move to, and does both in one step.
#[tokio::test]
async fn retry_with_a_target_version_runs_the_fix_in_one_step() {
    let app = spawn_app_without_workers().await;
    let (id, v1) = failed_instance(&app).await;
    upload_ok(&app, MODEL, "fixme.bpmn", &scripted("price", FIXED)).await;
    let v2 = current_version(&app).await;

    let (status, body) = post(&app, id, "retry", Some(json!({"target_version": "nope"}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error_code"], "process_model_version_not_found");
    let (status, body) = post(&app, id, "retry", Some(json!({"version": v2}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "invalid_json");
    assert_eq!(version_of(&app, id).await, v1, "nothing moved");

    let (status, retried) = post(&app, id, "retry", Some(json!({ "target_version": v2 }))).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(
        retried["process_instance"]["status"], "user_input_required",
        "{retried}"
    );
    assert_eq!(retried["task_data"]["total"], json!(10));
    assert_eq!(version_of(&app, id).await, v2);
}

/// The failed task must be in the target version: a fix that renamed it cannot be retried
/// there, and nothing moves.
#[tokio::test]
async fn an_instance_in_error_does_not_move_to_a_version_without_its_failed_task() {
    let app = spawn_app_without_workers().await;
    let (id, v1) = failed_instance(&app).await;
    upload_ok(&app, MODEL, "fixme.bpmn", &scripted("price_v2", FIXED)).await;
    let v2 = current_version(&app).await;

    let (status, body) = post(&app, id, "migrate", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "migration_not_possible");
    assert_eq!(body["elements"][0]["element_id"], "price", "{body}");
    let (status, body) = post(&app, id, "retry", Some(json!({ "target_version": v2 }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "migration_not_possible");
    assert_eq!(version_of(&app, id).await, v1);
    assert_eq!(show(&app, id).await["status"], "error");
}
