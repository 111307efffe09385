//! The examples of the OpenAPI document are real answers.
//!
//! A server on a fresh database runs the cases the examples show (the models, messages,
//! instances, secrets, keys and stores the examples name), and each answer is compared with
//! its example structurally: the same object keys at every level (an array by its first item),
//! the same JSON types, and the same values for the members that name a case (`status`,
//! `state`, `error_code`, `failure_reason`, `required_scope`, ...; see [`SAME_VALUE`]).
//!
//! Every success example is checked, and every JSON success must have one. So are the error
//! examples: each operation's 401, 403 (which names the scope its handler checks), 408, 413 and
//! 503 are provoked with the request of its success case, its 400, 404, 409 and 415 with
//! requests of their own. An error example that cannot be provoked here would have to be
//! listed, with why, in [`NOT_PROVOKED`] (none is).
//!
//! `OPENAPI_ANSWERS=<file>` writes the real answers to that file, to copy into examples.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use futures_util::future::join_all;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Response};
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, spawn_app_without_database_with, TestApp};
use crate::models::definitions;
use workflow_backend::api::openapi_document;
use workflow_backend::workers::connector_dispatcher::dispatch_due_once;

const ADMIN: &str = "admin";

/// Members whose value names the case: the example must show the answer's value.
const SAME_VALUE: &[&str] = &[
    "state",
    "status",
    "error_code",
    "failure_reason",
    "type",
    "message_type",
    "element_type",
    "kind",
    "hit_policy",
    "database",
    "ok",
    "current",
    "required_scope",
    "required_scopes",
];

/// Error examples not provoked here: `operation status`, and why.
const NOT_PROVOKED: &[(&str, &str)] = &[];

/// The idempotency key of the buffered message.
const BUFFERED_UUID: &str = "6f1c2a4e-8d1b-4c3a-9f57-2b0e8e4d9a11";

/// The body limit of the server the 413s are provoked on.
const SMALL_BODY_LIMIT: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// The comparison

/// What differs in structure between `example` and `answer`, each difference with where.
fn differences(example: &Value, answer: &Value, at: &str, found: &mut Vec<String>) {
    match (example, answer) {
        (Value::Object(shown), Value::Object(real)) => {
            for key in shown.keys().filter(|k| !real.contains_key(*k)) {
                found.push(format!("{at}.{key}: in the example, not in the answer"));
            }
            for key in real.keys().filter(|k| !shown.contains_key(*k)) {
                found.push(format!(
                    "{at}.{key}: in the answer ({}), not in the example",
                    real[key]
                ));
            }
            for (key, value) in shown {
                let Some(real_value) = real.get(key) else {
                    continue;
                };
                let same_value =
                    SAME_VALUE.contains(&key.as_str()) || (key == "reason" && is_word(value));
                if same_value && value != real_value {
                    found.push(format!(
                        "{at}.{key}: the example shows {value}, the answer {real_value}"
                    ));
                }
                differences(value, real_value, &format!("{at}.{key}"), found);
            }
        }
        (Value::Array(shown), Value::Array(real)) => match (shown.first(), real.first()) {
            (Some(shown), Some(real)) => differences(shown, real, &format!("{at}[0]"), found),
            (None, None) => {}
            _ => found.push(format!(
                "{at}: the example has {} items, the answer {}",
                shown.len(),
                real.len()
            )),
        },
        _ => {
            if type_of(example) != type_of(answer) {
                found.push(format!(
                    "{at}: the example shows {} ({example}), the answer {} ({answer})",
                    type_of(example),
                    type_of(answer)
                ));
            }
        }
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A code-like word (`no_receiver`), not a sentence.
fn is_word(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
}

/// The example a schema alone gives (as Swagger UI makes one when a response has none): every
/// property, the first value of an enum, the first alternative that is not null.
fn generated(schema: &Value, schemas: &Value) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap();
        return generated(&schemas[name], schemas);
    }
    if let Some(example) = schema.get("example") {
        return example.clone();
    }
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = serde_json::Map::new();
        for part in parts {
            if let Value::Object(members) = generated(part, schemas) {
                merged.extend(members);
            }
        }
        return Value::Object(merged);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alternatives) = schema[key].as_array() {
            let chosen = alternatives
                .iter()
                .find(|a| a["type"] != "null")
                .unwrap_or(&alternatives[0]);
            return generated(chosen, schemas);
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        return values[0].clone();
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").unwrap_or(&kinds[0]),
        kind => kind,
    };
    match kind.as_str() {
        Some("object") | None if schema["properties"].is_object() => Value::Object(
            schema["properties"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, property)| (name.clone(), generated(property, schemas)))
                .collect(),
        ),
        Some("object") | None => json!({}),
        Some("array") => json!([generated(&schema["items"], schemas)]),
        Some("integer") | Some("number") => json!(0),
        Some("boolean") => json!(true),
        Some("null") => Value::Null,
        _ => match schema["format"].as_str() {
            Some("date-time") => json!("2024-01-01T00:00:00Z"),
            Some("uuid") => json!("3fa85f64-5717-4562-b3fc-2c963f66afa6"),
            _ => json!("string"),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Requests

/// A request, kept to be sent again (for the errors of its operation).
#[derive(Clone, Debug)]
struct Call {
    method: Method,
    path: String,
    /// Content type and bytes.
    body: Option<(String, Vec<u8>)>,
}

impl Call {
    fn new(method: Method, path: impl Into<String>) -> Call {
        Call {
            method,
            path: path.into(),
            body: None,
        }
    }

    fn get(path: impl Into<String>) -> Call {
        Call::new(Method::GET, path)
    }

    fn post(path: impl Into<String>) -> Call {
        Call::new(Method::POST, path)
    }

    fn put(path: impl Into<String>) -> Call {
        Call::new(Method::PUT, path)
    }

    fn delete(path: impl Into<String>) -> Call {
        Call::new(Method::DELETE, path)
    }

    fn json(self, body: &Value) -> Call {
        self.body("application/json", body.to_string().into_bytes())
    }

    fn xml(self, body: &str) -> Call {
        self.body("application/xml", body.as_bytes().to_vec())
    }

    fn body(mut self, content_type: &str, bytes: Vec<u8>) -> Call {
        self.body = Some((content_type.to_string(), bytes));
        self
    }

    fn content_type(&self) -> &str {
        self.body
            .as_ref()
            .map_or("application/json", |(content_type, _)| content_type)
    }
}

async fn send(app: &TestApp, call: &Call, token: Option<&str>) -> Response {
    let mut request = app.request(call.method.clone(), &call.path);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some((content_type, bytes)) = &call.body {
        request = request
            .header(CONTENT_TYPE, content_type.as_str())
            .body(bytes.clone());
    }
    request.send().await.expect("request failed")
}

/// The status and body of an answer written on a raw connection.
fn parse_raw(text: &str) -> (u16, Value) {
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Sends the head of `call` and the first byte of a 100-byte body, then nothing: the answer
/// comes when the server stops waiting for the rest.
async fn trickle(app: &TestApp, call: &Call, token: &str) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = format!(
        "{} {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: {}\r\n\
         Content-Length: 100\r\n\r\n{{",
        call.method,
        call.path,
        call.content_type()
    );
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", app.port))
        .await
        .unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            answer.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&answer);
            let complete = parse_raw(&text).1 != Value::Null;
            if n == 0 || complete {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    assert!(
        read.is_ok(),
        "{} {}: no answer: {text}",
        call.method,
        call.path
    );
    parse_raw(&text)
}

/// A token signed by the identity provider's key (`kid` `rsa-a`), which the server can only
/// verify with the provider's key set.
fn provider_token() -> String {
    let pem = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rs256-private.pem"
    ))
    .unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-a".into());
    let claims = json!({
        "sub": "alice",
        "exp": jsonwebtoken::get_current_timestamp() + 600,
        "iss": "http://idp.test",
        "scope": "admin",
    });
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(&pem).unwrap()).unwrap()
}

// ---------------------------------------------------------------------------------------------
// A connector proxy

/// What the proxy advertises.
fn commands() -> Value {
    json!([{"id": "bureau/CreditScore", "parameters": [
        {"id": "customer_id", "type": "str", "required": true}
    ]}])
}

fn auths() -> Value {
    json!([{"id": "bureau/OAuth", "parameters": [
        {"id": "client_id", "type": "str", "required": true},
        {"id": "client_secret", "type": "str", "required": true}
    ]}])
}

/// Takes each call (answering 202: the task waits for its callback) and keeps its request.
struct Proxy {
    url: String,
    calls: Arc<Mutex<Vec<Value>>>,
}

async fn proxy_answer(
    request: HttpRequest,
    body: web::Bytes,
    calls: web::Data<Mutex<Vec<Value>>>,
) -> HttpResponse {
    match request.path() {
        "/v1/commands" => HttpResponse::Ok().json(commands()),
        "/v1/auths" => HttpResponse::Ok().json(auths()),
        _ => {
            calls
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            HttpResponse::Accepted().json(json!({
                "command_response": {"body": {"queued": true}, "mimetype": "application/json", "http_status": 202},
                "command_response_version": 2,
                "error": null,
                "wf__logs": ["queued at the bureau"],
            }))
        }
    }
}

impl Proxy {
    fn start() -> Proxy {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let data = web::Data::from(calls.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::to(proxy_answer))
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let url = format!("http://{}", server.addrs()[0]);
        tokio::spawn(server.run());
        Proxy { url, calls }
    }

    fn last_call(&self) -> Value {
        self.calls.lock().unwrap().last().cloned().expect("a call")
    }
}

// ---------------------------------------------------------------------------------------------
// The checker

struct Checker {
    /// The document's operations by `operationId`.
    operations: BTreeMap<String, Value>,
    schemas: Value,
    /// The request of each operation's first success, sent again for its errors.
    calls: BTreeMap<String, Call>,
    /// `operation status [name]` of each example compared with an answer.
    checked: BTreeSet<String>,
    mismatches: Vec<String>,
    /// The real answers, by `operation status [name]`.
    answers: BTreeMap<String, Value>,
}

fn key(op: &str, status: u16, name: &str) -> String {
    format!("{op} {status} {name}").trim_end().to_string()
}

impl Checker {
    fn new() -> Checker {
        let doc: Value = serde_json::from_str(&openapi_document()).unwrap();
        let mut operations = BTreeMap::new();
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                let id = operation["operationId"].as_str().unwrap().to_string();
                operations.insert(id, operation.clone());
            }
        }
        Checker {
            operations,
            schemas: doc["components"]["schemas"].clone(),
            calls: BTreeMap::new(),
            checked: BTreeSet::new(),
            mismatches: Vec::new(),
            answers: BTreeMap::new(),
        }
    }

    fn media(&self, op: &str, status: u16) -> Option<&Value> {
        let content =
            self.operations[op]["responses"][status.to_string()]["content"].as_object()?;
        content.values().next()
    }

    /// The examples of a response: `(name, value)`, the name empty for a lone `example`.
    fn examples(&self, op: &str, status: u16) -> Vec<(String, Value)> {
        let Some(media) = self.media(op, status) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        if let Some(example) = media.get("example") {
            found.push((String::new(), example.clone()));
        }
        if let Some(examples) = media["examples"].as_object() {
            for (name, example) in examples {
                found.push((name.clone(), example["value"].clone()));
            }
        }
        found
    }

    /// The request body example of an operation.
    fn request_example(&self, op: &str) -> Value {
        let content = self.operations[op]["requestBody"]["content"]
            .as_object()
            .unwrap_or_else(|| panic!("{op} takes no body"));
        let example = content.values().next().unwrap()["example"].clone();
        assert!(!example.is_null(), "{op}: no request example");
        example
    }

    /// Sends `call` as `scope` (or without a token), insists on `status`, and compares the
    /// answer with the response's example `name`. Returns the answer's body.
    async fn check(
        &mut self,
        app: &TestApp,
        op: &str,
        status: u16,
        name: &str,
        call: &Call,
        scope: Option<&str>,
    ) -> Value {
        let token = scope.map(|scope| app.token(scope));
        let response = send(app, call, token.as_deref()).await;
        let body = self.answered(op, status, name, call, response).await;
        if (200..300).contains(&status) {
            self.calls
                .entry(op.to_string())
                .or_insert_with(|| call.clone());
        }
        body
    }

    async fn answered(
        &mut self,
        op: &str,
        status: u16,
        name: &str,
        call: &Call,
        response: Response,
    ) -> Value {
        let got = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let text = response.text().await.unwrap();
        assert_eq!(
            got, status,
            "{op}: {} {} answered {got}: {text}",
            call.method, call.path
        );
        if status >= 400 && !content_type.starts_with("application/problem+json") {
            self.mismatches.push(format!(
                "{}: answered as {content_type}",
                key(op, status, name)
            ));
        }
        let body = if content_type.starts_with("application/xml") {
            Value::String(text)
        } else if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{op}: {e}: {text}"))
        };
        self.compare(op, status, name, &body);
        body
    }

    fn compare(&mut self, op: &str, status: u16, name: &str, body: &Value) {
        let key = key(op, status, name);
        let examples = self.examples(op, status);
        if body.is_null() && examples.is_empty() {
            return; // no content
        }
        self.checked.insert(key.clone());
        self.answers
            .entry(key.clone())
            .or_insert_with(|| body.clone());
        let Some((_, example)) = examples.into_iter().find(|(n, _)| n == name) else {
            self.mismatches.push(format!("{key}: no example"));
            return;
        };
        let mut found = Vec::new();
        differences(&example, body, "", &mut found);
        self.mismatches
            .extend(found.into_iter().map(|d| format!("{key}: {d}")));
    }
}

// ---------------------------------------------------------------------------------------------
// The models of the examples

/// start -> user task `approve` -> script `total` -> end; `script` is the script's text.
fn invoices(script: &str) -> String {
    definitions(&format!(
        r#"  <bpmn:process id="invoices" name="Invoices" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:userTask id="approve" name="Approve the invoice" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="total" />
    <bpmn:scriptTask id="total" name="Add VAT"><bpmn:script>{script}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="total" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

const VAT: &str = "total = amount * 6 // 5";
const VAT_OR_NOTHING: &str = "try:\n    total = amount * 6 // 5\nexcept NameError:\n    total = 0";

fn discount_dmn() -> &'static str {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="discounts" name="Discounts" namespace="http://camunda.org/schema/1.0/dmn">
  <decision id="discount" name="Discount">
    <decisionTable id="discount_table" hitPolicy="UNIQUE">
      <input id="amount_in" label="Amount"><inputExpression id="amount_expr" typeRef="integer"><text>amount</text></inputExpression></input>
      <output id="discount_out" name="discount" typeRef="integer" />
      <rule id="small"><description>Small invoices</description><inputEntry id="small_in"><text>&lt; 100</text></inputEntry><outputEntry id="small_out"><text>0</text></outputEntry></rule>
      <rule id="large"><description>Large invoices</description><inputEntry id="large_in"><text>&gt;= 100</text></inputEntry><outputEntry id="large_out"><text>10</text></outputEntry></rule>
    </decisionTable>
  </decision>
</definitions>
"#
}

/// start -> service task `score` (`bureau/CreditScore`, parameter `customer_id`) -> end.
fn scoring() -> String {
    definitions(
        r#"  <bpmn:process id="scoring" name="Scoring" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="score" />
    <bpmn:serviceTask id="score" name="Score the customer">
      <bpmn:extensionElements>
        <spiffworkflow:serviceTaskOperator id="bureau/CreditScore" resultVariable="score">
          <spiffworkflow:parameters><spiffworkflow:parameter id="customer_id" type="str" value="customer_id" /></spiffworkflow:parameters>
        </spiffworkflow:serviceTaskOperator>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="score" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// A signal start event `quarter closed` -> end.
fn closing() -> String {
    definitions(
        r#"  <bpmn:signal id="s_closed" name="quarter closed" />
  <bpmn:process id="closing" name="Closing" isExecutable="true">
    <bpmn:startEvent id="closed"><bpmn:signalEventDefinition id="se" signalRef="s_closed" /></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="closed" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// A sequence flow to an element that does not exist.
fn broken() -> String {
    definitions(
        r#"  <bpmn:process id="orders" isExecutable="true">
    <bpmn:startEvent id="placed" />
    <bpmn:sequenceFlow id="ship" sourceRef="placed" targetRef="nowhere" />
  </bpmn:process>"#,
    )
}

/// The upload of a model file.
fn upload(model: &str, file: &str, content: &str) -> Call {
    let path = format!(
        "/v1.0/process-models/{}/files/{file}",
        model.replace('/', ":")
    );
    Call::put(path).xml(content)
}

fn guid_of(instance: &Value, element: &str) -> String {
    instance["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|t| t["element_id"] == element)
        .unwrap_or_else(|| panic!("no task {element}: {instance}"))["guid"]
        .as_str()
        .unwrap()
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// The test

#[tokio::test]
async fn every_example_is_a_real_answer() {
    let proxy = Proxy::start();
    let proxy_url = proxy.url.clone();
    let app = spawn_app_with(move |s| {
        s.connector_proxy_url = Some(proxy_url);
        s.run_workers = false;
    })
    .await;
    // no database, a short body deadline, a small body limit, an identity provider that is down
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = reserved.local_addr().unwrap();
    drop(reserved);
    let down = spawn_app_without_database_with(|s| {
        s.body_read_timeout_ms = 300;
        s.max_body_bytes = SMALL_BODY_LIMIT;
        s.jwt.jwks_url = Some(format!("http://{nowhere}/jwks"));
        s.jwt.issuer = Some("http://idp.test".into());
    })
    .await;
    let mut c = Checker::new();
    let a = Some(ADMIN);
    let long_name = "x".repeat(300);

    // health (the example shows a warning: one the database certainly has)
    c.check(&app, "status", 200, "", &Call::get("/v1.0/status"), None)
        .await;
    sqlx::query("ALTER TABLE message_instances SET (autovacuum_enabled = false)")
        .execute(&app.pool)
        .await
        .unwrap();
    c.check(
        &app,
        "ready",
        200,
        "",
        &Call::get("/v1.0/health/ready"),
        None,
    )
    .await;

    // process models
    let orders_xml = c.request_example("put_file");
    let orders_xml = orders_xml.as_str().unwrap();
    let call = upload("shop/orders", "orders.bpmn", orders_xml);
    c.check(&app, "put_file", 201, "", &call, a).await;
    for (model, file, content) in [
        ("finance/invoices", "invoices.bpmn", invoices(VAT)),
        (
            "finance/invoices",
            "discount.dmn",
            discount_dmn().to_string(),
        ),
        ("crm/scoring", "scoring.bpmn", scoring()),
        ("finance/closing", "closing.bpmn", closing()),
    ] {
        ok(&app, &upload(model, file, &content)).await;
    }
    let call = upload("shop/returns", "returns.bpmn", &broken());
    c.check(&app, "put_file", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-models?per_page=1");
    c.check(&app, "list_models", 200, "", &call, a).await;
    let call = Call::get("/v1.0/process-models?per_page=0");
    c.check(&app, "list_models", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/-invoices");
    c.check(&app, "show_model", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/finance:nothing");
    c.check(&app, "show_model", 404, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/shop:orders/files/orders.bpmn");
    let file = c.check(&app, "get_file", 200, "", &call, a).await;
    assert_eq!(file, orders_xml, "the file as uploaded");
    let call = Call::get("/v1.0/process-models/-orders/files/orders.bpmn");
    c.check(&app, "get_file", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/shop:nothing/files/orders.bpmn");
    c.check(&app, "get_file", 404, "", &call, a).await;

    // messages: a start, a correlation, a buffered message, a refusal
    let order = c.request_example("send_message");
    let call = Call::post("/v1.0/messages/order%20placed").json(&order);
    c.check(&app, "send_message", 200, "started", &call, a)
        .await;
    let payment = json!({"order_id": order["order_id"], "paid": true});
    let call = Call::post("/v1.0/messages/payment%20received").json(&payment);
    c.check(&app, "send_message", 200, "correlated", &call, a)
        .await;
    let early = json!({"order_id": "A2", "paid": true});
    let buffered = format!(
        "/v1.0/messages/payment%20received?time_to_live_in_seconds=300&message_instance_uuid={BUFFERED_UUID}"
    );
    let call = Call::post(&buffered).json(&early);
    let first = c.check(&app, "send_message", 202, "", &call, a).await;
    // sent again with its idempotency key: the same message, not another one
    let again = c.check(&app, "send_message", 202, "", &call, a).await;
    assert_eq!(again, first, "a replay answers the stored outcome");
    let call = Call::post(&buffered).json(&json!({"order_id": "A3", "paid": true}));
    c.check(&app, "send_message", 409, "", &call, a).await;
    let call = Call::post("/v1.0/messages/payment%20received")
        .json(&json!({"order_id": "A3", "paid": true}));
    c.check(&app, "send_message", 400, "", &call, a).await;
    let call = Call::post("/v1.0/messages/order%20placed").body("text/plain", b"{}".to_vec());
    c.check(&app, "send_message", 415, "", &call, a).await;
    let call = Call::get("/v1.0/messages?message_type=send&state=completed&per_page=1");
    let sent = c.check(&app, "list_messages", 200, "", &call, a).await;
    let call = Call::get("/v1.0/messages?per_page=0");
    c.check(&app, "list_messages", 400, "", &call, a).await;
    let correlated = sent["results"][0]["id"].as_i64().unwrap();
    let call = Call::get(format!("/v1.0/message-instances/{correlated}"));
    c.check(&app, "show_message", 200, "", &call, a).await;
    let call = Call::get("/v1.0/message-instances/x");
    c.check(&app, "show_message", 400, "", &call, a).await;
    let call = Call::get("/v1.0/message-instances/999999");
    c.check(&app, "show_message", 404, "", &call, a).await;

    // instances: started, shown, listed, a task completed
    let start = |data: &Value| Call::post("/v1.0/process-instances/finance:invoices").json(data);
    let call = start(&c.request_example("start_instance"));
    let invoice = c.check(&app, "start_instance", 201, "", &call, a).await;
    let invoice = invoice["process_instance"]["id"].as_i64().unwrap();
    let call = start(&json!(["C-42"]));
    c.check(&app, "start_instance", 400, "", &call, a).await;
    let call = Call::post("/v1.0/process-instances/finance:nothing");
    c.check(&app, "start_instance", 404, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/finance:invoices");
    c.check(&app, "show_model", 200, "", &call, a).await;
    let call = Call::get(format!(
        "/v1.0/process-instances/finance:invoices/{invoice}"
    ));
    let shown = c.check(&app, "show_instance", 200, "", &call, a).await;
    let call = Call::get("/v1.0/process-instances/finance:invoices/x");
    c.check(&app, "show_instance", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-instances/finance:invoices/999999");
    c.check(&app, "show_instance", 404, "", &call, a).await;
    let call =
        Call::get("/v1.0/process-instances?process_model_identifier=finance/invoices&per_page=2");
    c.check(&app, "list_instances", 200, "", &call, a).await;
    let call = Call::get("/v1.0/process-instances?per_page=0");
    c.check(&app, "list_instances", 400, "", &call, a).await;
    let task = format!("/v1.0/tasks/{invoice}/{}", guid_of(&shown, "approve"));
    let call = Call::put(&task).json(&c.request_example("complete_task"));
    c.check(&app, "complete_task", 200, "", &call, a).await;
    c.check(&app, "complete_task", 400, "", &call, a).await;
    let call = Call::put(format!("/v1.0/tasks/999999/{}", uuid::Uuid::nil())).json(&json!({}));
    c.check(&app, "complete_task", 404, "", &call, a).await;
    let call = Call::put(&task).body("text/plain", b"{}".to_vec());
    c.check(&app, "complete_task", 415, "", &call, a).await;

    // an instance suspended, resumed, terminated
    let other = ok(&app, &start(&json!({"customer_id": "C-7", "amount": 80}))).await;
    let other = other["process_instance"]["id"].as_i64().unwrap();
    let command =
        |id: i64, action: &str| Call::post(format!("/v1.0/process-instances/{id}/{action}"));
    c.check(&app, "suspend", 200, "", &command(other, "suspend"), a)
        .await;
    let shown = ok(&app, &Call::get(format!("/v1.0/process-instances/{other}"))).await;
    let call = Call::put(format!(
        "/v1.0/tasks/{other}/{}",
        guid_of(&shown, "approve")
    ))
    .json(&json!({"approved": true}));
    c.check(&app, "complete_task", 409, "", &call, a).await;
    c.check(&app, "resume", 200, "", &command(other, "resume"), a)
        .await;
    c.check(&app, "resume", 409, "", &command(other, "resume"), a)
        .await;
    c.check(&app, "terminate", 200, "", &command(other, "terminate"), a)
        .await;
    c.check(&app, "suspend", 409, "", &command(other, "suspend"), a)
        .await;
    c.check(
        &app,
        "terminate",
        409,
        "",
        &command(invoice, "terminate"),
        a,
    )
    .await;
    for (op, action) in [
        ("suspend", "suspend"),
        ("resume", "resume"),
        ("terminate", "terminate"),
    ] {
        let call = Call::post(format!("/v1.0/process-instances/x/{action}"));
        c.check(&app, op, 400, "", &call, a).await;
    }
    for (op, action) in [
        ("suspend", "suspend"),
        ("resume", "resume"),
        ("terminate", "terminate"),
        ("retry", "retry"),
        ("migrate_instance", "migrate"),
    ] {
        let call = Call::post(format!("/v1.0/process-instances/999999/{action}"));
        c.check(&app, op, 404, "", &call, a).await;
    }

    // the console's overview, and a command on many instances
    let call = Call::get("/v1.0/stats/messages?window=hour");
    c.check(&app, "message_chart", 200, "", &call, a).await;
    let call = Call::get("/v1.0/stats/messages?window=week");
    c.check(&app, "message_chart", 400, "", &call, a).await;
    let approving = ok(&app, &start(&json!({"customer_id": "C-10", "amount": 70}))).await;
    let approving = approving["process_instance"]["id"].as_i64().unwrap();
    let call = Call::get("/v1.0/process-models/finance:invoices/element-counts");
    c.check(&app, "element_counts", 200, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/-orders/element-counts");
    c.check(&app, "element_counts", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-models/shop:nothing/element-counts");
    c.check(&app, "element_counts", 404, "", &call, a).await;
    let mut body = c.request_example("bulk");
    body["process_instance_ids"] = json!([approving, 999999]);
    let call = Call::post("/v1.0/bulk/process-instances").json(&body);
    c.check(&app, "bulk", 200, "", &call, a).await;
    let call = Call::post("/v1.0/bulk/process-instances")
        .json(&json!({"action": "retry", "process_instance_ids": []}));
    c.check(&app, "bulk", 400, "", &call, a).await;
    let call = Call::post("/v1.0/bulk/process-instances").body("text/plain", b"{}".to_vec());
    c.check(&app, "bulk", 415, "", &call, a).await;
    ok(&app, &command(approving, "terminate")).await;

    // a new version: an instance moves to it, one in error is retried on it
    let waiting = ok(&app, &start(&json!({"customer_id": "C-8", "amount": 50}))).await;
    let waiting = waiting["process_instance"]["id"].as_i64().unwrap();
    let failing = ok(&app, &start(&json!({"customer_id": "C-9"}))).await;
    let failing = failing["process_instance"]["id"].as_i64().unwrap();
    let shown = ok(
        &app,
        &Call::get(format!("/v1.0/process-instances/{failing}")),
    )
    .await;
    let call = Call::put(format!(
        "/v1.0/tasks/{failing}/{}",
        guid_of(&shown, "approve")
    ))
    .json(&json!({"approved": true}));
    let failed = ok(&app, &call).await;
    assert_eq!(failed["process_instance"]["status"], "error", "{failed}");
    let call = Call::get("/v1.0/stats/overview");
    c.check(&app, "overview", 200, "", &call, a).await;
    let call = upload(
        "finance/invoices",
        "invoices.bpmn",
        &invoices(VAT_OR_NOTHING),
    );
    let model = c.check(&app, "put_file", 200, "", &call, a).await;
    let version = model["current_version"].as_str().unwrap().to_string();
    let call = command(waiting, "migrate");
    c.check(&app, "migrate_instance", 200, "", &call, a).await;
    let call = command(waiting, "migrate").body("application/json", b"{".to_vec());
    c.check(&app, "migrate_instance", 400, "", &call, a).await;
    let call = command(invoice, "migrate");
    c.check(&app, "migrate_instance", 409, "", &call, a).await;
    let call = command(failing, "retry").json(&json!({"target_version": version}));
    c.check(&app, "retry", 200, "", &call, a).await;
    let call = command(waiting, "retry");
    c.check(&app, "retry", 409, "", &call, a).await;
    let call = command(waiting, "retry").body("application/json", b"{".to_vec());
    c.check(&app, "retry", 400, "", &call, a).await;
    let call = Call::delete("/v1.0/process-models/finance:invoices");
    c.check(&app, "delete_model", 409, "", &call, a).await;
    let call = Call::delete("/v1.0/process-models/-invoices");
    c.check(&app, "delete_model", 400, "", &call, a).await;
    let call = Call::delete("/v1.0/process-models/finance:nothing");
    c.check(&app, "delete_model", 404, "", &call, a).await;

    // decisions
    let call = Call::get("/v1.0/decisions/discount");
    c.check(&app, "show_decision", 200, "", &call, a).await;
    let call = Call::get(format!("/v1.0/decisions/{long_name}"));
    c.check(&app, "show_decision", 400, "", &call, a).await;
    let call = Call::get("/v1.0/decisions/nothing");
    c.check(&app, "show_decision", 404, "", &call, a).await;
    let evaluate = |data: Value| Call::post("/v1.0/decisions/discount/evaluate").json(&data);
    let call = evaluate(json!({"data": {"amount": 120}}));
    c.check(&app, "evaluate_decision", 200, "", &call, a).await;
    let call = evaluate(json!({"data": {"amount": "many"}}));
    c.check(&app, "evaluate_decision", 400, "", &call, a).await;
    let call = Call::post("/v1.0/decisions/nothing/evaluate").json(&json!({}));
    c.check(&app, "evaluate_decision", 404, "", &call, a).await;
    let archive = closing()
        .replace("quarter closed", "year closed")
        .replace(r#"id="closing""#, r#"id="archive""#);
    ok(&app, &upload("finance/archive", "archive.bpmn", &archive)).await;
    ok(
        &app,
        &upload("finance/archive", "discount.dmn", discount_dmn()),
    )
    .await;
    let call = Call::get("/v1.0/decisions/discount");
    c.check(&app, "show_decision", 409, "", &call, a).await;
    let call = evaluate(json!({"data": {"amount": 120}}));
    c.check(&app, "evaluate_decision", 409, "", &call, a).await;
    let call = Call::delete("/v1.0/process-models/finance:archive");
    c.check(&app, "delete_model", 204, "", &call, a).await;

    // signals
    let call = Call::post("/v1.0/signals/quarter%20closed").json(&c.request_example("send_signal"));
    c.check(&app, "send_signal", 200, "", &call, a).await;
    let call = Call::post(format!("/v1.0/signals/{long_name}"));
    c.check(&app, "send_signal", 400, "", &call, a).await;

    // service tasks: a call waits for its callback
    c.check(
        &app,
        "service_tasks",
        200,
        "",
        &Call::get("/v1.0/service-tasks"),
        a,
    )
    .await;
    let call = Call::get("/v1.0/authentications");
    c.check(&app, "authentications", 200, "", &call, a).await;
    let score = |customer: &str| {
        Call::post("/v1.0/process-instances/crm:scoring").json(&json!({"customer_id": customer}))
    };
    let scored = ok(&app, &score("C-42")).await;
    let scored = scored["process_instance"]["id"].as_i64().unwrap();
    dispatch_due_once(&app.state).await;
    let request = proxy.last_call();
    let guid = request["wf__task_id"].as_str().unwrap();
    let callback = format!("/v1.0/tasks/{scored}/{guid}/callback");
    let task_token = request["wf__callback_token"].as_str().unwrap().to_string();
    let call = Call::put(&callback).json(&c.request_example("callback"));
    let response = send(&app, &call, Some(&task_token)).await;
    c.answered("callback", 200, "", &call, response).await;
    c.calls.insert("callback".into(), call);
    let unknown = format!("/v1.0/tasks/999999/{}/callback", uuid::Uuid::nil());
    let call = Call::put(unknown).json(&c.request_example("callback"));
    c.check(&app, "callback", 400, "", &call, a).await;
    let suspended = ok(&app, &score("C-43")).await;
    let suspended = suspended["process_instance"]["id"].as_i64().unwrap();
    dispatch_due_once(&app.state).await;
    let request = proxy.last_call();
    ok(&app, &command(suspended, "suspend")).await;
    let guid = request["wf__task_id"].as_str().unwrap();
    let call = Call::put(format!("/v1.0/tasks/{suspended}/{guid}/callback"))
        .json(&c.request_example("callback"));
    c.check(&app, "callback", 409, "", &call, a).await;
    let call = Call::put(&callback).body("text/plain", b"{}".to_vec());
    c.check(&app, "callback", 415, "", &call, a).await;
    let call = Call::get(format!("/v1.0/process-instances/{scored}/connector-logs"));
    c.check(&app, "connector_logs", 200, "", &call, a).await;
    let call = Call::get("/v1.0/process-instances/x/connector-logs");
    c.check(&app, "connector_logs", 400, "", &call, a).await;
    let call = Call::get("/v1.0/process-instances/999999/connector-logs");
    c.check(&app, "connector_logs", 404, "", &call, a).await;

    // secrets
    let secret = Call::put("/v1.0/secrets/SMTP_PASSWORD").json(&json!({"value": "hunter2"}));
    c.check(&app, "put_secret", 201, "", &secret, a).await;
    c.check(&app, "put_secret", 200, "", &secret, a).await;
    let call = Call::put("/v1.0/secrets/1SMTP").json(&json!({"value": "hunter2"}));
    c.check(&app, "put_secret", 400, "", &call, a).await;
    let call = Call::put("/v1.0/secrets/SMTP_PASSWORD").body("text/plain", b"{}".to_vec());
    c.check(&app, "put_secret", 415, "", &call, a).await;
    c.check(
        &app,
        "list_secrets",
        200,
        "",
        &Call::get("/v1.0/secrets"),
        a,
    )
    .await;
    let call = Call::get("/v1.0/secrets?per_page=0");
    c.check(&app, "list_secrets", 400, "", &call, a).await;
    let call = Call::delete("/v1.0/secrets/SMTP_PASSWORD");
    c.check(&app, "delete_secret", 204, "", &call, a).await;
    c.check(&app, "delete_secret", 404, "", &call, a).await;
    let call = Call::delete("/v1.0/secrets/1SMTP");
    c.check(&app, "delete_secret", 400, "", &call, a).await;

    // API keys
    let key_body = c.request_example("create_api_key");
    let call = Call::post("/v1.0/api-keys").json(&key_body);
    c.check(&app, "create_api_key", 201, "", &call, a).await;
    c.check(&app, "create_api_key", 409, "", &call, a).await;
    let call = Call::post("/v1.0/api-keys").json(&json!({"name": "", "scope": "messages:send"}));
    c.check(&app, "create_api_key", 400, "", &call, a).await;
    let call = Call::post("/v1.0/api-keys").body("text/plain", b"{}".to_vec());
    c.check(&app, "create_api_key", 415, "", &call, a).await;
    c.check(
        &app,
        "list_api_keys",
        200,
        "",
        &Call::get("/v1.0/api-keys"),
        a,
    )
    .await;
    let call = Call::delete(format!(
        "/v1.0/api-keys/{}",
        key_body["name"].as_str().unwrap()
    ));
    c.check(&app, "revoke_api_key", 200, "", &call, a).await;
    c.check(&app, "revoke_api_key", 404, "", &call, a).await;
    let call = Call::delete(format!("/v1.0/api-keys/{long_name}"));
    c.check(&app, "revoke_api_key", 400, "", &call, a).await;

    // data stores
    let store = json!({
        "location": "finance",
        "name": "Approved vendors",
        "description": "Vendors invoices may be paid to",
        "data": {"vendors": ["ACME", "Globex"]},
    });
    let call = Call::put("/v1.0/data-stores/json/approved_vendors").json(&store);
    c.check(&app, "put_data_store", 201, "", &call, a).await;
    c.check(&app, "put_data_store", 200, "", &call, a).await;
    let call = Call::put("/v1.0/data-stores/typeahead/cities").json(&json!({}));
    c.check(&app, "put_data_store", 400, "", &call, a).await;
    let call = Call::get("/v1.0/data-stores/json/approved_vendors?location=finance");
    c.check(&app, "show_data_store", 200, "", &call, a).await;
    let call = Call::get("/v1.0/data-stores/bogus/approved_vendors");
    c.check(&app, "show_data_store", 400, "", &call, a).await;
    let call = Call::get("/v1.0/data-stores/json/nothing");
    c.check(&app, "show_data_store", 404, "", &call, a).await;
    let call = Call::get("/v1.0/data-stores");
    c.check(&app, "list_data_stores", 200, "", &call, a).await;
    let call = Call::get("/v1.0/data-stores?kind=bogus");
    c.check(&app, "list_data_stores", 400, "", &call, a).await;
    let call = Call::delete("/v1.0/data-stores/json/approved_vendors?location=finance");
    c.check(&app, "delete_data_store", 204, "", &call, a).await;
    c.check(&app, "delete_data_store", 404, "", &call, a).await;
    let call = Call::delete("/v1.0/data-stores/bogus/approved_vendors");
    c.check(&app, "delete_data_store", 400, "", &call, a).await;

    // the errors every operation may answer, on the request of its success
    check_common_errors(&mut c, &app, &down).await;

    if let Ok(file) = std::env::var("OPENAPI_ANSWERS") {
        std::fs::write(file, serde_json::to_string_pretty(&c.answers).unwrap()).unwrap();
    }

    // every example was compared with an answer, and every JSON success has one
    let mut unchecked = Vec::new();
    for (op, operation) in &c.operations {
        for (status, response) in operation["responses"].as_object().unwrap() {
            let status: u16 = status.parse().unwrap();
            for (name, _) in c.examples(op, status) {
                let key = key(op, status, &name);
                let listed = NOT_PROVOKED.iter().any(|(k, _)| *k == key);
                if c.checked.contains(&key) == listed {
                    let why = if listed {
                        "provoked, yet listed as not provoked"
                    } else {
                        "not compared with an answer"
                    };
                    unchecked.push(format!("{key}: {why}"));
                }
            }
            let json_answer = response["content"].get("application/json").is_some();
            if (200..300).contains(&status)
                && json_answer
                && op != "openapi_json"
                && c.examples(op, status).is_empty()
            {
                unchecked.push(format!("{op} {status}: no example"));
            }
        }
    }
    c.mismatches.extend(unchecked);
    assert!(
        c.mismatches.is_empty(),
        "{} differences between the examples and the answers:\n{}",
        c.mismatches.len(),
        c.mismatches.join("\n")
    );

    // the check can fail: the examples a schema alone gives are not these answers
    for (key, op, status) in [
        ("send_message 200 started", "send_message", "200"),
        ("send_message 202", "send_message", "202"),
    ] {
        let media = &c.operations[op]["responses"][status]["content"]["application/json"];
        let mut found = Vec::new();
        differences(
            &generated(&media["schema"], &c.schemas),
            &c.answers[key],
            "",
            &mut found,
        );
        assert!(!found.is_empty(), "{key}: the schema's own example passes");
    }
}

/// Sends `call` as `admin`, insists on a success, returns the body: a step that no example
/// shows.
async fn ok(app: &TestApp, call: &Call) -> Value {
    let response = send(app, call, Some(&app.token(ADMIN))).await;
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(
        status.is_success(),
        "{} {} answered {status}: {text}",
        call.method,
        call.path
    );
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// 401 (no token), 403 (a token without the scope), 408 (a body that never comes), 413 (a
/// body over the limit) and 503 (no database; an identity provider that is down) on the
/// request of each operation's success. The 408s and 503s, each a wait for a deadline, are
/// sent all at once.
async fn check_common_errors(c: &mut Checker, app: &TestApp, down: &TestApp) {
    let admin = down.token(ADMIN);
    let mut trickled = Vec::new();
    let mut unavailable = Vec::new();
    for (op, call) in c.calls.clone() {
        let statuses: Vec<u16> = c.operations[&op]["responses"]
            .as_object()
            .unwrap()
            .keys()
            .map(|s| s.parse().unwrap())
            .filter(|status| !c.examples(&op, *status).is_empty())
            .collect();
        for status in statuses {
            match status {
                401 => {
                    let response = send(app, &call, None).await;
                    c.answered(&op, 401, "", &call, response).await;
                }
                403 => {
                    let token = app.token(refused_scope(&op));
                    let response = send(app, &call, Some(&token)).await;
                    c.answered(&op, 403, "", &call, response).await;
                }
                408 => trickled.push((op.clone(), call.clone())),
                413 => {
                    let filler = "x".repeat(SMALL_BODY_LIMIT);
                    let bytes = if call.content_type() == "application/xml" {
                        format!("<a>{filler}</a>")
                    } else {
                        json!({ "filler": filler }).to_string()
                    };
                    let large = call.clone().body(call.content_type(), bytes.into_bytes());
                    let response = send(down, &large, Some(&admin)).await;
                    c.answered(&op, 413, "", &large, response).await;
                }
                503 => {
                    let code = &c.examples(&op, 503)[0].1["error_code"];
                    if c.operations[&op].get("security").is_none() {
                        // readiness: alone, or it finds the pool busy with the others (200)
                        let response = send(down, &call, None).await;
                        c.answered(&op, 503, "", &call, response).await;
                        continue;
                    }
                    let token = if code == "identity_provider_unavailable" {
                        provider_token()
                    } else {
                        admin.clone()
                    };
                    unavailable.push((op.clone(), call.clone(), token));
                }
                _ => {}
            }
        }
    }
    let answers = join_all(trickled.iter().map(|(_, call)| trickle(down, call, &admin))).await;
    for ((op, _), (status, body)) in trickled.iter().zip(answers) {
        assert_eq!(status, 408, "{op}: {body}");
        c.compare(op, 408, "", &body);
    }
    let responses = join_all(
        unavailable
            .iter()
            .map(|(_, call, token)| send(down, call, Some(token))),
    )
    .await;
    for ((op, call, _), response) in unavailable.iter().zip(responses) {
        c.answered(op, 503, "", call, response).await;
    }
}

/// The scope of a token that may not do what an operation does: none, or for an instance's
/// commands one that may read the instance (without it, the instance is not found: 404).
fn refused_scope(op: &str) -> &'static str {
    match op {
        "suspend" | "resume" | "terminate" | "retry" | "migrate_instance" | "complete_task" => {
            "instances:read:*"
        }
        _ => "nothing",
    }
}

/// The comparison finds what misled in the examples Swagger UI showed before: a started
/// instance with an `error` and status `running`, a buffered message `accepted` with a
/// `failure_reason`, a 403 naming another scope.
#[test]
fn the_comparison_finds_what_misled() {
    let found = |example: Value, answer: Value| {
        let mut found = Vec::new();
        differences(&example, &answer, "", &mut found);
        found
    };
    let started = json!({"process_instance": {"id": 1, "status": "waiting", "error": null}});
    let shown = json!({"process_instance": {"id": 0, "status": "running", "error": {
        "element_id": "string", "message": "string", "error_code": "string"
    }}});
    assert_eq!(found(shown, started.clone()).len(), 2);
    assert!(found(started.clone(), started).is_empty());
    let buffered = json!({"message_instance": {"state": "buffered", "failure_reason": null}});
    let shown = json!({"message_instance": {"state": "accepted", "failure_reason": "no_receiver"}});
    assert_eq!(found(shown, buffered).len(), 3);
    let refused = json!({"error_code": "not_authorized", "required_scope": "secrets:manage"});
    let shown = json!({"error_code": "not_authorized", "required_scope": "models:write"});
    assert_eq!(found(shown, refused).len(), 1);
    // arrays by their first item; other values by their type
    assert!(found(
        json!({"a": [1, "x"], "b": "x"}),
        json!({"a": [2], "b": "y"})
    )
    .is_empty());
    assert_eq!(found(json!({"a": []}), json!({"a": [1]})).len(), 1);
    assert_eq!(found(json!({"a": 1}), json!({"a": "1", "b": 2})).len(), 2);
}
