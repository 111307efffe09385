//! Running instances keep the model version they started with; migration moves them when the
//! target version can carry their live tasks (issue 8).

use crate::domain::*;
use crate::helpers::{problem, spawn_app, TestApp};
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};

const MODEL: &str = "hr/leave";

/// start -> user task `{task}` -> script `{script}` -> end.
fn approval(task: &str, script: &str) -> String {
    models::definitions(&format!(
        r#"<bpmn:process id="leave" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="{task}" />
    <bpmn:userTask id="{task}" name="Approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="{task}" targetRef="after" />
    <bpmn:scriptTask id="after"><bpmn:script>{script}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// start -> catch `{catch}` (message `ping`, keyed by `key`) -> end.
fn waiter(catch: &str) -> String {
    models::keyed_waiter("pinger", "ping").replace("\"wait\"", &format!("\"{catch}\""))
}

/// Uploads a version of `hr/leave` (see [`approval`]).
async fn upload_leave(app: &TestApp, task: &str, script: &str) {
    upload_ok(app, MODEL, "leave.bpmn", &approval(task, script)).await;
}

async fn version_of(app: &TestApp, id: i64) -> String {
    show(app, id).await["process_model_version"]
        .as_str()
        .expect("an instance shows its version")
        .to_string()
}

async fn migrate(app: &TestApp, id: i64, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/v1.0/process-instances/{id}/migrate")))
        .bearer_auth(app.token(ADMIN))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_old_instance_completes_on_its_version_after_an_incompatible_upload() {
    let app = spawn_app().await;
    upload_leave(&app, "approve", "path = 'v1'").await;
    let old = start_ok(&app, MODEL, &json!({})).await;
    let v1 = version_of(&app, old).await;
    let guid = waiting_task(&app, old, "approve").await;

    // the waiting element is renamed in the new version
    upload_leave(&app, "approve_v2", "path = 'v2'").await;
    let (_, model) = get(&app, "/v1.0/process-models/hr:leave").await;
    let v2 = model["current_version"].as_str().unwrap().to_string();
    assert_ne!(v1, v2);
    let in_use: Vec<&str> = model["versions_in_use"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version_sha"].as_str().unwrap())
        .collect();
    assert_eq!(in_use, vec![v1.as_str()], "{model}");

    let (status, body) = complete_task(&app, old, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete");
    assert_eq!(body["task_data"]["path"], "v1");

    let new = start_ok(&app, MODEL, &json!({})).await;
    assert_eq!(version_of(&app, new).await, v2);
    waiting_task(&app, new, "approve_v2").await;
    let (_, model) = get(&app, "/v1.0/process-models/hr:leave").await;
    assert_eq!(model["versions_in_use"][0]["version_sha"], v2.as_str());
    assert_eq!(model["versions_in_use"][0]["current"], true);
}

/// An instance in error can be retried (on its version), so its version is still in use.
#[tokio::test]
async fn an_instance_in_error_keeps_its_version_in_use() {
    let app = spawn_app().await;
    upload_leave(&app, "approve", "path = 1 / 0").await;
    let failed = start_ok(&app, MODEL, &json!({})).await;
    let v1 = version_of(&app, failed).await;
    let guid = waiting_task(&app, failed, "approve").await;
    let (_, body) = complete_task(&app, failed, &guid, &json!({})).await;
    assert_eq!(body["process_instance"]["status"], "error", "{body}");

    upload_leave(&app, "approve", "path = 'v2'").await;
    let (_, model) = get(&app, "/v1.0/process-models/hr:leave").await;
    assert_eq!(
        model["versions_in_use"][0]["version_sha"],
        v1.as_str(),
        "{model}"
    );
    assert_eq!(model["versions_in_use"][0]["live_instances"], 1, "{model}");
}

#[tokio::test]
async fn a_message_reaches_an_instance_whose_waiting_element_was_renamed_since() {
    let app = spawn_app().await;
    upload_ok(&app, "ops/pinger", "pinger.bpmn", &waiter("wait1")).await;
    let old = start_ok(&app, "ops/pinger", &json!({"key": "k1"})).await;
    upload_ok(&app, "ops/pinger", "pinger.bpmn", &waiter("wait2")).await;
    let (status, body) = send(&app, "ping", &json!({"key": "k1", "n": 1}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["id"], old);
    assert_eq!(body["process_instance"]["status"], "complete");
}

#[tokio::test]
async fn migration_moves_an_instance_when_the_target_carries_its_tasks() {
    let app = spawn_app().await;
    upload_leave(&app, "approve", "path = 'v1'").await;
    let id = start_ok(&app, MODEL, &json!({})).await;
    let v1 = version_of(&app, id).await;
    upload_leave(&app, "approve", "path = 'v2'").await;
    assert_eq!(version_of(&app, id).await, v1, "an upload moves nothing");

    let response = migrate(&app, id, json!({})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["previous_version"], v1.as_str());
    let v2 = version_of(&app, id).await;
    assert_ne!(v1, v2);
    assert_eq!(
        body["process_instance"]["process_model_version"],
        v2.as_str()
    );

    let guid = waiting_task(&app, id, "approve").await;
    let (status, body) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["task_data"]["path"], "v2", "it ran the new version");

    // and back to an explicit older version is possible for a live instance too
    let other = start_ok(&app, MODEL, &json!({})).await;
    let response = migrate(&app, other, json!({ "target_version": v1 })).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(version_of(&app, other).await, v1);
}

#[tokio::test]
async fn migration_is_refused_naming_the_elements_the_target_lacks() {
    let app = spawn_app().await;
    upload_leave(&app, "approve", "path = 'v1'").await;
    let id = start_ok(&app, MODEL, &json!({})).await;
    let v1 = version_of(&app, id).await;
    upload_leave(&app, "approve_v2", "path = 'v2'").await;

    let (status, body) = problem(migrate(&app, id, json!({})).await).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "migration_not_possible");
    assert_eq!(body["elements"][0]["element_id"], "approve", "{body}");
    assert_eq!(version_of(&app, id).await, v1, "nothing moved");

    let (status, body) = problem(migrate(&app, id, json!({"target_version": "nope"})).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (
            StatusCode::NOT_FOUND,
            Some("process_model_version_not_found")
        )
    );
    let (status, body) = problem(migrate(&app, 999_999, json!({})).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("process_instance_not_found"))
    );
    let response = app
        .client
        .post(app.url(&format!("/v1.0/process-instances/{id}/migrate")))
        .bearer_auth(app.token("instances:read:hr/*"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_waiting_correlation_keeps_working_after_a_migration() {
    let app = spawn_app().await;
    upload_ok(&app, "ops/pinger", "pinger.bpmn", &waiter("wait")).await;
    let id = start_ok(&app, "ops/pinger", &json!({"key": "k7"})).await;
    // a compatible new version: same catch, a different end event id
    let v2 = waiter("wait").replace("\"done\"", "\"finished\"");
    upload_ok(&app, "ops/pinger", "pinger.bpmn", &v2).await;
    let response = migrate(&app, id, json!({})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (status, body) = send(&app, "ping", &json!({"key": "k7"}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["id"], id);
    assert_eq!(body["process_instance"]["status"], "complete");
    let shown = show(&app, id).await;
    let ended = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["element_id"] == "finished");
    assert!(ended, "it ended at the new version's end event: {shown}");
}

/// GET a model file as `scope`: (status, content type, body text).
async fn download(app: &TestApp, path: &str, scope: &str) -> (StatusCode, String, String) {
    let response = app.get_as(path, scope).await;
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (
        status,
        content_type,
        response.text().await.unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_file_downloads_as_its_current_version_or_as_any_version_an_instance_ran_on() {
    let app = spawn_app().await;
    let first = approval("approve", "x = 1");
    upload_ok(&app, MODEL, "leave.bpmn", &first).await;
    let id = start_ok(&app, MODEL, &json!({})).await;
    let old = version_of(&app, id).await;
    let second = approval("approve", "x = 2");
    upload_ok(&app, MODEL, "leave.bpmn", &second).await;
    assert_eq!(show(&app, id).await["process_file_name"], "leave.bpmn");

    let path = "/v1.0/process-models/hr:leave/files/leave.bpmn";
    let (status, content_type, body) = download(&app, path, "models:read").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        content_type.starts_with("application/xml"),
        "{content_type}"
    );
    assert_eq!(body, second);
    let (status, _, body) = download(&app, &format!("{path}?version={old}"), "models:read").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, first, "the version the instance runs on");

    for (path, code) in [
        (
            format!("{path}?version=abc123"),
            "process_model_version_not_found",
        ),
        (
            "/v1.0/process-models/hr:leave/files/other.bpmn".to_string(),
            "process_model_file_not_found",
        ),
        (
            "/v1.0/process-models/hr:none/files/leave.bpmn".to_string(),
            "process_model_not_found",
        ),
    ] {
        let (status, body) = problem(app.get_as(&path, "models:read").await).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error_code"], code, "{path}");
    }
    let (status, body) = problem(
        app.get_as(&format!("{path}?version=no%20hex"), "models:read")
            .await,
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_query"))
    );
    let (status, _) = problem(app.get_as(path, "instances:read:*").await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_model_is_deleted_only_when_no_instance_of_it_is_live() {
    let app = spawn_app().await;
    upload_leave(&app, "approve", "x = 1").await;
    let id = start_ok(&app, MODEL, &json!({})).await;
    let delete = |scope: &'static str| {
        app.request(reqwest::Method::DELETE, "/v1.0/process-models/hr:leave")
            .bearer_auth(app.token(scope))
            .send()
    };
    let (status, body) = problem(delete("models:read").await.unwrap()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = problem(delete("models:write").await.unwrap()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "process_model_in_use");
    assert_eq!(body["live_instances"], 1);

    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/terminate"),
            &Value::Null,
            "admin",
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = delete("models:write").await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let (status, body) = get(&app, "/v1.0/process-models/hr:leave").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = problem(delete("models:write").await.unwrap()).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("process_model_not_found"))
    );
    // the terminated instance is still shown; its version went with the model
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "terminated");
    let version = shown["process_model_version"].as_str().unwrap();
    let path = format!("/v1.0/process-models/hr:leave/files/leave.bpmn?version={version}");
    let (status, _) = problem(app.get_as(&path, "models:read").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
