//! Calls of the domain endpoints, shared by the messages, models and instances tests.

use crate::helpers::TestApp;
use reqwest::StatusCode;
use serde_json::Value;

pub const ADMIN: &str = "admin";

/// Uploads one BPMN file of a model (identifier with `/`), as `models:write`.
pub async fn upload(app: &TestApp, model: &str, file: &str, xml: &str) -> (StatusCode, Value) {
    let url = format!(
        "{}/v1.0/process-models/{}/files/{file}",
        app.address,
        model.replace('/', ":")
    );
    let response = app
        .client
        .put(url)
        .bearer_auth(app.token("models:write"))
        .header("Content-Type", "application/xml")
        .body(xml.to_string())
        .send()
        .await
        .expect("upload request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Uploads a model and insists that it loads.
pub async fn upload_ok(app: &TestApp, model: &str, file: &str, xml: &str) {
    let (status, body) = upload(app, model, file, xml).await;
    assert!(
        status.is_success(),
        "upload of {model}/{file}: {status} {body}"
    );
}

/// POST /v1.0/messages/{name} with optional query parameters, as `admin`.
pub async fn send(
    app: &TestApp,
    name: &str,
    payload: &Value,
    query: &[(&str, &str)],
) -> (StatusCode, Value) {
    send_to(&app.address, app, name, payload, query).await
}

/// The same, against another server of the same database.
pub async fn send_to(
    address: &str,
    app: &TestApp,
    name: &str,
    payload: &Value,
    query: &[(&str, &str)],
) -> (StatusCode, Value) {
    let query: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect();
    let url = format!(
        "{address}/v1.0/messages/{}?{}",
        urlencode(name),
        query.join("&")
    );
    let response = app
        .client
        .post(url)
        .bearer_auth(app.token(ADMIN))
        .json(payload)
        .send()
        .await
        .expect("message request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// POST /v1.0/process-instances/{model} with initial data, as `admin`.
pub async fn start(app: &TestApp, model: &str, data: &Value) -> (StatusCode, Value) {
    let url = format!(
        "{}/v1.0/process-instances/{}",
        app.address,
        model.replace('/', ":")
    );
    let response = app
        .client
        .post(url)
        .bearer_auth(app.token(ADMIN))
        .json(data)
        .send()
        .await
        .expect("start request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Starts an instance and returns its id, insisting on 201.
pub async fn start_ok(app: &TestApp, model: &str, data: &Value) -> i64 {
    let (status, body) = start(app, model, data).await;
    assert_eq!(status, StatusCode::CREATED, "start {model}: {body}");
    body["process_instance"]["id"]
        .as_i64()
        .expect("instance id")
}

/// GET /v1.0/process-instances/{id}, as `admin`.
pub async fn show(app: &TestApp, id: i64) -> Value {
    get(app, &format!("/v1.0/process-instances/{id}")).await.1
}

/// GET a path as `admin`.
pub async fn get(app: &TestApp, path: &str) -> (StatusCode, Value) {
    let response = app
        .client
        .get(format!("{}{path}", app.address))
        .bearer_auth(app.token(ADMIN))
        .send()
        .await
        .expect("get request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// PUT /v1.0/tasks/{instance}/{guid} with data, as `admin`.
pub async fn complete_task(
    app: &TestApp,
    instance: i64,
    guid: &str,
    data: &Value,
) -> (StatusCode, Value) {
    let response = app
        .client
        .put(format!("{}/v1.0/tasks/{instance}/{guid}", app.address))
        .bearer_auth(app.token(ADMIN))
        .json(data)
        .send()
        .await
        .expect("task request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The guid of the instance's live task at `element_id`.
pub async fn waiting_task(app: &TestApp, instance: i64, element_id: &str) -> String {
    let shown = show(app, instance).await;
    shown["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| {
            t["element_id"] == element_id
                && ["WAITING", "READY", "STARTED"].contains(&t["state"].as_str().unwrap_or(""))
        })
        .unwrap_or_else(|| panic!("no live task {element_id} in {shown}"))["guid"]
        .as_str()
        .expect("guid")
        .to_string()
}

/// Message instances as the audit list shows them, filtered by `query`.
pub async fn messages(app: &TestApp, query: &str) -> Vec<Value> {
    let (status, body) = get(app, &format!("/v1.0/messages?per_page=500&{query}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["results"].as_array().expect("results").clone()
}
