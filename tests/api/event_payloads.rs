//! Event payloads over HTTP (SpiffWorkflow's `spiffworkflow:payloadExpression` and
//! `spiffworkflow:variableName` on a `bpmn:signal`, `bpmn:error` or `bpmn:escalation`): a
//! signal's payload from one instance's throw, or from the signals API's body, reaches other
//! instances' catches; errors and escalations carry theirs to the boundary that catches them.

use crate::domain::*;
use crate::helpers::{spawn_app_without_workers, TestApp};
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A file of SpiffWorkflow's test suite, in the conformance corpus.
fn suite_file(corpus: &std::path::Path, path: &str) -> String {
    let file = corpus.join("spiffworkflow-tests").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The `bpmn:signal` `release`, with `extensions` (payloadExpression, variableName).
fn release_signal(extensions: &str) -> String {
    format!(
        r#"<bpmn:signal id="sig_release" name="release"><bpmn:extensionElements>{extensions}</bpmn:extensionElements></bpmn:signal>"#
    )
}

/// Process `process_id` waits for `release` (its signal's variable, if `variable`), then
/// waits at a user task so that the data can be read.
fn waiter(process_id: &str, variable: Option<&str>) -> String {
    let extensions = variable
        .map(|v| format!("<spiffworkflow:variableName>{v}</spiffworkflow:variableName>"))
        .unwrap_or_default();
    definitions(&format!(
        r#"{}
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="look" />
    <bpmn:userTask id="look" />
    <bpmn:sequenceFlow id="f3" sourceRef="look" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
        release_signal(&extensions)
    ))
}

/// Throws `release` with the payload `{"batch": batch, "by": "releaser"}`.
/// Uploads `payloads/held`: an instance of it waits for `release`, storing its payload in `note`.
async fn upload_held(app: &TestApp) {
    upload_ok(
        app,
        "payloads/held",
        "h.bpmn",
        &waiter("held", Some("note")),
    )
    .await;
}

fn thrower() -> String {
    definitions(&format!(
        r#"{}
  <bpmn:process id="releaser" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="throw" />
    <bpmn:endEvent id="throw"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:endEvent>
  </bpmn:process>"#,
        release_signal(
            r#"<spiffworkflow:payloadExpression>{"batch": batch, "by": "releaser"}</spiffworkflow:payloadExpression>"#
        )
    ))
}

/// POST /v1.0/signals/{name} with this body (None: no body).
async fn send_signal(app: &TestApp, name: &str, body: Option<&str>) -> (StatusCode, Value) {
    let mut request = app
        .client
        .post(format!("{}/v1.0/signals/{}", app.address, urlencode(name)))
        .bearer_auth(app.token("signals:send"));
    if let Some(body) = body {
        request = request
            .header("Content-Type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// One instance throws `release` with a payload its expression made from its data; the
/// waiting instance of another model stores it in its signal's variable, and one whose
/// signal names no variable stores nothing.
#[tokio::test]
async fn a_thrown_signals_payload_reaches_another_instances_catch() {
    let app = spawn_app_without_workers().await;
    upload_held(&app).await;
    upload_ok(&app, "payloads/plain", "p.bpmn", &waiter("plain", None)).await;
    upload_ok(&app, "payloads/releaser", "r.bpmn", &thrower()).await;
    let held = start_ok(&app, "payloads/held", &json!({"mine": 1})).await;
    let plain = start_ok(&app, "payloads/plain", &json!({"mine": 2})).await;
    let thrower = start_ok(&app, "payloads/releaser", &json!({"batch": 7})).await;
    assert_eq!(show(&app, thrower).await["status"], "complete");

    let shown = show(&app, held).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert_eq!(
        shown["data"],
        json!({"mine": 1, "note": {"batch": 7, "by": "releaser"}})
    );
    let shown = show(&app, plain).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert_eq!(shown["data"], json!({"mine": 2}));
}

/// The signals API's body is the payload: the catch stores it, and so does the signal start
/// event of a model it starts; no body stores null. The body passes the same checks as a
/// message payload.
#[tokio::test]
async fn the_signals_api_body_is_the_payload() {
    let app = spawn_app_without_workers().await;
    upload_held(&app).await;
    let started_by_signal = definitions(&format!(
        r#"{}
  <bpmn:process id="on_release" isExecutable="true">
    <bpmn:startEvent id="go"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="go" targetRef="work" />
    <bpmn:userTask id="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
        release_signal("<spiffworkflow:variableName>release</spiffworkflow:variableName>")
    ));
    upload_ok(&app, "payloads/on-release", "o.bpmn", &started_by_signal).await;
    let held = start_ok(&app, "payloads/held", &json!({})).await;

    let (status, body) =
        send_signal(&app, "release", Some(r#"{"closing_date": "2026-11-30"}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["delivered_to"], json!([held]));
    let payload = json!({"closing_date": "2026-11-30"});
    assert_eq!(show(&app, held).await["data"], json!({"note": payload}));
    let started = body["started"][0].as_i64().expect("one started");
    assert_eq!(
        show(&app, started).await["data"],
        json!({"release": payload})
    );

    // any JSON value; no body is null
    let second = start_ok(&app, "payloads/held", &json!({})).await;
    let (status, body) = send_signal(&app, "release", Some("[1, \"two\"]")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        show(&app, second).await["data"],
        json!({"note": [1, "two"]})
    );
    let third = start_ok(&app, "payloads/held", &json!({})).await;
    let (status, body) = send_signal(&app, "release", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["delivered_to"], json!([third]));
    assert_eq!(show(&app, third).await["data"], json!({"note": null}));

    // the door checks of message payloads; nothing is delivered
    let fourth = start_ok(&app, "payloads/held", &json!({})).await;
    let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
    for (body, code) in [
        (r#"{"x": "a\u0000b"}"#.to_string(), "invalid_payload"),
        (deep, "invalid_payload"),
        ("1.7976931348623157e308".to_string(), "invalid_payload"),
        ("{not json".to_string(), "invalid_json"),
    ] {
        let (status, answer) = send_signal(&app, "release", Some(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error_code"], code, "{body}: {answer}");
    }
    assert_eq!(show(&app, fourth).await["status"], "waiting");
}

/// SpiffWorkflow's error_event_payload.bpmn (EventPayloadTest.testErrorEvent): the error end
/// event in the subprocess throws the payload `payload`; the error boundary on the subprocess
/// stores it in `result`. Its `bpmn:task` passes through here, so the start data decides.
#[tokio::test]
async fn an_errors_payload_reaches_the_boundary_that_catches_it() {
    let app = spawn_app_without_workers().await;
    let corpus = conformance_or_skip!();
    let xml = suite_file(&corpus, "spiff/data/error_event_payload.bpmn");
    upload_ok(&app, "payloads/error", "error_event_payload.bpmn", &xml).await;
    let id = start_ok(
        &app,
        "payloads/error",
        &json!({"error": true, "payload": "ERROR!"}),
    )
    .await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"]["result"], "ERROR!", "{shown}");
    let caught = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["element_id"] == "catch" && t["state"] == "COMPLETED");
    assert!(caught, "{shown}");
}

/// SpiffWorkflow's escalation_event_payload.bpmn (EventPayloadTest.testEscalationEvent): the
/// escalation end event's payload reaches the escalation boundary's variable.
#[tokio::test]
async fn an_escalations_payload_reaches_the_boundary_that_catches_it() {
    let app = spawn_app_without_workers().await;
    let corpus = conformance_or_skip!();
    let xml = suite_file(&corpus, "spiff/data/escalation_event_payload.bpmn");
    upload_ok(
        &app,
        "payloads/escalation",
        "escalation_event_payload.bpmn",
        &xml,
    )
    .await;
    for (escalate, result) in [(true, json!("late!")), (false, Value::Null)] {
        let data = json!({"escalation": escalate, "payload": "late!"});
        let id = start_ok(&app, "payloads/escalation", &data).await;
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "{shown}");
        assert_eq!(shown["data"]["result"], result, "{shown}");
    }
}

/// A payload expression is Python that the upload checks like any other: as SpiffWorkflow
/// loads such a file (and fails only when the element runs), it is accepted with a warning
/// naming the element and the expression.
#[tokio::test]
async fn a_payload_expression_that_does_not_compile_is_a_warning_at_upload() {
    let app = spawn_app_without_workers().await;
    let xml = definitions(&format!(
        r#"{}
  <bpmn:process id="releaser" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="throw" />
    <bpmn:endEvent id="throw"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:endEvent>
  </bpmn:process>"#,
        release_signal(
            "<spiffworkflow:payloadExpression>{'a': }</spiffworkflow:payloadExpression>"
        )
    ));
    let (status, body) = upload(&app, "payloads/broken", "b.bpmn", &xml).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let warnings = body["warnings"].to_string();
    assert!(warnings.contains("payloadExpression"), "{body}");
    assert!(warnings.contains("sig_release"), "{body}");
}
