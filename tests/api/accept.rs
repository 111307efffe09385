//! What SpiffArena accepts is accepted here too (issue 32): file names with spaces and
//! parentheses, models with faults SpiffWorkflow only meets when the element runs (returned
//! as warnings, the instance erring there), and process models calling themselves.

use crate::domain::*;
use crate::helpers::spawn_app_without_workers;
use crate::models::{definitions, user_task_process};
use reqwest::StatusCode;
use serde_json::{json, Value};

fn file_url(model: &str, file: &str) -> String {
    format!(
        "/v1.0/process-models/{}/files/{}",
        model.replace('/', ":"),
        urlencode(file)
    )
}

/// Names SpiffArena's users give their files go up, come down (named in the attachment) and
/// go with their model.
#[tokio::test]
async fn file_names_with_spaces_and_parentheses_round_trip() {
    let app = spawn_app_without_workers().await;
    let names = [
        "Sub process.bpmn",
        "TC-1.0 - Send message (v2).bpmn",
        "Übersicht & 'draft'.bpmn",
    ];
    for (i, name) in names.iter().enumerate() {
        let (status, body) = upload(
            &app,
            "names/spaced",
            &urlencode(name),
            &user_task_process(&format!("p{i}")),
        )
        .await;
        assert!(status.is_success(), "{name}: {status} {body}");
    }
    let (status, body) = upload(
        &app,
        "names/spaced",
        "form%20schema.json",
        "{\"type\": \"object\"}",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a JSON file is kept with the model: {body}"
    );
    let files: Vec<&str> = body["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for name in names.iter().chain(&["form schema.json"]) {
        assert!(files.contains(name), "{name} in {files:?}");
    }
    for name in names {
        let response = app
            .get_as(&file_url("names/spaced", name), "models:read")
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        let disposition = response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_string();
        if name.is_ascii() {
            assert_eq!(disposition, format!("attachment; filename=\"{name}\""));
        } else {
            assert!(disposition.contains("filename*=UTF-8''"), "{disposition}");
        }
        let text = response.text().await.unwrap();
        assert!(text.contains("<bpmn:definitions"), "{name}");
    }
    for bad in [
        "a%2Fb.bpmn",
        "a%5Cb.bpmn",
        "a..b.bpmn",
        "a%01b.bpmn",
        "a.txt",
    ] {
        let (status, body) = upload(&app, "names/spaced", bad, &user_task_process("bad")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let long = urlencode(&format!("{}.bpmn", "a".repeat(251)));
    let (status, body) = upload(&app, "names/spaced", &long, &user_task_process("long")).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_file_name")),
        "{body}"
    );
    let deleted = app
        .request(reqwest::Method::DELETE, "/v1.0/process-models/names:spaced")
        .bearer_auth(app.token("models:write"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = app
        .get_as(&file_url("names/spaced", names[0]), "models:read")
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

/// `countdown` calls itself while `n > 0`, counting the levels in `depth` (each call's data
/// merged back into its caller's).
fn countdown() -> String {
    definitions(
        r#"<bpmn:process id="countdown" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="more" />
    <bpmn:exclusiveGateway id="more" default="f_done" />
    <bpmn:sequenceFlow id="f1" sourceRef="more" targetRef="down"><bpmn:conditionExpression>n &gt; 0</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:scriptTask id="down"><bpmn:script>n = n - 1
depth = depth + 1</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="down" targetRef="again" />
    <bpmn:callActivity id="again" calledElement="countdown" />
    <bpmn:sequenceFlow id="f3" sourceRef="again" targetRef="done" />
    <bpmn:sequenceFlow id="f_done" sourceRef="more" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// A process calling itself runs as deep as it calls, up to `MAX_CALL_DEPTH` (16) calls; one
/// call deeper errs the instance at that call activity.
#[tokio::test]
async fn a_process_calling_itself_runs_to_the_documented_depth_and_errs_past_it() {
    let app = spawn_app_without_workers().await;
    let (status, body) = upload(&app, "calls/countdown", "countdown.bpmn", &countdown()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let limit = workflow_backend::bpmn::MAX_CALL_DEPTH as i64;
    for n in [0, 3, limit] {
        let id = start_ok(&app, "calls/countdown", &json!({"n": n, "depth": 0})).await;
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "n = {n}: {shown}");
        assert_eq!(
            (&shown["data"]["n"], &shown["data"]["depth"]),
            (&json!(0), &json!(n)),
            "{shown}"
        );
    }
    let id = start_ok(
        &app,
        "calls/countdown",
        &json!({"n": limit + 1, "depth": 0}),
    )
    .await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    let deepest = vec!["again"; limit as usize + 1].join("/");
    assert_eq!(shown["error"]["element_id"], deepest.as_str(), "{shown}");
    let message = shown["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 16 calls deep"), "{message}");
}
