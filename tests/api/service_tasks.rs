//! Service tasks through a real fake connector proxy (an HTTP server on 127.0.0.1 that the
//! test scripts), and the authenticated callback.
//!
//! No background worker runs: each test drives the connector dispatcher itself, one round at a
//! time ([`dispatch`]), so that what the proxy answered is applied when the round returns and
//! the test looks at the instance then, instead of polling it while a worker races.

use crate::domain::*;
use crate::helpers::{lock_waiter, spawn_app_with, until_a_statement_waits, TestApp};
use crate::models;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use workflow_backend::workers::connector_dispatcher::{
    dispatch_due_once, dispatch_due_once_with, job_runner, record_accepted_calls_once, Round,
};

/// A request as the fake proxy received it.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
    at: std::time::Instant,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One scripted answer of the fake proxy.
#[derive(Debug, Clone, Default)]
struct Answer {
    status: u16,
    /// The body as sent (not necessarily JSON).
    body: String,
    headers: Vec<(String, String)>,
    /// Wait this long before answering.
    delay: Duration,
    /// Before answering, PUT this envelope to the request's callback URL with its token.
    callback_first: Option<Value>,
    /// Before answering, say the call came (the first) and wait for the go (the second).
    gate: Option<(Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>)>,
}

fn answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        body: body.to_string(),
        ..Answer::default()
    }
}

#[derive(Default)]
struct Script {
    answers: VecDeque<Answer>,
    received: Vec<Received>,
    /// Where the engine under test listens (callback URLs carry the configured public URL).
    engine_address: String,
    callback_statuses: Vec<u16>,
}

struct FakeProxy {
    url: String,
    script: Arc<Mutex<Script>>,
}

async fn fake_proxy_handler(
    req: HttpRequest,
    body: web::Bytes,
    script: web::Data<Mutex<Script>>,
) -> HttpResponse {
    let received = Received {
        method: req.method().to_string(),
        path: req.path().to_string(),
        headers: req
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: std::time::Instant::now(),
    };
    let (answer, engine) = {
        let mut script = script.lock().unwrap();
        script.received.push(received.clone());
        let answer = script
            .answers
            .pop_front()
            .unwrap_or_else(|| answer(500, json!({})));
        (answer, script.engine_address.clone())
    };
    // a slow proxy, simulated: the peer takes its time (nothing in the test waits on this)
    tokio::time::sleep(answer.delay).await;
    if let Some((called, go)) = &answer.gate {
        called.notify_one();
        go.notified().await;
    }
    if let Some(envelope) = &answer.callback_first {
        let url = received.body["wf__callback_url"].as_str().unwrap_or("");
        let path = &url[url.find("/v1.0/").unwrap_or(0)..];
        let token = received.body["wf__callback_token"].as_str().unwrap_or("");
        let status = reqwest::Client::new()
            .put(format!("{engine}{path}"))
            .bearer_auth(token)
            .json(envelope)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        script.lock().unwrap().callback_statuses.push(status);
    }
    let mut response =
        HttpResponse::build(actix_web::http::StatusCode::from_u16(answer.status).unwrap());
    for (name, value) in &answer.headers {
        response.insert_header((name.as_str(), value.as_str()));
    }
    response.content_type("application/json").body(answer.body)
}

impl FakeProxy {
    fn start() -> FakeProxy {
        let script = Arc::new(Mutex::new(Script::default()));
        let data = web::Data::from(script.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::to(fake_proxy_handler))
        })
        .workers(2)
        .bind("127.0.0.1:0")
        .unwrap();
        let url = format!("http://{}", server.addrs()[0]);
        tokio::spawn(server.run());
        FakeProxy { url, script }
    }

    fn push(&self, answer: Answer) {
        self.script.lock().unwrap().answers.push_back(answer);
    }

    fn answer(&self, status: u16, body: Value) {
        self.push(answer(status, body));
    }

    fn received(&self) -> Vec<Received> {
        self.script.lock().unwrap().received.clone()
    }

    fn calls(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/do/"))
            .collect()
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

/// A server on `proxy` (workers off, see [`spawn_with_proxy`]) with the echo model uploaded.
async fn app_with_proxy(proxy: &FakeProxy, retries: &str) -> TestApp {
    let app = spawn_with_proxy(proxy, Some("proxy-key"), |_| {}).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model(retries)).await;
    app
}

/// A server pointed at `proxy` whose background workers do not run: a service task's call is
/// made when the test runs a dispatcher round, never behind its back.
async fn spawn_with_proxy(
    proxy: &FakeProxy,
    api_key: Option<&str>,
    customise: impl FnOnce(&mut workflow_backend::config::Settings) + Send,
) -> TestApp {
    let url = proxy.url.clone();
    let api_key = api_key.map(str::to_string);
    let app = spawn_app_with(move |s| {
        s.connector_proxy_url = Some(url);
        s.connector_proxy_api_key = api_key;
        s.run_workers = false;
        customise(s);
    })
    .await;
    proxy.script.lock().unwrap().engine_address = app.address.clone();
    app
}

/// One dispatcher round, which must take `claimed` due jobs and run each to its recorded
/// outcome (none failing or panicking). When it returns, the proxy has answered every call of
/// the round and each answer is applied.
async fn dispatch(app: &TestApp, claimed: usize) {
    let round = dispatch_due_once(&app.state).await;
    assert_eq!(round, clean_round(claimed), "the dispatcher round");
}

/// A dispatcher round that took `claimed` jobs, none failing or panicking.
fn clean_round(claimed: usize) -> Round {
    Round {
        claimed,
        failed: 0,
        panicked: 0,
    }
}

/// Runs dispatcher rounds until the one scheduled job (a retry waiting out its backoff) comes
/// due, and checks the round that ran it as [`dispatch`] does; earlier rounds take nothing.
///
/// A condition poll with a deadline, not a wait for a background effect: the backoff is time
/// that has to pass on the database's clock, and the test itself runs every round. It fails
/// if no job is scheduled, or if none comes due within 10 s.
async fn dispatch_when_due(app: &TestApp) {
    let scheduled = jobs_left(app).await;
    assert_eq!(scheduled, 1, "one retry should be scheduled");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let round = dispatch_due_once(&app.state).await;
        if round.claimed > 0 {
            assert_eq!(round, clean_round(1), "the round that ran the retry");
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the scheduled retry did not come due within 10 s"
        );
        // poll interval while the backoff runs (bounded by the deadline)
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The backoff a failed call's task was given: when its retry is due minus when it failed
/// (both stamped with the time of the transaction that scheduled the retry).
fn scheduled_backoff(shown: &Value, element: &str) -> chrono::Duration {
    let task = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|t| t["element_id"] == element)
        .unwrap();
    let at = |field: &str| {
        chrono::DateTime::parse_from_rfc3339(task[field].as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{field} of {task}: {e}"))
    };
    at("retry_at") - at("updated_at")
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
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["body"], json!({"echo": "hi"}));
    assert_eq!(shown["data"]["result"]["operator_identifier"], "demo/Echo");

    let received = proxy.calls();
    assert_eq!(received.len(), 1);
    let call = &received[0];
    assert_eq!(call.path, "/v1/do/demo/Echo");
    assert_eq!(call.header("user-agent"), Some("workflow-backend"));
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert_eq!(call.header("wf-connector-proxy-api-key"), Some("proxy-key"));
    assert_eq!(call.header("traceparent"), None, "traces are off");
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
    assert_eq!(logs["pagination"]["total"], 1, "{logs}");
    // a page of its own, and pages past the end or out of range
    sqlx::query(
        "INSERT INTO connector_logs (process_instance_id, task_guid, line) \
         SELECT $1, task_guid, 'more ' || i FROM connector_logs, generate_series(1, 600) AS i \
         WHERE process_instance_id = $1",
    )
    .bind(id)
    .execute(&app.pool)
    .await
    .unwrap();
    let logs_path = format!("/v1.0/process-instances/{id}/connector-logs");
    let (_, first) = get(&app, &logs_path).await;
    assert_eq!(first["results"].as_array().unwrap().len(), 500);
    assert_eq!(first["pagination"]["total"], 601, "{}", first["pagination"]);
    let (_, last) = get(&app, &format!("{logs_path}?page=3&per_page=300")).await;
    assert_eq!(last["results"].as_array().unwrap().len(), 1);
    assert!(last["results"][0]["line"]
        .as_str()
        .unwrap()
        .starts_with("more "));
    let (status, refused) = get(&app, &format!("{logs_path}?per_page=501")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(refused["error_code"], "invalid_query");
}

#[tokio::test]
async fn an_accepted_call_waits_for_its_callback_which_completes_it_once() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({"job": 1}), 202));
    let id = start_ok(&app, "svc/echo", &json!({"word": "later"})).await;
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(task_state(&shown, "call"), "STARTED", "{shown}");
    assert_eq!(shown["status"], "waiting");
    let call = proxy.calls()[0].body.clone();
    let guid = call["wf__task_id"].as_str().unwrap().to_string();
    let token = call["wf__callback_token"].as_str().unwrap().to_string();

    // no credential, another task's scope, a malformed body
    let body =
        json!({"command_response": {"body": "{\"done\": true}", "mimetype": "application/json"}});
    assert_eq!(
        callback(&app, id, &guid, None, &body).await.0,
        StatusCode::UNAUTHORIZED
    );
    // another task's scope may not update this one
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

/// Starts `n` instances whose proxy accepts the call (202) and makes their calls: each call's
/// (instance, task guid, callback token).
async fn accepted_calls(app: &TestApp, proxy: &FakeProxy, n: usize) -> Vec<(i64, String, String)> {
    for i in 0..n {
        proxy.answer(202, envelope(json!({"job": i}), 202));
        start_ok(app, "svc/echo", &json!({"word": format!("w{i}")})).await;
    }
    dispatch(app, n).await;
    proxy
        .calls()
        .iter()
        .map(|call| {
            let body = &call.body;
            (
                body["wf__process_instance_id"].as_i64().unwrap(),
                body["wf__task_id"].as_str().unwrap().to_string(),
                body["wf__callback_token"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Waits until `count` callbacks are queued for a batch (a condition poll, 10 s deadline).
async fn until_queued(count: usize, queued: impl Fn() -> usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while queued() < count {
        assert!(std::time::Instant::now() < deadline, "never queued");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The callbacks of `calls` (each a result, `{"done": true}`), sent while every callback runner
/// is held so that they make one batch; once all are queued the runners go, and `meanwhile`
/// runs beside their answers. Each answer, in order, and what `meanwhile` gave.
async fn callbacks_in_one_batch<T>(
    app: &TestApp,
    calls: &[(i64, String, String)],
    meanwhile: impl std::future::Future<Output = T>,
) -> (Vec<(StatusCode, Value)>, T) {
    let body =
        json!({"command_response": {"body": "{\"done\": true}", "mimetype": "application/json"}});
    let callbacks = app.state.callbacks.clone();
    let held = callbacks.hold().await;
    let answers = futures_util::future::join_all(
        calls
            .iter()
            .map(|(id, guid, token)| callback(app, *id, guid, Some(token), &body)),
    );
    let drive = async {
        until_queued(calls.len(), || callbacks.queued()).await;
        drop(held);
        meanwhile.await
    };
    tokio::join!(answers, drive)
}

/// Callbacks that queue while the callback runners are busy are applied in one transaction and
/// each answered after its commit; one that fails in the batch fails alone.
#[tokio::test]
async fn callbacks_that_queue_together_are_committed_together_and_fail_alone() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let calls = accepted_calls(&app, &proxy, 4).await;

    let (answers, ()) = callbacks_in_one_batch(&app, &calls[..3], async {}).await;
    for (status, done) in &answers {
        assert_eq!(*status, StatusCode::OK, "{done}");
        assert_eq!(done["status"], "completed", "{done}");
    }
    let batched: Vec<i64> = calls[..3].iter().map(|(id, _, _)| *id).collect();
    let writers: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT xmin::text FROM process_instances WHERE id = ANY($1)")
            .bind(&batched)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(writers.len(), 1, "one transaction completed the three");

    // the first again (its task no longer waits) with the fourth: the fourth completes
    let again = [calls[0].clone(), calls[3].clone()];
    let (answers, ()) = callbacks_in_one_batch(&app, &again, async {}).await;
    assert_eq!(
        (answers[0].0, answers[0].1["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("not_waiting_for_callback")),
        "{}",
        answers[0].1
    );
    assert_eq!(answers[1].0, StatusCode::OK, "{}", answers[1].1);
    for (id, _, _) in &calls {
        assert_eq!(show(&app, *id).await["status"], "complete");
    }
}

/// A batch of callbacks whose write waits past the batch's lock limit (200 ms) on a job that
/// another transaction holds: Postgres rolls the batch back, and each callback runs alone (and
/// waits, as a callback alone does) instead of both being answered 500.
#[tokio::test]
async fn a_batch_that_waits_too_long_for_a_lock_runs_each_callback_alone() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let calls = accepted_calls(&app, &proxy, 2).await;
    // the first call's job, held as a slow 202 or a dispatcher would hold it
    let mut holder = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM jobs WHERE task_guid = $1::uuid FOR UPDATE")
        .bind(&calls[0].1)
        .execute(&mut *holder)
        .await
        .unwrap();
    let drive = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        // the batch waits for the job, gives up after its limit, and the callback that needs
        // the job waits again alone (a new statement): then the job is let go
        let mut first = None;
        let again = loop {
            match (lock_waiter(&app).await, &first) {
                (Some(waiter), None) => first = Some(waiter),
                (Some(waiter), Some(seen)) if waiter != *seen => break Some(waiter),
                _ => {}
            }
            if std::time::Instant::now() > deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        holder.rollback().await.unwrap();
        again
    };
    let (answers, again) = callbacks_in_one_batch(&app, &calls, drive).await;
    for (status, done) in &answers {
        assert_eq!(*status, StatusCode::OK, "{done}");
        assert_eq!(done["status"], "completed", "{done}");
    }
    assert!(
        again.is_some(),
        "the callback never waited again alone: {answers:?}"
    );
    for (id, _, _) in &calls {
        assert_eq!(show(&app, *id).await["status"], "complete");
    }
}

/// Issue 35: a batch of callbacks locks the instances of all of them in one statement (in the
/// order of their ids) before it applies any: with the last instance's row held by another
/// transaction, the statement that waits for it is that one; let go, every callback completes.
#[tokio::test]
async fn a_batch_of_callbacks_locks_their_instances_in_one_statement() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let mut calls = accepted_calls(&app, &proxy, 3).await;
    calls.sort_by_key(|(id, _, _)| *id);
    let mut holder = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM process_instances WHERE id = $1 FOR UPDATE")
        .bind(calls[2].0)
        .execute(&mut *holder)
        .await
        .unwrap();
    let drive = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let waiting = loop {
            let waiting = lock_waiter(&app).await.map(|(_, _, query)| query);
            if waiting.is_some() || std::time::Instant::now() > deadline {
                break waiting;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        holder.rollback().await.unwrap();
        waiting
    };
    let (answers, waiting) = callbacks_in_one_batch(&app, &calls, drive).await;
    assert_eq!(
        waiting.as_deref(),
        Some(workflow_backend::store::instances::LOCK_ALL),
        "the statement that waited for the held instance"
    );
    for (status, done) in &answers {
        assert_eq!(*status, StatusCode::OK, "{done}");
        assert_eq!(done["status"], "completed", "{done}");
    }
    for (id, _, _) in &calls {
        assert_eq!(show(&app, *id).await["status"], "complete");
    }
}

/// A service task inside a called process of another model: the call is made when the child
/// reaches it, its callback completes the task inside the child, and the result comes back to
/// the caller.
#[tokio::test]
async fn a_service_task_inside_a_called_process_takes_its_callback() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let caller = models::definitions(
        r#"<bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="echo" />
    <bpmn:callActivity id="echo" calledElement="svc" />
    <bpmn:sequenceFlow id="f1" sourceRef="echo" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "calls/order", "order.bpmn", &caller).await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "calls/order", &json!({"word": "inside"})).await;
    dispatch(&app, 1).await;
    let call = &proxy.calls()[0];
    assert_eq!(call.body["word"], "inside", "{:?}", call.body);
    let guid = call.body["wf__task_id"].as_str().unwrap().to_string();
    assert_eq!(task_state(&show(&app, id).await, "echo/call"), "STARTED");
    let success =
        json!({"command_response": {"body": {"echoed": "inside"}, "mimetype": "application/json"}});
    let (status, body) = callback(&app, id, &guid, Some(&app.token("admin")), &success).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["echoed"], "inside", "{shown}");
}

#[tokio::test]
async fn callback_paths_that_name_nothing_are_refused() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
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
        (
            "not-a-number".to_string(),
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
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "{instance}/{guid}"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["error_code"], code, "{instance}/{guid}");
    }
    // JSON only
    let guid = uuid::Uuid::new_v4();
    let response = app
        .client
        .put(format!("{}/v1.0/tasks/{id}/{guid}/callback", app.address))
        .bearer_auth(&admin)
        .header("Content-Type", "text/plain")
        .body("command_response=1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
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
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    assert_eq!(shown["error"]["error_code"], "other_thing");
    assert_eq!(shown["error"]["element_id"], "call");

    proxy.answer(400, json!({"command_response": {}, "error": {"error_code": "bad_thing", "message": "caught me"}}));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
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
    // 503, then an inner 500: each schedules a retry (0.2 s, then 0.04 s) and the task waits
    dispatch(&app, 1).await;
    for (backoff, calls) in [(200, 1), (40, 2)] {
        let shown = show(&app, id).await;
        assert_eq!(task_state(&shown, "call"), "READY", "{shown}");
        assert_eq!(
            scheduled_backoff(&shown, "call"),
            chrono::Duration::milliseconds(backoff)
        );
        assert_eq!(proxy.calls().len(), calls);
        dispatch_when_due(&app).await;
    }
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["body"], json!({"ok": true}));
    assert_eq!(proxy.calls().len(), 3);
}

fn error_envelope(code: &str, http_status: Option<u16>) -> Value {
    json!({
        "command_response": {"body": null, "mimetype": "application/json", "http_status": http_status},
        "command_response_version": 2,
        "error": {"error_code": code, "message": format!("{code} happened")},
        "wf__logs": [],
    })
}

/// The spec's States and Errors tables, each row through the engine: what the proxy answers,
/// and where the instance ends up.
#[tokio::test]
async fn each_kind_of_proxy_answer_is_classified_as_the_spec_orders() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let cases: Vec<(&str, Answer, &str, Option<&str>)> = vec![
        (
            "outer 202, inner 202: waits",
            answer(202, envelope(json!({}), 202)),
            "STARTED",
            None,
        ),
        (
            "outer 202, no inner status: waits",
            answer(
                202,
                json!({"command_response": {"body": {}, "mimetype": "application/json"}, "command_response_version": 2, "error": null, "wf__logs": []}),
            ),
            "STARTED",
            None,
        ),
        (
            "outer 200, inner 202: done at once",
            answer(200, envelope(json!({"x": 1}), 202)),
            "COMPLETED",
            None,
        ),
        (
            "outer 200, inner 500: command failure",
            answer(200, envelope(json!({}), 500)),
            "ERROR",
            Some("http_status_500"),
        ),
        (
            "outer 202, inner 500: failure, not waiting",
            answer(202, envelope(json!({}), 500)),
            "ERROR",
            Some("http_status_500"),
        ),
        (
            "outer 202 with an error: failure at once",
            answer(202, error_envelope("busy", None)),
            "ERROR",
            Some("busy"),
        ),
        (
            "outer 404 minimal envelope",
            answer(
                404,
                json!({"command_response": {}, "error": {"error_code": "command_not_found", "message": "no such command"}}),
            ),
            "ERROR",
            Some("command_not_found"),
        ),
        (
            "outer 500, not JSON: proxy failure",
            Answer {
                status: 500,
                body: "<html>oops</html>".into(),
                ..Answer::default()
            },
            "ERROR",
            Some("invalid_proxy_response"),
        ),
        (
            "outer 401 without envelope: proxy failure",
            answer(401, json!({"detail": "bad key"})),
            "ERROR",
            Some("proxy_http_status_401"),
        ),
        (
            "outer 200, error without error_code: ignored",
            answer(
                200,
                json!({"command_response": {"body": 1, "mimetype": "application/json"}, "error": {"message": "noise"}}),
            ),
            "COMPLETED",
            None,
        ),
        (
            "outer 200, legacy api_response",
            answer(200, json!({"api_response": {"legacy": true}})),
            "COMPLETED",
            None,
        ),
    ];
    for (what, scripted, task_state_expected, error_code) in cases {
        proxy.push(scripted);
        let id = start_ok(&app, "svc/echo", &json!({"word": what})).await;
        dispatch(&app, 1).await;
        let shown = show(&app, id).await;
        assert_eq!(
            task_state(&shown, "call"),
            task_state_expected,
            "{what}: {shown}"
        );
        match error_code {
            Some(code) => {
                assert_eq!(shown["status"], "error", "{what}: {shown}");
                assert_eq!(shown["error"]["error_code"], code, "{what}: {shown}");
            }
            None if task_state_expected == "COMPLETED" => {
                assert_eq!(shown["status"], "complete", "{what}")
            }
            None => assert_eq!(shown["status"], "waiting", "{what}"),
        }
    }
}

#[tokio::test]
async fn without_an_api_key_no_key_header_is_sent() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, None, |_| {}).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    proxy.answer(200, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    assert_eq!(show(&app, id).await["status"], "complete");
    assert_eq!(proxy.calls()[0].header("wf-connector-proxy-api-key"), None);
}

#[tokio::test]
async fn redirects_307_and_308_are_followed_and_301_302_303_refused() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    for status in [307, 308] {
        proxy.push(Answer {
            status,
            body: String::new(),
            headers: vec![(
                "Location".into(),
                format!("{}/elsewhere/v1/do/demo/Echo", proxy.url),
            )],
            ..Answer::default()
        });
        proxy.answer(200, envelope(json!({"via": status}), 200));
        let id = start_ok(&app, "svc/echo", &json!({"word": "r"})).await;
        dispatch(&app, 1).await;
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "{status}: {shown}");
        assert_eq!(shown["data"]["result"]["body"]["via"], status);
        let hop = proxy.received().last().unwrap().clone();
        assert_eq!(hop.path, "/elsewhere/v1/do/demo/Echo");
        assert_eq!(hop.method, "POST");
        assert_eq!(hop.header("wf-connector-proxy-api-key"), Some("proxy-key"));
        assert_eq!(hop.body["word"], "r");
    }
    for status in [301, 302, 303] {
        proxy.push(Answer {
            status,
            body: String::new(),
            headers: vec![("Location".into(), format!("{}/elsewhere", proxy.url))],
            ..Answer::default()
        });
        let id = start_ok(&app, "svc/echo", &json!({"word": "r"})).await;
        dispatch(&app, 1).await;
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "error", "{status}: {shown}");
        assert_eq!(
            shown["error"]["error_code"],
            format!("proxy_http_status_{status}"),
            "{shown}"
        );
        assert!(
            !proxy
                .received()
                .last()
                .unwrap()
                .path
                .starts_with("/elsewhere"),
            "{status} was followed"
        );
    }
}

#[tokio::test]
async fn a_proxy_slower_than_the_timeout_fails_the_task() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("k"), |s| s.connector_timeout_ms = 300).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    // the fake proxy sleeps before it answers: a slow peer, not a wait in the test
    proxy.push(Answer {
        delay: Duration::from_secs(2),
        ..answer(200, envelope(json!({}), 200))
    });
    let id = start_ok(&app, "svc/echo", &json!({"word": "slow"})).await;
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    assert_eq!(
        shown["error"]["error_code"], "connector_proxy_timeout",
        "{shown}"
    );
}

#[tokio::test]
async fn retries_wait_base_to_the_attempt_plus_one_seconds() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(
        &proxy,
        r#"<spiffworkflow:retry retries="1" backoff_base="0.5" />"#,
    )
    .await;
    proxy.answer(429, json!({"command_response": {}, "error": null}));
    proxy.answer(503, json!({"command_response": {}, "error": null}));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    // 0.5 ^ (0 + 1) seconds after the failure
    let waiting = show(&app, id).await;
    assert_eq!(
        scheduled_backoff(&waiting, "call"),
        chrono::Duration::milliseconds(500),
        "{waiting}"
    );
    dispatch_when_due(&app).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    let calls = proxy.calls();
    assert_eq!(calls.len(), 2, "one retry, then the failure is final");
    assert!(
        calls[1].at - calls[0].at >= Duration::from_millis(500),
        "retried too early"
    );
    assert_eq!(shown["error"]["error_code"], "proxy_http_status_503");
    let task = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["element_id"] == "call")
        .unwrap();
    assert_eq!(task["retries_attempted"], 1);
}

#[tokio::test]
async fn a_callback_error_is_retried_caught_or_fails_the_instance() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(
        &proxy,
        r#"<spiffworkflow:retry retries="1" backoff_base="0.1" />"#,
    )
    .await;

    // transient error with a retry left: 200 retry_scheduled, the call is made again
    proxy.answer(202, envelope(json!({}), 200));
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    let call = proxy.calls()[0].body.clone();
    let (guid, token) = (
        call["wf__task_id"].as_str().unwrap().to_string(),
        call["wf__callback_token"].as_str().unwrap().to_string(),
    );
    let (status, retry) = callback(
        &app,
        id,
        &guid,
        Some(&token),
        &error_envelope("upstream_down", Some(503)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{retry}");
    assert_eq!(retry["status"], "retry_scheduled");
    assert_eq!(retry["retries_attempted"], 1);
    assert_eq!(retry["retries_remaining"], 0);
    assert_eq!(retry["max_retries"], 1);
    dispatch_when_due(&app).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    assert_eq!(proxy.calls().len(), 2);

    // no retry left, a code no boundary catches: 400 and the instance is in error
    let (status, failed) = callback(
        &app,
        id,
        &guid,
        Some(&token),
        &error_envelope("upstream_down", Some(503)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{failed}");
    assert_eq!(failed["error_code"], "service_task_error");
    assert_eq!(show(&app, id).await["status"], "error");

    // a code the boundary catches: the flow continues there
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "y"})).await;
    dispatch(&app, 1).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    let call = proxy.calls().last().unwrap().body.clone();
    let (guid, token) = (
        call["wf__task_id"].as_str().unwrap().to_string(),
        call["wf__callback_token"].as_str().unwrap().to_string(),
    );
    let (status, caught) = callback(
        &app,
        id,
        &guid,
        Some(&token),
        &error_envelope("bad_thing", Some(400)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{caught}");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete");
    assert_eq!(task_state(&shown, "caught"), "COMPLETED");
}

#[tokio::test]
async fn a_callback_needs_update_rights_on_the_instance_or_the_task_token() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    proxy.answer(202, envelope(json!({}), 200));
    let first = start_ok(&app, "svc/echo", &json!({"word": "a"})).await;
    let second = start_ok(&app, "svc/echo", &json!({"word": "b"})).await;
    // one round takes both calls
    dispatch(&app, 2).await;
    for id in [first, second] {
        assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    }
    let calls = proxy.calls();
    let body_of = |id: i64| {
        calls
            .iter()
            .find(|c| c.body["wf__process_instance_id"] == id)
            .unwrap()
            .body
            .clone()
    };
    let (a, b) = (body_of(first), body_of(second));
    let success = json!({"command_response": {"body": {"ok": 1}, "mimetype": "application/json"}});
    let a_guid = a["wf__task_id"].as_str().unwrap();
    let b_token = b["wf__callback_token"].as_str().unwrap();

    let cases = [
        (Some("not-a-jwt".to_string()), StatusCode::UNAUTHORIZED),
        // another task's token, or a token for other models: refused (the contract's 403)
        (Some(b_token.to_string()), StatusCode::FORBIDDEN),
        (
            Some(app.token("instances:update:other/*")),
            StatusCode::FORBIDDEN,
        ),
        (
            Some(app.token("instances:read:svc/echo")),
            StatusCode::FORBIDDEN,
        ),
        (Some(app.token("instances:update:svc/*")), StatusCode::OK),
    ];
    for (token, expected) in cases {
        let (status, body) = callback(&app, first, a_guid, token.as_deref(), &success).await;
        assert_eq!(status, expected, "{token:?}: {body}");
        if status != StatusCode::OK {
            let expected_code = match status {
                StatusCode::UNAUTHORIZED => "invalid_token",
                _ => "not_authorized",
            };
            assert_eq!(body["error_code"], expected_code, "{body}");
        }
    }
    // the token of the second task still works for it
    let b_guid = b["wf__task_id"].as_str().unwrap();
    assert_eq!(
        callback(&app, second, b_guid, Some(b_token), &success)
            .await
            .0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_callback_that_arrives_before_the_202_is_recorded_succeeds() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.push(Answer {
        callback_first: Some(
            json!({"command_response": {"body": {"early": true}, "mimetype": "application/json"}}),
        ),
        ..answer(202, envelope(json!({}), 200))
    });
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    // the round returns once the proxy's 202 (sent after its callback) is received and applied
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["data"]["result"], json!({"early": true}));
    assert_eq!(proxy.script.lock().unwrap().callback_statuses, vec![200]);
    // the late 202 changed nothing: the instance stays complete and no call is left to make
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(task_state(&shown, "call"), "COMPLETED", "{shown}");
    let jobs = jobs_left(&app).await;
    assert_eq!(jobs, 0, "a connector job is left for the completed task");
    dispatch(&app, 0).await;
    assert_eq!(show(&app, id).await["status"], "complete");
    assert_eq!(proxy.calls().len(), 1);
}

/// A round that leaves its 202s unrecorded (as the worker does for a moment), and the call's
/// task guid and callback token.
async fn dispatch_keeping_202s(app: &TestApp, proxy: &FakeProxy) -> (String, String) {
    let round = dispatch_due_once_with(&app.state, job_runner(&app.state)).await;
    assert_eq!(round, clean_round(1), "the dispatcher round");
    let call = proxy.calls()[0].body.clone();
    (
        call["wf__task_id"].as_str().unwrap().to_string(),
        call["wf__callback_token"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_202_whose_callback_commits_first_is_never_recorded() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let (guid, token) = dispatch_keeping_202s(&app, &proxy).await;
    assert_eq!(app.state.models.accepted_calls().pending(), 1);
    assert_eq!(task_state(&show(&app, id).await, "call"), "READY");

    let body = json!({"command_response": {"body": {"done": 1}, "mimetype": "application/json"}});
    let (status, done) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    // the callback's commit ended the job: its 202 is forgotten, not recorded
    assert_eq!(app.state.models.accepted_calls().pending(), 0);
    assert_eq!(record_accepted_calls_once(&app.state).await, 0);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(jobs_left(&app).await, 0);
    dispatch(&app, 0).await;
    assert_eq!(proxy.calls().len(), 1);
}

#[tokio::test]
async fn a_202_without_its_callback_is_recorded_after_the_round_and_not_called_again() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let (guid, token) = dispatch_keeping_202s(&app, &proxy).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "READY");
    assert_eq!(record_accepted_calls_once(&app.state).await, 1);
    assert_eq!(app.state.models.accepted_calls().pending(), 0);
    let shown = show(&app, id).await;
    assert_eq!(task_state(&shown, "call"), "STARTED", "{shown}");
    // accepted: the job is never due again, and the callback completes the task
    dispatch(&app, 0).await;
    let body = json!({"command_response": {"body": {"done": 1}, "mimetype": "application/json"}});
    assert_eq!(
        callback(&app, id, &guid, Some(&token), &body).await.0,
        StatusCode::OK
    );
    assert_eq!(show(&app, id).await["status"], "complete");
    assert_eq!(proxy.calls().len(), 1);
}

#[tokio::test]
async fn a_required_parameter_that_evaluates_to_nothing_fails_before_any_call() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("k"), |_| {}).await;
    let xml = service_model("").replace(
        r#"<spiffworkflow:parameter id="word" type="str" value="word" />"#,
        r#"<spiffworkflow:parameter id="word" type="str" value="word" /><spiffworkflow:parameter id="must" type="str" value="None" required="true" />"#,
    );
    upload_ok(&app, "svc/echo", "svc.bpmn", &xml).await;
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    assert!(
        shown["error"]["message"].as_str().unwrap().contains("must"),
        "{shown}"
    );
    assert!(proxy.calls().is_empty());
}

#[tokio::test]
async fn discovery_relays_the_proxy_and_survives_its_failures() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |_| {}).await;
    let commands = json!([{"id": "demo/Echo", "parameters": [{"id": "word", "type": "str", "required": true}]}]);
    proxy.answer(200, commands.clone());
    let (status, listed) = get(&app, "/v1.0/service-tasks").await;
    assert_eq!((status, listed), (StatusCode::OK, commands));
    let asked = proxy.received().last().unwrap().clone();
    assert_eq!(asked.path, "/v1/commands");
    assert_eq!(
        asked.header("wf-connector-proxy-api-key"),
        Some("proxy-key")
    );

    proxy.answer(500, json!({"oops": 1}));
    assert_eq!(get(&app, "/v1.0/service-tasks").await.1, json!([]));
    proxy.answer(200, json!({"not": "a list"}));
    assert_eq!(get(&app, "/v1.0/service-tasks").await.1, json!([]));

    proxy.answer(200, json!([{"id": "oauth/google", "parameters": []}]));
    assert_eq!(
        get(&app, "/v1.0/authentications").await.1[0]["id"],
        "oauth/google"
    );
    assert_eq!(proxy.received().last().unwrap().path, "/v1/auths");
    proxy.answer(404, json!({}));
    assert_eq!(get(&app, "/v1.0/authentications").await.1, json!([]));
}

/// The reference's service-task fixtures, end to end (read from the conformance corpus).
#[tokio::test]
async fn the_spiffarena_service_task_fixtures_run_end_to_end() {
    let root = conformance_or_skip!().join("spiffarena-fixtures");
    assert!(
        root.is_dir(),
        "the SpiffArena fixtures are missing: {} is not a directory",
        root.display()
    );
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("k"), |_| {}).await;
    let load =
        |folder: &str, file: &str| std::fs::read_to_string(root.join(folder).join(file)).unwrap();
    let done = json!({"command_response": {"body": {"do_not_fail": true}, "mimetype": "application/json"}});

    // service_task and parallel_service_task_callback: 202, then the worker calls back
    for (folder, file) in [
        ("service_task", "service_task.bpmn"),
        (
            "parallel_service_task_callback",
            "parallel_service_task_callback.bpmn",
        ),
    ] {
        upload_ok(
            &app,
            &format!("fixtures/{folder}"),
            file,
            &load(folder, file),
        )
        .await;
        proxy.answer(202, envelope(json!({}), 202));
        let id = start_ok(&app, &format!("fixtures/{folder}"), &json!({})).await;
        dispatch(&app, 1).await;
        let shown = show(&app, id).await;
        assert!(
            shown["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["element_type"] == "serviceTask" && t["state"] == "STARTED"),
            "{folder}: {shown}"
        );
        let call = proxy.calls().last().unwrap().body.clone();
        assert_eq!(proxy.calls().last().unwrap().path, "/v1/do/ed/GetFiles");
        assert_eq!(
            (call["process_id"].as_str(), call["encoding"].as_str()),
            (Some("a"), Some("b"))
        );
        let (status, body) = callback(
            &app,
            id,
            call["wf__task_id"].as_str().unwrap(),
            call["wf__callback_token"].as_str(),
            &done,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{folder}: {body}");
        assert_eq!(show(&app, id).await["status"], "complete", "{folder}");
    }

    // message_start_service_task: a message starts it; the worker's callback comes before the 202
    upload_ok(
        &app,
        "fixtures/message_start_service_task",
        "m.bpmn",
        &load(
            "message_start_service_task",
            "message_start_service_task.bpmn",
        ),
    )
    .await;
    proxy.push(Answer {
        callback_first: Some(done.clone()),
        ..answer(202, envelope(json!({}), 202))
    });
    let (status, started) = send(
        &app,
        "quick_callback_service_task",
        &json!({"hello": 1}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    dispatch(&app, 1).await;
    assert_eq!(show(&app, id).await["status"], "complete");

    // retries: retries="3" with the default base 2 -> one failure, a retry 2 s later, success
    upload_ok(
        &app,
        "fixtures/retries",
        "retries.bpmn",
        &load("retries", "retries.bpmn"),
    )
    .await;
    proxy.answer(500, json!({"command_response": {}, "error": {"error_code": "TIMEOUT_ERROR", "message": "upstream timed out"}}));
    proxy.answer(200, envelope(json!({"fine": true}), 200));
    let id = start_ok(&app, "fixtures/retries", &json!({})).await;
    dispatch(&app, 1).await;
    let waiting = show(&app, id).await;
    let service_task = waiting["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["element_type"] == "serviceTask")
        .unwrap()["element_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        scheduled_backoff(&waiting, &service_task),
        chrono::Duration::seconds(2),
        "{waiting}"
    );
    dispatch_when_due(&app).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["body"], json!({"fine": true}));
}

#[tokio::test]
async fn an_answer_that_cannot_be_stored_fails_the_task_once_and_is_never_fetched_again() {
    for (case, answer_body) in [
        (
            "NUL in the result",
            envelope(json!({"text": "a\u{0}b"}), 200),
        ),
        ("NUL in a key", envelope(json!({"a\u{0}": 1}), 200)),
    ] {
        let proxy = FakeProxy::start();
        let app = app_with_proxy(&proxy, "").await;
        proxy.answer(200, answer_body);
        let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
        let round = dispatch_due_once(&app.state).await;
        assert_eq!(
            (round.claimed, round.failed, round.panicked),
            (1, 0, 0),
            "{case}"
        );
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "error", "{case}: {shown}");
        let cause = shown["error"]["message"].as_str().unwrap();
        assert!(cause.contains("cannot be stored"), "{case}: {cause}");
        assert_eq!(task_state(&shown, "call"), "ERROR", "{case}");
        // nothing is due any more: the proxy is not called again
        assert_eq!(dispatch_due_once(&app.state).await.claimed, 0, "{case}");
        assert_eq!(proxy.calls().len(), 1, "{case}");
    }
    // NUL in the logs and in a structured error: stored readable, the error boundary catches it
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(
        200,
        json!({
            "command_response": {},
            "error": {"error_code": "bad_thing", "message": "bro\u{0}ken"},
            "wf__logs": ["line \u{0} one"],
        }),
    );
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch_due_once(&app.state).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(task_state(&shown, "caught"), "COMPLETED");
    let (_, logs) = get(
        &app,
        &format!("/v1.0/process-instances/{id}/connector-logs"),
    )
    .await;
    assert_eq!(logs["results"][0]["line"], "line \u{FFFD} one");
}

#[tokio::test]
async fn a_call_whose_leases_ran_out_is_failed_not_made_again() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    // three dispatchers took the call and died before recording an answer
    sqlx::query("UPDATE jobs SET leases = 3, locked_until = now() - interval '1 s'")
        .execute(&app.pool)
        .await
        .unwrap();
    let round = dispatch_due_once(&app.state).await;
    assert_eq!(round.claimed, 1);
    assert!(proxy.calls().is_empty(), "the proxy was called again");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    assert!(
        shown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("3 times without its answer being recorded"),
        "{shown}"
    );
    assert_eq!(dispatch_due_once(&app.state).await.claimed, 0);
}

#[tokio::test]
async fn a_panic_in_one_job_is_caught_counted_and_the_dispatcher_goes_on() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(200, envelope(json!({"echo": "x"}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    let round = dispatch_due_once_with(&app.state, |_job| async {
        panic!("injected failure");
    })
    .await;
    assert_eq!((round.claimed, round.panicked), (1, 1));
    let leases: i32 = sqlx::query_scalar("SELECT leases FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(leases, 1, "the panicked attempt counts");
    // the job was given back: the next round runs it
    let round = dispatch_due_once(&app.state).await;
    assert_eq!((round.claimed, round.failed, round.panicked), (1, 0, 0));
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["body"], json!({"echo": "x"}));
}

#[tokio::test]
async fn a_callback_body_that_cannot_be_stored_is_refused_and_the_task_still_waits() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "x"})).await;
    dispatch_due_once(&app.state).await;
    let guid = proxy.calls()[0].body["wf__task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let deep = format!(
        r#"{{"command_response": {{"body": {}1{}}}}}"#,
        r#"{"a": "#.repeat(100),
        "}".repeat(100)
    );
    for body in [
        r#"{"command_response": {"body": "a\u0000b"}}"#,
        r#"{"command_response": {"body": {"k\u0000": 1}}}"#,
        r#"{"command_response": {"body": 1}, "wf__logs": ["\u0000"]}"#,
        // numbers and depths that could not be read back once stored
        r#"{"command_response": {"body": {"n": 1.7976931348623157e308}}}"#,
        deep.as_str(),
    ] {
        let response = app
            .client
            .put(app.url(&format!("/v1.0/tasks/{id}/{guid}/callback")))
            .bearer_auth(app.token("admin"))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["error_code"], "invalid_callback_body", "{problem}");
    }
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    let success =
        json!({"command_response": {"body": {"fine": true}, "mimetype": "application/json"}});
    let (status, body) = callback(&app, id, &guid, Some(&app.token("admin")), &success).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The echo model with an interrupting timer boundary (PT10M) on its service task, leading
/// to `timed_out`.
fn timed_service_model() -> String {
    service_model("").replace(
        r#"<bpmn:endEvent id="caught" />"#,
        r#"<bpmn:endEvent id="caught" />
    <bpmn:boundaryEvent id="too_slow" attachedToRef="call"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT10M"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f4" sourceRef="too_slow" targetRef="timed_out" />
    <bpmn:endEvent id="timed_out" />"#,
    )
}

/// A timer boundary on a service task whose call the proxy accepted (202): when it fires the
/// task is cancelled in the same transaction, and the call's late callback is refused.
/// Connector jobs in the outbox: due, leased, held or accepted.
async fn jobs_left(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Another transaction holding an instance as a unit of work does (its row lock), until it is
/// rolled back.
async fn hold_instance(app: &TestApp, id: i64) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut holder = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM process_instances WHERE id = $1 FOR NO KEY UPDATE")
        .bind(id)
        .execute(&mut *holder)
        .await
        .unwrap();
    holder
}

/// Scripts the proxy's next answer, a 202, behind a gate: the first `Notify` says the call
/// came, the second lets the answer go.
fn gated_202(proxy: &FakeProxy) -> (Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>) {
    let (called, go) = (
        Arc::new(tokio::sync::Notify::new()),
        Arc::new(tokio::sync::Notify::new()),
    );
    proxy.push(Answer {
        gate: Some((called.clone(), go.clone())),
        ..answer(202, envelope(json!({"job": 1}), 202))
    });
    (called, go)
}

/// Completes the task of the proxy's first call with its callback (the task's own token):
/// the instance completes and no job is left.
async fn complete_first_call(app: &TestApp, proxy: &FakeProxy, id: i64) {
    let call = proxy.calls()[0].body.clone();
    let guid = call["wf__task_id"].as_str().unwrap().to_string();
    let token = call["wf__callback_token"].as_str().unwrap().to_string();
    let body =
        json!({"command_response": {"body": {"done": true}, "mimetype": "application/json"}});
    let (status, done) = callback(app, id, &guid, Some(&token), &body).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(show(app, id).await["status"], "complete");
    let jobs = jobs_left(app).await;
    assert_eq!(jobs, 0, "a job is left for the completed task");
}

/// A proxy's 202 is recorded on its job alone: it does not wait for the instance, which a
/// callback (often sent before the 202 arrives) may hold at that moment. The task shows
/// STARTED at once; the instance's own state says so once it is next written; the call is
/// never made again, not even after a suspension; its callback completes it and leaves no job.
#[tokio::test]
async fn a_202_is_recorded_without_waiting_for_the_instance() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let (called, go) = gated_202(&proxy);
    let id = start_ok(&app, "svc/echo", &json!({"word": "later"})).await;
    let state = app.state.clone();
    let round = tokio::spawn(async move { dispatch_due_once(&state).await });
    called.notified().await;
    // the call is under way; another unit takes the instance (as units do) before its 202
    let holder = hold_instance(&app, id).await;
    go.notify_one();
    let round = tokio::time::timeout(Duration::from_secs(10), round)
        .await
        .expect("the 202 was recorded while the instance was held")
        .unwrap();
    assert_eq!(round, clean_round(1), "the dispatcher round");
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    holder.rollback().await.unwrap();
    let (_, logs) = get(
        &app,
        &format!("/v1.0/process-instances/{id}/connector-logs"),
    )
    .await;
    assert_eq!(logs["pagination"]["total"], 1, "{logs}");
    assert_eq!(logs["results"][0]["line"], "called upstream");

    // the next unit that writes the instance writes the task STARTED in its state too
    instance_command(&app, id, "suspend").await;
    let started: bool = sqlx::query_scalar(
        "SELECT live_tasks @> '[{\"element_id\": \"call\", \"state\": \"STARTED\"}]' \
         FROM process_instances WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(started, "the instance's state was not caught up");
    instance_command(&app, id, "resume").await;
    dispatch(&app, 0).await;
    assert_eq!(proxy.calls().len(), 1, "an accepted call was made again");

    complete_first_call(&app, &proxy, id).await;
}

/// A call is prepared from the instance's committed state, without its lock: a step holding
/// the instance (here another transaction) does not hold up the call.
#[tokio::test]
async fn a_call_is_made_while_another_unit_holds_the_instance() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 202));
    let id = start_ok(&app, "svc/echo", &json!({"word": "now"})).await;
    let holder = hold_instance(&app, id).await;
    let round = tokio::time::timeout(Duration::from_secs(10), dispatch_due_once(&app.state))
        .await
        .expect("the call was prepared and made while the instance was held");
    assert_eq!(round, clean_round(1), "the dispatcher round");
    let calls = proxy.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["wf__task_data"]["word"], "now");
    holder.rollback().await.unwrap();
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
}

/// With the dispatcher running, a call scheduled by a step here is handed to it with its job
/// already leased and its parameters evaluated once the step has committed: it is made without
/// a claim (nor a wake-up of the dispatchers), with the request a prepared call would have,
/// once; its callback completes the task and leaves no job.
#[tokio::test]
async fn a_call_scheduled_here_is_handed_to_the_running_dispatcher_without_a_claim() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |s| s.run_workers = true).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    let (called, go) = gated_202(&proxy);
    let id = start_ok(&app, "svc/echo", &json!({"word": "handed"})).await;
    tokio::time::timeout(Duration::from_secs(10), called.notified())
        .await
        .expect("the running dispatcher made the call");
    // the call is under way: leased once, by its insert
    let (leases, leased): (i32, bool) =
        sqlx::query_as("SELECT leases, locked_until > now() FROM jobs")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((leases, leased), (1, true), "the job under way");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("workflow_backend_connector_calls_handed_over_total 1"),
        "the call was claimed, not handed over: {metrics}"
    );
    // evaluated at the commit, the request is what a prepared one would be
    let call = proxy.calls()[0].body.clone();
    assert_eq!(call["word"], "handed");
    assert_eq!(call["wf__process_instance_id"], id);
    assert_eq!(call["wf__process_model_identifier"], "svc/echo");
    assert_eq!(call["wf__task_data"], json!({"word": "handed"}));
    let guid = call["wf__task_id"].as_str().unwrap();
    assert_eq!(
        call["wf__callback_url"],
        format!(
            "{}/v1.0/tasks/{id}/{guid}/callback",
            app.settings.public_url
        )
    );
    go.notify_one();

    complete_first_call(&app, &proxy, id).await;
    assert_eq!(proxy.calls().len(), 1, "the call was made more than once");
}

/// Issue 35: the job of a call handed to this replica's dispatcher is written by the statement
/// that writes back the instance whose step recorded it (one statement fewer per service
/// round trip): with the jobs table held, the start waits in that statement (before, the job
/// was inserted by a statement of its own, ahead of the write-back).
#[tokio::test]
async fn a_handed_calls_job_is_written_with_its_instance_write_back() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |s| s.run_workers = true).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    let (called, go) = gated_202(&proxy);
    let mut holder = app.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE jobs IN SHARE MODE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let data = json!({"word": "with"});
    let start = start_ok(&app, "svc/echo", &data);
    let drive = async {
        let waited = until_a_statement_waits(&app, "workflow_write_instances").await;
        holder.rollback().await.unwrap();
        waited
    };
    let (id, waited) = tokio::join!(start, drive);
    assert!(
        waited,
        "the start never waited for the jobs table in its write-back"
    );
    tokio::time::timeout(Duration::from_secs(10), called.notified())
        .await
        .expect("the running dispatcher made the call");
    let leases: i32 = sqlx::query_scalar("SELECT leases FROM jobs WHERE process_instance_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    go.notify_one();
    assert_eq!(leases, 1, "leased once, by its insert");
    complete_first_call(&app, &proxy, id).await;
    assert_eq!(proxy.calls().len(), 1, "the call was made more than once");
}

/// A callback that comes while its 202 is being recorded does not deadlock with the record:
/// the callback's write-back deletes the job before it writes the task, the order in which the
/// 202's record (`RECORD_ACCEPTANCE`) updates them. (Written the other way round, the two
/// waited for each other until Postgres's deadlock check, a second later, failed the record.)
#[tokio::test]
async fn a_callbacks_write_back_takes_its_job_before_its_task() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let calls = accepted_calls(&app, &proxy, 1).await;
    let (id, guid, token) = calls[0].clone();
    // the 202's record half-way: its job updated, its task not yet
    let mut recording = app.pool.begin().await.unwrap();
    sqlx::query("UPDATE jobs SET leases = leases WHERE task_guid = $1::uuid")
        .bind(&guid)
        .execute(&mut *recording)
        .await
        .unwrap();
    let body =
        json!({"command_response": {"body": {"done": true}, "mimetype": "application/json"}});
    let answered = callback(&app, id, &guid, Some(&token), &body);
    let drive = async {
        let waited = until_a_statement_waits(&app, "workflow_write_instances").await;
        // the record's second half: the task, which the waiting write-back must not hold
        sqlx::query("SET LOCAL lock_timeout = '500ms'")
            .execute(&mut *recording)
            .await
            .unwrap();
        let task = sqlx::query("UPDATE tasks SET state = state WHERE guid = $1::uuid")
            .bind(&guid)
            .execute(&mut *recording)
            .await
            .map(|_| ());
        recording.rollback().await.ok();
        (waited, task)
    };
    let ((status, done), (waited, task)) = tokio::join!(answered, drive);
    assert!(
        waited,
        "the callback never waited for its job in its write-back"
    );
    assert!(
        task.is_ok(),
        "the waiting write-back held the task: {task:?}"
    );
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(show(&app, id).await["status"], "complete");
}

/// With the dispatcher running, a 202 whose callback does not come is recorded by the worker
/// once the callback's moment has passed: the job accepted (never due again), the task
/// `STARTED`, nothing left pending. A condition poll with a deadline (10 s).
#[tokio::test]
async fn the_running_dispatcher_records_a_202_whose_callback_does_not_come() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |s| s.run_workers = true).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    proxy.answer(202, envelope(json!({}), 200));
    let id = start_ok(&app, "svc/echo", &json!({"word": "later"})).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let accepted: Option<bool> = sqlx::query_scalar("SELECT accepted_at IS NOT NULL FROM jobs")
            .fetch_optional(&app.pool)
            .await
            .unwrap();
        if accepted == Some(true) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the 202 was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    assert_eq!(app.state.models.accepted_calls().pending(), 0);
    assert_eq!(proxy.calls().len(), 1);
}

/// Jobs leased now (handed over or claimed, not yet answered).
async fn leased_jobs(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM jobs WHERE locked_until > now()")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Waits until `n` jobs are due and unleased, their leases not counted: a give-back runs on a
/// task of its own. A condition poll with a deadline (10 s).
async fn until_given_back(app: &TestApp, n: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let given_back: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM jobs WHERE locked_until IS NULL AND leases = 0",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if given_back == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{given_back} of {n} handed calls were given back within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A call handed to a dispatcher that stopped is not left leased for its lease's two minutes:
/// one still in the queue when the workers stop, and one handed over after the queue is gone,
/// are each given back (due at once, the lease not counted) and the next dispatcher round
/// makes them. A call handed over is committed leased, with its parameters evaluated.
#[tokio::test]
async fn calls_handed_to_a_stopped_dispatcher_are_given_back() {
    use workflow_backend::services::service_tasks::CallHandOff;
    use workflow_backend::workers::connector_dispatcher::HandedCalls;
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;

    // the queue the workers install, with no loop taking from it; then the workers stop
    let queue = HandedCalls::install(&app.state);
    let queued = start_ok(&app, "svc/echo", &json!({"word": "queued"})).await;
    assert_eq!(
        leased_jobs(&app).await,
        1,
        "the call was handed over leased"
    );
    assert_eq!(dispatch_due_once(&app.state).await, clean_round(0));
    drop(queue);
    until_given_back(&app, 1).await;
    proxy.answer(200, envelope(json!({}), 200));
    dispatch(&app, 1).await;
    assert_eq!(show(&app, queued).await["status"], "complete");

    // a hand-off whose dispatcher is gone (its queue dropped) by the time the unit commits
    let slots = Arc::new(tokio::sync::Semaphore::new(1));
    let counter = prometheus::IntCounter::new("handed", "handed").unwrap();
    let (hand_off, taken) = CallHandOff::new(slots, app.pool.clone(), counter.clone());
    app.state.models.hand_calls_to(Some(hand_off));
    drop(taken);
    let late = start_ok(&app, "svc/echo", &json!({"word": "late"})).await;
    app.state.models.hand_calls_to(None);
    until_given_back(&app, 1).await;
    assert_eq!(counter.get(), 0, "a call counted as handed to no one");
    proxy.answer(200, envelope(json!({}), 200));
    dispatch(&app, 1).await;
    assert_eq!(show(&app, late).await["status"], "complete");
    assert_eq!(proxy.calls().len(), 2, "each call made once");
}

#[tokio::test]
async fn a_timer_boundary_cancels_an_accepted_call_and_its_late_callback_is_refused() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |_| {}).await;
    upload_ok(&app, "svc/slow", "svc.bpmn", &timed_service_model()).await;
    proxy.answer(202, envelope(json!({"job": 1}), 202));
    let id = start_ok(&app, "svc/slow", &json!({"word": "later"})).await;
    dispatch(&app, 1).await;
    assert_eq!(task_state(&show(&app, id).await, "call"), "STARTED");
    let call = proxy.calls()[0].body.clone();
    let guid = call["wf__task_id"].as_str().unwrap().to_string();
    let token = call["wf__callback_token"].as_str().unwrap().to_string();

    let later = chrono::Utc::now() + chrono::Duration::minutes(11);
    let round = workflow_backend::workers::timer_firer::fire_due_once(&app.state, later).await;
    assert_eq!(round.fired, 1);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(task_state(&shown, "call"), "CANCELLED");
    assert_eq!(task_state(&shown, "timed_out"), "COMPLETED");
    let jobs = jobs_left(&app).await;
    assert_eq!(
        jobs, 0,
        "the cancelled task's accepted call is left as a job"
    );

    let body =
        json!({"command_response": {"body": "{\"done\": true}", "mimetype": "application/json"}});
    let (status, late) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(
        (status, late["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("not_waiting_for_callback")),
        "{late}"
    );
    assert!(show(&app, id).await["data"].get("result").is_none());
}

/// An interrupting boundary that fires before the call was made drops the pending job: the
/// proxy is never called for a task that no longer exists.
#[tokio::test]
async fn a_timer_boundary_drops_a_call_not_made_yet() {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |_| {}).await;
    upload_ok(&app, "svc/slow", "svc.bpmn", &timed_service_model()).await;
    let id = start_ok(&app, "svc/slow", &json!({"word": "never"})).await;
    let pending = jobs_left(&app).await;
    assert_eq!(pending, 1, "the call waits for the dispatcher");

    let later = chrono::Utc::now() + chrono::Duration::minutes(11);
    let round = workflow_backend::workers::timer_firer::fire_due_once(&app.state, later).await;
    assert_eq!(round.fired, 1);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(task_state(&shown, "call"), "CANCELLED");

    let round = dispatch_due_once(&app.state).await;
    assert_eq!(round.claimed, 0, "{round:?}");
    assert!(proxy.calls().is_empty(), "{:?}", proxy.calls());
}

/// start -> a parallel multi-instance service task (one demo/Echo call per word) -> end.
fn multi_instance_service_model() -> String {
    models::definitions(
        r#"<bpmn:process id="svc" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
    <bpmn:serviceTask id="call" name="Call">
      <bpmn:extensionElements>
        <spiffworkflow:serviceTaskOperator id="demo/Echo" resultVariable="echoed">
          <spiffworkflow:parameters><spiffworkflow:parameter id="word" type="str" value="word" /></spiffworkflow:parameters>
        </spiffworkflow:serviceTaskOperator>
      </bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics>
        <bpmn:loopDataInputRef>words</bpmn:loopDataInputRef>
        <bpmn:loopDataOutputRef>echoes</bpmn:loopDataOutputRef>
        <bpmn:inputDataItem id="word" /><bpmn:outputDataItem id="echoed" />
      </bpmn:multiInstanceLoopCharacteristics>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// One connector call per item, each with its own task guid, job and callback token; the
/// callbacks arrive out of order (one of them twice) and the results come out in item order.
#[tokio::test]
async fn a_parallel_multi_instance_service_task_calls_once_per_item_and_takes_callbacks_in_any_order(
) {
    let proxy = FakeProxy::start();
    let app = spawn_with_proxy(&proxy, Some("proxy-key"), |_| {}).await;
    upload_ok(
        &app,
        "svc/many",
        "svc.bpmn",
        &multi_instance_service_model(),
    )
    .await;
    for _ in 0..3 {
        proxy.answer(202, envelope(json!({"job": 1}), 202));
    }
    let id = start_ok(&app, "svc/many", &json!({"words": ["one", "two", "three"]})).await;
    let jobs = jobs_left(&app).await;
    assert_eq!(jobs, 3, "one job per item, recorded with the start");
    dispatch(&app, 3).await;

    let calls = proxy.calls();
    let mut words: Vec<&str> = calls
        .iter()
        .map(|c| c.body["word"].as_str().unwrap())
        .collect();
    words.sort_unstable();
    assert_eq!(words, ["one", "three", "two"]);
    let guids: std::collections::HashSet<&str> = calls
        .iter()
        .map(|c| c.body["wf__task_id"].as_str().unwrap())
        .collect();
    assert_eq!(guids.len(), 3, "each call has its own task");

    let call_for = |word: &str| {
        let call = calls.iter().find(|c| c.body["word"] == word).unwrap();
        (
            call.body["wf__task_id"].as_str().unwrap().to_string(),
            call.body["wf__callback_token"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    };
    let body = |word: &str| json!({"command_response": {"body": format!("{{\"echo\": \"{word}\"}}"), "mimetype": "application/json"}});
    for word in ["three", "one"] {
        let (guid, token) = call_for(word);
        let (status, answer) = callback(&app, id, &guid, Some(&token), &body(word)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    // the second callback of "one" is refused and changes nothing
    let (guid, token) = call_for("one");
    let (status, again) = callback(&app, id, &guid, Some(&token), &body("again")).await;
    assert_eq!(
        (status, again["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("not_waiting_for_callback"))
    );
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    assert!(
        shown["data"]
            .get("echoes")
            .is_some_and(|e| e == &json!([{"echo": "one"}, {"echo": "three"}])),
        "{shown}"
    );

    let (guid, token) = call_for("two");
    let (status, answer) = callback(&app, id, &guid, Some(&token), &body("two")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(
        shown["data"],
        json!({"words": ["one", "two", "three"], "echoes": [{"echo": "one"}, {"echo": "two"}, {"echo": "three"}]})
    );
}

/// POST /v1.0/process-instances/{id}/{command} as admin, insisting on 200.
async fn instance_command(app: &TestApp, id: i64, command: &str) -> Value {
    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/{command}"),
            &Value::Null,
            "admin",
        )
        .await;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(status, StatusCode::OK, "{command}: {body}");
    body
}

#[tokio::test]
async fn retry_after_a_connector_outage_calls_the_proxy_again_and_runs_on() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    // the outage: an uncaught failure puts the instance in error
    proxy.answer(
        502,
        json!({"command_response": {}, "error": {"error_code": "upstream_down", "message": "bad gateway"}}),
    );
    let id = start_ok(&app, "svc/echo", &json!({"word": "again"})).await;
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    assert_eq!(proxy.calls().len(), 1);

    // over: the retry makes the call due again; the dispatcher makes it
    let retried = instance_command(&app, id, "retry").await;
    assert_eq!(
        retried["process_instance"]["status"], "waiting",
        "{retried}"
    );
    proxy.answer(200, envelope(json!({"echo": "again"}), 200));
    dispatch(&app, 1).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"]["body"], json!({"echo": "again"}));
    assert_eq!(proxy.calls().len(), 2);
}

#[tokio::test]
async fn a_suspended_instance_makes_no_connector_call_until_resumed() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    let id = start_ok(&app, "svc/echo", &json!({"word": "held"})).await;
    instance_command(&app, id, "suspend").await;
    dispatch(&app, 0).await;
    assert!(proxy.calls().is_empty(), "no call while suspended");

    instance_command(&app, id, "resume").await;
    proxy.answer(202, envelope(json!({}), 202));
    dispatch(&app, 1).await;
    let call = proxy.calls()[0].body.clone();
    let guid = call["wf__task_id"].as_str().unwrap().to_string();
    let token = call["wf__callback_token"].as_str().unwrap().to_string();

    // a callback while suspended is refused with a code that says to send it again later
    instance_command(&app, id, "suspend").await;
    let body =
        json!({"command_response": {"body": {"late": true}, "mimetype": "application/json"}});
    let (status, refused) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(
        (status, refused["error_code"].as_str()),
        (StatusCode::CONFLICT, Some("process_instance_suspended")),
        "{refused}"
    );
    instance_command(&app, id, "resume").await;
    let (status, done) = callback(&app, id, &guid, Some(&token), &body).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(show(&app, id).await["status"], "complete");
}

#[tokio::test]
async fn the_connector_backlog_shows_in_readiness_and_metrics() {
    use workflow_backend::workers::connector_dispatcher::refresh_backlog;
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    for word in ["a", "b"] {
        start_ok(&app, "svc/echo", &json!({"word": word})).await;
    }
    refresh_backlog(&app.state).await;
    let (status, ready) = get(&app, "/v1.0/health/ready").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ready["connector_jobs_waiting"], 2, "{ready}");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("workflow_backend_connector_jobs_waiting 2"),
        "{metrics}"
    );

    proxy.answer(200, envelope(json!({}), 200));
    proxy.answer(200, envelope(json!({}), 200));
    dispatch(&app, 2).await;
    refresh_backlog(&app.state).await;
    assert_eq!(
        get(&app, "/v1.0/health/ready").await.1["connector_jobs_waiting"],
        0
    );
}

#[tokio::test]
async fn a_connector_call_continues_the_trace_of_the_step_that_scheduled_it() {
    use crate::traces::{caller_trace, flush, one_named, OtlpReceiver, CLIENT};
    let receiver = OtlpReceiver::start();
    let proxy = FakeProxy::start();
    let settings = receiver.settings();
    let app = spawn_with_proxy(&proxy, None, move |s| s.traces = Some(settings)).await;
    upload_ok(&app, "svc/echo", "svc.bpmn", &service_model("")).await;
    proxy.answer(200, envelope(json!({"echo": "traced"}), 200));
    let (trace_id, _, traceparent) = caller_trace();
    let response = app
        .client
        .post(app.url("/v1.0/process-instances/svc:echo"))
        .bearer_auth(app.token(ADMIN))
        .header("traceparent", traceparent)
        .json(&json!({"word": "traced"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let id = response.json::<Value>().await.unwrap()["process_instance"]["id"]
        .as_i64()
        .unwrap();

    dispatch(&app, 1).await;
    assert_eq!(show(&app, id).await["status"], "complete");
    flush(&app).await;

    let spans = receiver.trace(&trace_id);
    let request = spans
        .iter()
        .find(|s| s.kind == crate::traces::SERVER)
        .expect("the request's span");
    assert!(
        request.name.starts_with("POST /v1.0/process-instances/"),
        "{}",
        request.name
    );
    let job = one_named(&spans, "connector job");
    assert_eq!(
        job.parent_span_id, request.span_id,
        "the job continues the request's trace"
    );
    assert_eq!(job.attribute("workflow.instance.id"), &json!(id));
    let call = one_named(&spans, "connector call");
    assert_eq!(call.kind, CLIENT);
    assert_eq!(call.parent_span_id, job.span_id);
    assert_eq!(
        call.attribute("workflow.connector.operator_id"),
        &json!("demo/Echo")
    );
    assert_eq!(
        call.attribute("workflow.connector.outcome"),
        &json!("success")
    );
    let applied: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "engine step" && s.parent_span_id == job.span_id)
        .collect();
    assert_eq!(applied.len(), 1, "{spans:#?}");
    assert_eq!(
        applied[0].attribute("workflow.event"),
        &json!("service_succeeded")
    );
    assert!(job.encloses(call) && call.end <= applied[0].start);

    let sent = proxy.calls()[0].header("traceparent").map(str::to_string);
    assert_eq!(
        sent,
        Some(format!("00-{trace_id}-{}-01", call.span_id)),
        "the proxy's parent is the call's span"
    );
}

/// The callback's answers as the connector-proxy contract gives them, for every kind of caller
/// and target: 401 without a token; 403 to a caller who may not update the instance, worded
/// the same for a missing instance when its scopes are limited to some models (no existence
/// oracle); 400 `process_instance_cannot_be_found`, `callback_not_found`,
/// `not_waiting_for_callback` to a caller who may update the instance, or every instance.
#[tokio::test]
async fn the_callback_answers_the_contracts_statuses_for_every_caller_and_target() {
    let proxy = FakeProxy::start();
    let app = app_with_proxy(&proxy, "").await;
    proxy.answer(202, envelope(json!({}), 200));
    proxy.answer(202, envelope(json!({}), 200));
    let first = start_ok(&app, "svc/echo", &json!({"word": "a"})).await;
    let second = start_ok(&app, "svc/echo", &json!({"word": "b"})).await;
    dispatch(&app, 2).await;
    let waiting = |id: i64| {
        let app = &app;
        async move { waiting_task(app, id, "call").await }
    };
    let (first_call, second_call) = (waiting(first).await, waiting(second).await);
    // a task that does not wait for a callback: the instance's start event
    let start_event = |id: i64| {
        let app = &app;
        async move {
            show(app, id).await["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["element_id"] == "start")
                .unwrap()["guid"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let success = json!({"command_response": {"body": {"ok": 1}, "mimetype": "application/json"}});
    let unknown_guid = uuid::Uuid::new_v4().to_string();

    // (caller, token scope) -> the answer for each target, in this order: unknown instance,
    // known instance with an unknown task, a task that does not wait, the waiting task (of
    // `first`, or of `second` for the last caller, as `first`'s is done by then)
    let forbidden = (StatusCode::FORBIDDEN, "not_authorized");
    let unauthenticated = (StatusCode::UNAUTHORIZED, "invalid_token");
    let invalid = |code| (StatusCode::BAD_REQUEST, code);
    let done = (StatusCode::OK, "");
    // (status, error_code) for each of the four targets
    type Answers<'a> = [(StatusCode, &'a str); 4];
    let matrix: [(Option<&str>, i64, &str, Answers); 4] = [
        (None, first, &first_call, [unauthenticated; 4]),
        (
            Some("instances:update:other/* instances:read:*"),
            first,
            &first_call,
            [forbidden; 4],
        ),
        (
            Some("instances:update:*"),
            first,
            &first_call,
            [
                invalid("process_instance_cannot_be_found"),
                invalid("callback_not_found"),
                invalid("not_waiting_for_callback"),
                done,
            ],
        ),
        (
            Some("instances:update:svc/*"),
            second,
            &second_call,
            [
                forbidden,
                invalid("callback_not_found"),
                invalid("not_waiting_for_callback"),
                done,
            ],
        ),
    ];
    let mut refusals_of_limited_callers = Vec::new();
    for (scope, id, call, expected) in matrix {
        let token = scope.map(|s| app.token(s));
        let started = start_event(id).await;
        let targets = [
            (999_999, unknown_guid.as_str()),
            (id, unknown_guid.as_str()),
            (id, started.as_str()),
            (id, call),
        ];
        for ((target, guid), (status, code)) in targets.into_iter().zip(expected) {
            let (got, body) = callback(&app, target, guid, token.as_deref(), &success).await;
            assert_eq!(got, status, "{scope:?} on {target}/{guid}: {body}");
            if status == StatusCode::OK {
                assert_eq!(body["status"], "completed", "{body}");
                continue;
            }
            assert_eq!(
                body["error_code"], code,
                "{scope:?} on {target}/{guid}: {body}"
            );
            if status == StatusCode::FORBIDDEN {
                refusals_of_limited_callers.push(body);
            }
        }
    }
    // a missing instance and another model's look the same to a caller limited to some models
    assert_eq!(refusals_of_limited_callers.len(), 5);
    for body in &refusals_of_limited_callers {
        assert_eq!(body, &refusals_of_limited_callers[0]);
        assert!(!body.to_string().contains("svc"), "{body}");
    }
    // an id that is not a number names no instance either
    let response = app
        .client
        .put(app.url(&format!("/v1.0/tasks/not-a-number/{unknown_guid}/callback")))
        .bearer_auth(app.token("instances:update:svc/*"))
        .json(&success)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // the other endpoints keep 404 for an instance the caller may not see
    let response = app
        .get_as(
            &format!("/v1.0/process-instances/{first}"),
            "instances:update:other/*",
        )
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}
