//! What a script leaves that cannot be stored (a NUL in a string or a key, task data over
//! `MAX_TASK_DATA_BYTES`) puts its instance in error naming the element, on every path a
//! script runs on: a start, a delivered message, a fired timer. Never a 500, never a step
//! that fails again and again (issue 31, items 8 and 11).

use crate::domain::{send, show, start, upload_ok};
use crate::helpers::{spawn_app_with, TestApp};
use crate::models::definitions;
use chrono::{Duration, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};
use workflow_backend::workers::timer_firer::fire_due_once;

/// A limit small enough to pass cheaply in a test.
const LIMIT: usize = 100_000;

async fn app() -> TestApp {
    spawn_app_with(|s| {
        s.run_workers = false;
        s.scripts.workers = 1;
        s.scripts.max_task_data_bytes = LIMIT;
    })
    .await
}

/// start -> `{before}` -> script task `run` with `source` -> end.
fn script_after(process_id: &str, before: &str, source: &str) -> String {
    definitions(&format!(
        r#"<bpmn:message id="m_{process_id}" name="{process_id} go" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="{first}" />
    {before}
    <bpmn:scriptTask id="run"><bpmn:script>{source}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="run" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
        first = if before.is_empty() { "run" } else { "before" },
    ))
}

fn script_model(process_id: &str, source: &str) -> String {
    script_after(process_id, "", source)
}

/// The error of an instance that must be in error, from its stored row.
async fn stored_error(app: &TestApp, id: i64) -> Value {
    let shown = show(app, id).await;
    assert_eq!(shown["status"], "error", "error: {}", shown["error"]);
    shown["error"].clone()
}

fn assert_names(error: &Value, code: &str, fragment: &str) {
    assert_eq!(error["element_id"], "run", "{error}");
    assert_eq!(error["error_code"], code, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(fragment),
        "{fragment:?} not in {message:?}"
    );
}

#[tokio::test]
async fn a_start_whose_script_leaves_what_cannot_be_stored_errs_naming_it() {
    let app = app().await;
    let cases = [
        ("nul_value", "x = chr(0)", "script_data_unstorable", "$.x"),
        (
            "nul_key",
            "x = {'a' + chr(0): 1}",
            "script_data_unstorable",
            "a key at $.x",
        ),
        (
            "nul_nested",
            "x = [1, {'b': 'c' + chr(0)}]",
            "script_data_unstorable",
            "$.x[1].b",
        ),
        (
            "too_large",
            "x = 'a' * 200000",
            "script_data_limit",
            "100000 bytes",
        ),
    ];
    for (name, source, code, fragment) in cases {
        let model = format!("output/{name}");
        upload_ok(&app, &model, "s.bpmn", &script_model(name, source)).await;
        let (status, body) = start(&app, &model, &json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {body}");
        assert_eq!(body["process_instance"]["status"], "error", "{body}");
        let id = body["process_instance"]["id"].as_i64().unwrap();
        assert_names(&stored_error(&app, id).await, code, fragment);
    }
}

/// An exception's message may hold a NUL too: the error is stored with it escaped.
#[tokio::test]
async fn an_exception_whose_message_holds_a_nul_is_stored() {
    let app = app().await;
    let source = "raise ValueError('bad' + chr(0) + 'value')";
    upload_ok(
        &app,
        "output/raise",
        "s.bpmn",
        &script_model("raise", source),
    )
    .await;
    let (status, body) = start(&app, "output/raise", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let error = stored_error(&app, id).await;
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("ValueError: bad\\x00value"), "{error}");
}

/// A message whose delivery runs the script is answered once with the instance in error;
/// the same message again finds nothing waiting.
#[tokio::test]
async fn a_delivered_message_whose_script_leaves_a_nul_errs_the_instance() {
    let app = app().await;
    let wait = r#"<bpmn:intermediateCatchEvent id="before"><bpmn:messageEventDefinition messageRef="m_waits" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="before" targetRef="run" />"#;
    upload_ok(
        &app,
        "output/waits",
        "s.bpmn",
        &script_after("waits", wait, "x = chr(0)"),
    )
    .await;
    let (status, body) = start(&app, "output/waits", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let (status, delivered) = send(&app, "waits go", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{delivered}");
    assert_names(
        &stored_error(&app, id).await,
        "script_data_unstorable",
        "NUL",
    );
    let (status, again) = send(&app, "waits go", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{again}");
    assert_eq!(again["error_code"], "message_not_accepted", "{again}");
}

/// A timer whose step runs the script fires once: the instance errs, and no later round
/// takes the timer again.
#[tokio::test]
async fn a_fired_timer_whose_script_leaves_too_much_errs_the_instance_once() {
    let app = app().await;
    let wait = r#"<bpmn:intermediateCatchEvent id="before"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="before" targetRef="run" />"#;
    upload_ok(
        &app,
        "output/timed",
        "s.bpmn",
        &script_after("timed", wait, "x = 'a' * 200000"),
    )
    .await;
    let (status, body) = start(&app, "output/timed", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let later = Utc::now() + Duration::hours(2);
    let round = fire_due_once(&app.state, later).await;
    assert_eq!((round.claimed, round.fired, round.failed), (1, 1, 0));
    assert_names(
        &stored_error(&app, id).await,
        "script_data_limit",
        "100000 bytes",
    );
    // past the lease of a failed firing: nothing is taken again
    let round = fire_due_once(&app.state, later + Duration::minutes(5)).await;
    assert_eq!(round.claimed, 0, "{round:?}");
}

/// With the default limits (4 MiB of task data, 64 MB of memory), 5 MB of task data errs the
/// instance, and so do 16 to 28 MB: over the data limit, out of memory in the script, or out
/// of memory while the worker writes its answer (it then ends without one: `script_crashed`);
/// never a 503 that a retrying client, or the timer worker, would repeat for ever. The next
/// script runs.
#[tokio::test]
async fn task_data_over_the_default_limit_errs_the_instance() {
    let app = spawn_app_with(|s| s.scripts.workers = 1).await;
    assert_eq!(app.settings.scripts.max_task_data_bytes, 4 * 1024 * 1024);
    let errs = ["script_data_limit", "script_memory_limit", "script_crashed"];
    for megabytes in [5, 16, 20, 24, 28] {
        let model = format!("output/mb{megabytes}");
        let source = format!("x = 'a' * {megabytes}000000");
        let xml = script_model(&format!("mb{megabytes}"), &source);
        upload_ok(&app, &model, "s.bpmn", &xml).await;
        let (status, body) = start(&app, &model, &json!({})).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{megabytes} MB: {}",
            body["error_code"]
        );
        let error = &body["process_instance"]["error"];
        assert_eq!(error["element_id"], "run", "{error}");
        let code = error["error_code"].as_str().unwrap_or_default();
        assert!(errs.contains(&code), "{megabytes} MB: {error}");
        if megabytes == 5 {
            assert_eq!(code, "script_data_limit", "{error}");
            assert!(
                error["message"].as_str().unwrap().contains("4194304 bytes"),
                "{error}"
            );
        }
    }
    upload_ok(
        &app,
        "output/small",
        "s.bpmn",
        &script_model("small", "x = 1"),
    )
    .await;
    let (status, body) = start(&app, "output/small", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
}

/// Integers beyond 64 bits keep every digit through the API, storage and scripts (as Python
/// and Postgres keep them), and a float with an exponent is still a float after storage.
#[tokio::test]
async fn integers_beyond_64_bits_are_kept_exactly_through_storage_and_scripts() {
    let app = app().await;
    let xml = definitions(
        r#"<bpmn:process id="exact" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="first" />
    <bpmn:scriptTask id="first"><bpmn:script>c = a + 1
d = b - 1
e = 10 ** 30
f = 1e16</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="first" targetRef="wait" />
    <bpmn:manualTask id="wait" />
    <bpmn:sequenceFlow id="f3" sourceRef="wait" targetRef="second" />
    <bpmn:scriptTask id="second"><bpmn:script>g = c + 1
floats = [isinstance(x, float) for x in (big, f)]
ints = [isinstance(x, int) for x in (a, b, e)]</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f4" sourceRef="second" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "output/exact", "e.bpmn", &xml).await;
    let body = r#"{"a": 18446744073709551616, "b": -9223372036854775809, "big": 1.5e300}"#;
    let response = app
        .request(
            reqwest::Method::POST,
            "/v1.0/process-instances/output:exact",
        )
        .bearer_auth(app.token("admin"))
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let text = response.text().await.unwrap();
    for exact in [
        "\"c\":18446744073709551617",
        "\"d\":-9223372036854775810",
        "\"e\":1000000000000000000000000000000",
    ] {
        assert!(text.contains(exact), "{exact} not in {text}");
    }
    let started: Value = serde_json::from_str(&text).unwrap();
    let id = started["process_instance"]["id"].as_i64().unwrap();
    let task = crate::domain::waiting_task(&app, id, "wait").await;
    let response = app
        .request(reqwest::Method::PUT, &format!("/v1.0/tasks/{id}/{task}"))
        .bearer_auth(app.token("admin"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    assert!(text.contains("\"g\":18446744073709551618"), "{text}");
    assert!(text.contains("\"a\":18446744073709551616"), "{text}");
    let done: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(done["task_data"]["floats"], json!([true, true]), "{text}");
    assert_eq!(
        done["task_data"]["ints"],
        json!([true, true, true]),
        "{text}"
    );
}
