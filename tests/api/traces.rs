//! Traces, exported over OTLP to a receiver on 127.0.0.1 that decodes the exporter's protobuf
//! requests as a collector does: a message's spans from the request to the commit, the caller's
//! `traceparent` continued, and nothing in the way when the collector is down.
//!
//! The exporter batches spans on its own thread; each test drives it with its one-shot flush
//! ([`flush`]), which returns once the receiver has answered, instead of waiting for a batch.

use crate::domain::*;
use crate::helpers::{spawn_app_with, TestApp};
use crate::models;
use actix_web::{web, App, HttpResponse, HttpServer};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message;
use reqwest::StatusCode;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use workflow_backend::config::TraceSettings;
use workflow_backend::workers::timer_firer::fire_due_once;

/// SpanKind values of the OTLP protocol.
pub const SERVER: i32 = 2;
pub const CLIENT: i32 = 3;
pub const INTERNAL: i32 = 1;

/// A span as the receiver got it: ids in hex, attributes as JSON.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub kind: i32,
    pub start: u64,
    pub end: u64,
    pub attributes: Map<String, Value>,
    /// The status code (0 unset, 1 ok, 2 error).
    pub status: i32,
    /// The resource's `service.name`.
    pub service: String,
}

impl ReceivedSpan {
    pub fn attribute(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }

    /// Whether `other` lies within this span's time.
    pub fn encloses(&self, other: &ReceivedSpan) -> bool {
        self.start <= other.start && other.end <= self.end
    }
}

/// An OTLP/HTTP trace receiver: every `POST /v1/traces` it got, decoded.
pub struct OtlpReceiver {
    pub url: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
}

impl OtlpReceiver {
    pub fn start() -> OtlpReceiver {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let data = web::Data::from(spans.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
                .route("/v1/traces", web::post().to(receive))
        })
        .workers(1)
        .bind("127.0.0.1:0")
        .unwrap();
        let url = format!("http://{}", server.addrs()[0]);
        tokio::spawn(server.run());
        OtlpReceiver { url, spans }
    }

    /// Settings that export to this receiver.
    pub fn settings(&self) -> TraceSettings {
        TraceSettings {
            endpoint: format!("{}/v1/traces", self.url),
            service_name: "workflow-backend-test".into(),
        }
    }

    /// The spans of one trace, in the order they ended.
    pub fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

async fn receive(body: web::Bytes, spans: web::Data<Mutex<Vec<ReceivedSpan>>>) -> HttpResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return HttpResponse::BadRequest().finish();
    };
    let mut received = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default();
        let service = attributes(resource.attributes)["service.name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for span in resource_spans
            .scope_spans
            .into_iter()
            .flat_map(|scope| scope.spans)
        {
            received.push(ReceivedSpan {
                name: span.name,
                trace_id: hex::encode(span.trace_id),
                span_id: hex::encode(span.span_id),
                parent_span_id: hex::encode(span.parent_span_id),
                kind: span.kind,
                start: span.start_time_unix_nano,
                end: span.end_time_unix_nano,
                attributes: attributes(span.attributes),
                status: span.status.map_or(0, |s| s.code),
                service: service.clone(),
            });
        }
    }
    // an empty ExportTraceServiceResponse: full success
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .finish()
}

fn attributes(list: Vec<opentelemetry_proto::tonic::common::v1::KeyValue>) -> Map<String, Value> {
    list.into_iter()
        .map(|kv| {
            let value = match kv.value.and_then(|v| v.value) {
                Some(any_value::Value::StringValue(s)) => json!(s),
                Some(any_value::Value::IntValue(i)) => json!(i),
                Some(any_value::Value::BoolValue(b)) => json!(b),
                Some(any_value::Value::DoubleValue(d)) => json!(d),
                other => json!(format!("{other:?}")),
            };
            (kv.key, value)
        })
        .collect()
}

/// Exports every span that has ended (the exporter's one-shot flush); when it returns, the
/// receiver holds them.
pub async fn flush(app: &TestApp) {
    let traces = app.state.traces.clone().expect("traces are configured");
    tokio::task::spawn_blocking(move || traces.flush())
        .await
        .unwrap()
        .expect("the spans are exported");
}

/// A new W3C trace id and a parent span id, as a caller's `traceparent` carries them.
pub fn caller_trace() -> (String, String, String) {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let parent = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
    let header = format!("00-{trace_id}-{parent}-01");
    (trace_id, parent, header)
}

pub fn one_named<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one {name:?} span in {spans:#?}");
    found[0]
}

async fn send_traced(app: &TestApp, name: &str, payload: &Value, traceparent: &str) -> Value {
    let response = app
        .client
        .post(app.url(&format!("/v1.0/messages/{name}")))
        .bearer_auth(app.token(ADMIN))
        .header("traceparent", traceparent)
        .json(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

async fn traced_app(receiver: &OtlpReceiver) -> TestApp {
    let settings = receiver.settings();
    spawn_app_with(move |s| s.traces = Some(settings)).await
}

/// A traced server with the order process (`trace placed` starts, `trace paid` correlates).
async fn traced_orders_app(receiver: &OtlpReceiver) -> TestApp {
    let app = traced_app(receiver).await;
    upload_ok(
        &app,
        "traced/orders",
        "orders.bpmn",
        &models::order_process("orders", "trace placed", "trace paid"),
    )
    .await;
    app
}

#[tokio::test]
async fn a_message_start_is_traced_from_request_to_commit() {
    let receiver = OtlpReceiver::start();
    let app = traced_orders_app(&receiver).await;
    let (trace_id, caller_span, traceparent) = caller_trace();

    let answer = send_traced(
        &app,
        "trace placed",
        &json!({"order_id": "o1"}),
        &traceparent,
    )
    .await;
    let instance = answer["process_instance"]["id"]
        .as_i64()
        .expect("the instance started");
    flush(&app).await;

    let spans = receiver.trace(&trace_id);
    let request = one_named(&spans, "POST /v1.0/messages/{modified_message_name}");
    assert_eq!(request.kind, SERVER);
    assert_eq!(
        request.parent_span_id, caller_span,
        "continues the caller's trace"
    );
    assert_eq!(request.service, "workflow-backend-test");
    assert_eq!(request.attribute("http.response.status_code"), &json!(200));
    assert_eq!(request.attribute("http.request.method"), &json!("POST"));
    assert_eq!(
        request.attribute("workflow.message.name"),
        &json!("trace placed")
    );
    assert_eq!(request.attribute("workflow.instance.id"), &json!(instance));
    assert_eq!(
        request.attribute("workflow.process_model"),
        &json!("traced/orders")
    );

    let step = one_named(&spans, "engine step");
    assert_eq!(step.kind, INTERNAL);
    assert_eq!(step.parent_span_id, request.span_id);
    assert_eq!(step.attribute("workflow.instance.id"), &json!(instance));
    assert_eq!(
        step.attribute("workflow.process_model"),
        &json!("traced/orders")
    );
    assert_eq!(step.attribute("workflow.event"), &json!("start"));
    assert_eq!(
        step.attribute("workflow.message.name"),
        &json!("trace placed")
    );

    let commit = one_named(&spans, "commit");
    assert_eq!(commit.parent_span_id, request.span_id);
    assert_eq!(commit.attribute("workflow.instances"), &json!(1));
    assert!(step.end <= commit.start, "the step runs before the commit");
    assert!(request.encloses(step) && request.encloses(commit));
    assert!(
        spans.iter().all(|s| s.status != 2),
        "nothing failed: {spans:#?}"
    );
}

#[tokio::test]
async fn a_correlation_is_traced_in_its_own_callers_trace() {
    let receiver = OtlpReceiver::start();
    let app = traced_orders_app(&receiver).await;
    let (first_trace, _, first) = caller_trace();
    let started = send_traced(&app, "trace placed", &json!({"order_id": "o2"}), &first).await;
    let (trace_id, caller_span, traceparent) = caller_trace();

    let answer = send_traced(&app, "trace paid", &json!({"order_id": "o2"}), &traceparent).await;
    let instance = &started["process_instance"]["id"];
    assert_eq!(&answer["process_instance"]["id"], instance);
    assert_eq!(answer["process_instance"]["status"], "complete");
    flush(&app).await;

    let spans = receiver.trace(&trace_id);
    let request = one_named(&spans, "POST /v1.0/messages/{modified_message_name}");
    assert_eq!(request.parent_span_id, caller_span);
    let step = one_named(&spans, "engine step");
    assert_eq!(step.parent_span_id, request.span_id);
    assert_eq!(step.attribute("workflow.event"), &json!("message"));
    assert_eq!(
        step.attribute("workflow.message.name"),
        &json!("trace paid")
    );
    assert_eq!(step.attribute("workflow.instance.id"), instance);
    one_named(&spans, "commit");
    assert!(
        receiver.trace(&first_trace).len() >= 3,
        "the first request has its own trace"
    );
}

#[tokio::test]
async fn a_request_without_traceparent_starts_a_trace_and_errors_are_marked() {
    let receiver = OtlpReceiver::start();
    let app = traced_app(&receiver).await;

    let response = app
        .client
        .get(app.url("/v1.0/process-instances/999999"))
        .bearer_auth(app.token(ADMIN))
        .header("traceparent", "not a traceparent")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    flush(&app).await;

    let spans: Vec<ReceivedSpan> = receiver.spans.lock().unwrap().clone();
    let request = one_named(&spans, "GET /v1.0/process-instances/{id}");
    assert_eq!(
        request.parent_span_id, "",
        "a malformed traceparent starts a new trace"
    );
    assert_eq!(request.attribute("http.response.status_code"), &json!(404));
    assert_eq!(
        request.attribute("http.route"),
        &json!("/v1.0/process-instances/{id}")
    );
    assert_eq!(
        request.status, 0,
        "a client error is not the server's failure"
    );
}

#[tokio::test]
async fn a_collector_that_is_down_costs_requests_nothing() {
    // a port nothing listens on: bound, then released
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1/traces", closed.local_addr().unwrap());
    drop(closed);
    let app = spawn_app_with(move |s| {
        s.traces = Some(TraceSettings {
            endpoint,
            service_name: "workflow-backend-test".into(),
        })
    })
    .await;
    upload_ok(
        &app,
        "traced/one",
        "one.bpmn",
        &models::one_step("one", "trace once"),
    )
    .await;
    let (_, _, traceparent) = caller_trace();

    send_traced(&app, "trace once", &json!({}), &traceparent).await;

    let traces = app.state.traces.clone().unwrap();
    let flushed = tokio::task::spawn_blocking(move || traces.flush())
        .await
        .unwrap();
    assert!(
        flushed.is_err(),
        "the export fails, and says so to whoever flushes"
    );
}

#[tokio::test]
async fn a_timer_firing_starts_a_trace_of_its_own() {
    let receiver = OtlpReceiver::start();
    let settings = receiver.settings();
    let app = spawn_app_with(move |s| {
        s.traces = Some(settings);
        s.run_workers = false;
    })
    .await;
    let model = models::waits_an_hour();
    upload_ok(&app, "traced/hour", "hour.bpmn", &model).await;
    let id = start_ok(&app, "traced/hour", &json!({})).await;

    let later = chrono::Utc::now() + chrono::Duration::hours(2);
    let round = fire_due_once(&app.state, later).await;
    assert_eq!(round.fired, 1);
    flush(&app).await;

    let all: Vec<ReceivedSpan> = receiver.spans.lock().unwrap().clone();
    let fired = one_named(&all, "timer fired");
    assert_eq!(fired.parent_span_id, "", "the first span of its trace");
    assert_eq!(fired.attribute("workflow.instance.id"), &json!(id));
    let spans = receiver.trace(&fired.trace_id);
    let step = one_named(&spans, "engine step");
    assert_eq!(step.parent_span_id, fired.span_id);
    assert_eq!(step.attribute("workflow.event"), &json!("timer"));
    let commit = one_named(&spans, "commit");
    assert_eq!(commit.parent_span_id, fired.span_id);
}
