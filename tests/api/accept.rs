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
