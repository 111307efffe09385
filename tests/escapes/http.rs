//! A sample of the techniques end to end: a model whose script tries one is uploaded and
//! started over HTTP; the instance is in `error` and nothing of the server's (its JWT secret,
//! its database URL) nor the canary file is in any answer. Two instances on one worker show
//! that what one model's script changes in shared state does not reach another's.

use crate::helpers::{spawn_app_with, TestApp, TEST_JWT_SECRET};
use crate::support::{canary_path, MARKER};
use reqwest::StatusCode;
use serde_json::{json, Value};

const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">"#;

/// start -> script task `run` with `source` -> end.
fn script_model(process_id: &str, source: &str) -> String {
    format!(
        r#"{HEADER}
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="run" />
    <bpmn:scriptTask id="run"><bpmn:script>{source}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="run" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>
</bpmn:definitions>
"#
    )
}

async fn one_worker_app() -> TestApp {
    spawn_app_with(|s| {
        s.scripts.workers = 1;
        s.scripts.time_limit_ms = 5_000;
        s.scripts.queue_timeout_ms = 10_000;
    })
    .await
}

/// Uploads the script as model `escapes/{name}` and starts it; the start's answer.
async fn run_model(app: &TestApp, name: &str, source: &str) -> Value {
    let source = source.replace("{PATH}", canary_path());
    let model = format!("escapes:{name}");
    let response = app
        .client
        .put(format!(
            "{}/v1.0/process-models/{model}/files/s.bpmn",
            app.address
        ))
        .bearer_auth(app.token("models:write"))
        .header("Content-Type", "application/xml")
        .body(script_model(name, &source))
        .send()
        .await
        .expect("upload");
    assert!(response.status().is_success(), "upload of {name}");
    let response = app
        .client
        .post(format!("{}/v1.0/process-instances/{model}", app.address))
        .bearer_auth(app.token("admin"))
        .json(&json!({}))
        .send()
        .await
        .expect("start");
    assert_eq!(response.status(), StatusCode::CREATED, "start of {name}");
    let body: Value = response.json().await.expect("a JSON answer");
    assert_nothing_of_the_server(app, &body);
    body
}

fn assert_nothing_of_the_server(app: &TestApp, body: &Value) {
    let text = body.to_string();
    assert!(
        !text.contains(TEST_JWT_SECRET),
        "the JWT secret leaked: {text}"
    );
    assert!(
        !text.contains(&app.settings.database_url),
        "the database URL leaked: {text}"
    );
    assert!(!text.contains(MARKER), "the canary file was read: {text}");
}

async fn instance_error(app: &TestApp, name: &str, source: &str) -> String {
    let body = run_model(app, name, source).await;
    assert_eq!(body["process_instance"]["status"], "error", "{body}");
    body["process_instance"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn route_one_and_two_and_a_format_string_over_http() {
    let app = one_worker_app().await;
    // route 1: importlib's import_module, then the parent's environment (the JWT secret)
    let message = instance_error(
        &app,
        "route1",
        "os = dateparser.languages.loader.import_module('os')\n\
         x = os.read(os.open('/proc/%d/environ' % os.getppid(), 0), 4096) + os.read(os.open('{PATH}', 0), 100)",
    )
    .await;
    assert!(
        message.contains("'import_module' (a function of 'importlib')"),
        "{message}"
    );
    // route 2: operator's methodcaller to a function's globals
    let message = instance_error(
        &app,
        "route2",
        "mc = dateparser.languages.dictionary.methodcaller\n\
         g = mc('__getattribute__', '__globals__')(json.loads)\n\
         x = g['__builtins__']['open']('{PATH}').read()",
    )
    .await;
    assert!(
        message.contains("'methodcaller' (a class of 'operator')"),
        "{message}"
    );
    // str.format of the class, past the source check
    let message = instance_error(
        &app,
        "format",
        "x = str.format('{0.__globals__[__builtins__]}', json.loads)",
    )
    .await;
    assert!(
        message.contains("\"__globals__\" is an invalid attribute name"),
        "{message}"
    );
    // a module another module holds
    let message =
        instance_error(&app, "sysmodules", "x = calendar.sys.modules['os'].environ").await;
    assert!(message.contains("no access to module 'sys'"), "{message}");
}

/// Issue 31, item 9, as reported: one model's script sets a trap on decimal's default
/// context and calendar's first weekday; another model's script, on the same worker, sees
/// neither.
#[tokio::test]
async fn one_models_script_does_not_change_what_anothers_sees() {
    let app = one_worker_app().await;
    let changed = run_model(
        &app,
        "changer",
        "decimal.DefaultContext.traps[decimal.Inexact] = True\ncalendar.setfirstweekday(3)",
    )
    .await;
    assert_eq!(
        changed["process_instance"]["status"], "complete",
        "{changed}"
    );
    let seen = run_model(
        &app,
        "reader",
        "third = str(decimal.Decimal(1) / decimal.Decimal(3))\nfirst = calendar.firstweekday()",
    )
    .await;
    assert_eq!(seen["process_instance"]["status"], "complete", "{seen}");
    assert_eq!(
        seen["task_data"],
        json!({"third": "0.3333333333333333333333333333", "first": 0})
    );
}
