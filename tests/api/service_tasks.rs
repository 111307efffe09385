//! Service tasks through a real fake connector proxy (an HTTP server on 127.0.0.1 that the
//! test scripts), and the authenticated callback.

use crate::domain::*;
use crate::helpers::{spawn_app_with, TestApp};
use crate::models;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the fake proxy received it.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Script {
    answers: VecDeque<(u16, Value)>,
    received: Vec<Received>,
}

struct FakeProxy {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl FakeProxy {
    fn start() -> FakeProxy {
        let script = Arc::new(Mutex::new(Script::default()));
        let data = web::Data::from(script.clone());
        let server = HttpServer::new(move || {
            App::new().app_data(data.clone()).default_service(web::to(
                |req: HttpRequest, body: web::Bytes, script: web::Data<Mutex<Script>>| async move {
                    let mut script = script.lock().unwrap();
                    script.received.push(Received {
                        path: req.path().to_string(),
                        headers: req
                            .headers()
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                            .collect(),
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                    let (status, answer) = script.answers.pop_front().unwrap_or((500, json!({})));
                    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
                        .json(answer)
                },
            ))
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let url = format!("http://{}", server.addrs()[0]);
        tokio::spawn(server.run());
        FakeProxy { url, script }
    }

    fn answer(&self, status: u16, body: Value) {
        self.script
            .lock()
            .unwrap()
            .answers
            .push_back((status, body));
    }

    fn received(&self) -> Vec<Received> {
        self.script.lock().unwrap().received.clone()
    }
}

fn envelope(body: Value, http_status: u16) -> Value {
    json!({
        "command_response": {"body": body, "mimetype": "application/json", "http_status": http_status},
        "command_response_version": 2,
        "error": null,
        "wf__logs": ["called upstream"],
    })
}

/// start -> service task `call` (demo/Echo, parameter `word`) -> end; an error boundary
/// catching `bad_thing` leads to `caught`.
fn service_model(retries: &str) -> String {
    models::definitions(&format!(
        r#"<bpmn:error id="err" errorCode="bad_thing" />
  <bpmn:process id="svc" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
    <bpmn:serviceTask id="call" name="Call">
      <bpmn:extensionElements>
        <spiffworkflow:serviceTaskOperator id="demo/Echo" resultVariable="result">
          <spiffworkflow:parameters><spiffworkflow:parameter id="word" type="str" value="word" /></spiffworkflow:parameters>
          {retries}
        </spiffworkflow:serviceTaskOperator>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="done" />
    <bpmn:endEvent id="done" />
    <bpmn:boundaryEvent id="on_bad" attachedToRef="call"><bpmn:errorEventDefinition id="ed" errorRef="err" /></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="on_bad" targetRef="caught" />
    <bpmn:endEvent id="caught" />
  </bpmn:process>"#
    ))
}

async fn app_with_proxy(proxy: &FakeProxy, retries: &str) -> TestApp {
    let url = proxy.url.clone();
    let app = spawn_app_with(move |s| {
        s.connector_proxy_url = Some(url);
        s.connector_proxy_api_key = Some("proxy-key".into());
    })
    .await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model(retries)).await;
    app
}

async fn wait_for(app: &TestApp, id: i64, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        let shown = show(app, id).await;
        if done(&shown) {
            return shown;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("instance {id} never got there: {}", show(app, id).await);
}

fn task_state<'a>(shown: &'a Value, element: &str) -> &'a str {
    shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|t| t["element_id"] == element)
        .map(|t| t["state"].as_str().unwrap())
        .unwrap_or("")
}

async fn callback(
    app: &TestApp,
    id: i64,
    guid: &str,
    token: Option<&str>,
    body: &Value,
) -> (StatusCode, Value) {
    let mut request = app
        .client
        .put(format!("{}/v1.0/tasks/{id}/{guid}/callback", app.address))
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_synchronous_success_stores_the_command_response_and_runs_on() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(200, envelope(json!({"echo": "hi"}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "hi"})).await;
    let shown = wait_for(&app, id, |s| s["status"] == "complete").await;
    assert_eq!(shown["data"]["result"]["body"], json!({"echo": "hi"}));
    assert_eq!(shown["data"]["result"]["operator_identifier"], "demo/Echo");

    let received = proxy.received();
    assert_eq!(received.len(), 1);
    let call = &received[0];
    assert_eq!(call.path, "/v1/do/demo/Echo");
    assert_eq!(call.header("user-agent"), Some("workflow-backend"));
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert_eq!(call.header("wf-connector-proxy-api-key"), Some("proxy-key"));
    assert_eq!(call.body["word"], "hi");
    assert_eq!(call.body["wf__process_instance_id"], id);
    assert_eq!(call.body["wf__process_model_identifier"], "svc/echo");
    assert_eq!(call.body["wf__task_data"], json!({"word": "hi"}));
    let guid = call.body["wf__task_id"].as_str().unwrap();
    assert_eq!(
        call.body["wf__callback_url"],
        format!(
            "{}/v1.0/tasks/{id}/{guid}/callback",
            app.settings.public_url
        )
    );
    assert!(call.body["wf__callback_token"].is_string());

    let (_, logs) = get(
        &app,
        &format!("/v1.0/process-instances/{id}/connector-logs"),
    )
    .await;
    assert_eq!(logs["results"][0]["line"], "called upstream");
}

#[tokio::test]
async fn an_accepted_call_waits_for_its_callback_which_completes_it_once() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({"job": 1}), 202));
    let id = start_ok(&app, "svc/echo", &json!({"word": "later"})).await;
    let shown = wait_for(&app, id, |s| task_state(s, "call") == "STARTED").await;
    assert_eq!(shown["status"], "waiting");
    let call = proxy.received()[0].body.clone();
    let guid = call["wf__task_id"].as_str().unwrap().to_string();
    let token = call["wf__callback_token"].as_str().unwrap().to_string();

    // no credential, another task's scope, a malformed body
    let body =
        json!({"command_response": {"body": "{\"done\": true}", "mimetype": "application/json"}});
    assert_eq!(
        callback(&app, id, &guid, None, &body).await.0,
        StatusCode::UNAUTHORIZED
    );
    let other = app.token(&format!("callback:{id}/{}", uuid::Uuid::new_v4()));
    assert_eq!(
        callback(&app, id, &guid, Some(&other), &body).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, bad) = callback(&app, id, &guid, Some(&token), &json!({"nothing": 1})).await;
    assert_eq!(
        (status, bad["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_callback_body"))
    );

    // the task's own token completes it; the JSON string body is parsed
    let (status, done) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["process_model_identifier"], "svc/echo");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete");
    assert_eq!(shown["data"]["result"], json!({"done": true}));

    let (status, again) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(
        (status, again["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("not_waiting_for_callback"))
    );
}

#[tokio::test]
async fn callback_paths_that_name_nothing_are_refused() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    wait_for(&app, id, |s| task_state(s, "call") == "STARTED").await;
    let admin = app.token("admin");
    let body = json!({"command_response": {"body": 1, "mimetype": "application/json"}});
    let cases = [
        (
            id.to_string(),
            "not-a-guid".to_string(),
            "callback_not_found",
        ),
        (
            id.to_string(),
            uuid::Uuid::new_v4().to_string(),
            "callback_not_found",
        ),
        (
            "999999".to_string(),
            uuid::Uuid::new_v4().to_string(),
            "process_instance_cannot_be_found",
        ),
    ];
    for (instance, guid, code) in cases {
        let response = app
            .client
            .put(format!(
                "{}/v1.0/tasks/{instance}/{guid}/callback",
                app.address
            ))
            .bearer_auth(&admin)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["error_code"], code, "{instance}/{guid}");
    }
}

#[tokio::test]
async fn an_uncaught_failure_puts_the_instance_in_error_and_a_boundary_catches_its_code() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(
        200,
        json!({"command_response": {}, "error": {"error_code": "other_thing", "message": "nope"}}),
    );
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let shown = wait_for(&app, id, |s| s["status"] == "error").await;
    assert_eq!(shown["error"]["error_code"], "other_thing");
    assert_eq!(shown["error"]["element_id"], "call");

    proxy.answer(400, json!({"command_response": {}, "error": {"error_code": "bad_thing", "message": "caught me"}}));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let shown = wait_for(&app, id, |s| s["status"] == "complete").await;
    assert_eq!(task_state(&shown, "caught"), "COMPLETED", "{shown}");
    assert_eq!(shown["data"]["error"]["error_code"], "bad_thing");
}

#[tokio::test]
async fn transient_failures_are_retried_with_backoff() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(
        &proxy,
        r#"<spiffworkflow:retry retries="2" backoff_base="0.2" />"#,
    )
    .await;
    proxy.answer(503, json!({"command_response": {}, "error": null}));
    proxy.answer(200, envelope(json!({"third": false}), 500));
    proxy.answer(200, envelope(json!({"ok": true}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let shown = wait_for(&app, id, |s| s["status"] == "complete").await;
    assert_eq!(shown["data"]["result"]["body"], json!({"ok": true}));
    assert_eq!(proxy.received().len(), 3);
}
