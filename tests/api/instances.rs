//! Process models (upload, refusal, listing) and process instances (start, user task, error,
//! concurrent completion), over HTTP; plus the SpiffArena fixtures of the conformance corpus.

use crate::domain::*;
use crate::helpers::spawn_app;
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::test]
async fn a_model_upload_creates_then_replaces_and_is_listed() {
    let app = spawn_app().await;
    let (status, created) = upload(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["identifier"], "approvals/simple");
    assert_eq!(created["primary_process_id"], "approve");
    let (status, _) = upload(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, list) = get(&app, "/v1.0/process-models").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["pagination"]["total"], 1);
    let (status, shown) = get(&app, "/v1.0/process-models/approvals:simple").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["files"][0]["name"], "approve.bpmn");
    let (status, body) = get(&app, "/v1.0/process-models/approvals:missing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error_code"], "process_model_not_found");
}

#[tokio::test]
async fn unrunnable_models_are_refused_with_file_element_and_reason() {
    let app = spawn_app().await;
    let cases = [
        ("not xml", "<bpmn:definitions".to_string(), None),
        (
            "unsupported element",
            models::definitions(
                r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s" /><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="c" /><bpmn:callActivity id="c" /></bpmn:process>"#,
            ),
            Some("c"),
        ),
        (
            "flow to nowhere",
            models::definitions(
                r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s" /><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="nowhere" /></bpmn:process>"#,
            ),
            Some("f"),
        ),
        (
            "unknown messageRef",
            models::definitions(
                r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"><bpmn:messageEventDefinition id="e" messageRef="nope" /></bpmn:startEvent></bpmn:process>"#,
            ),
            Some("s"),
        ),
        // a script's syntax error is a warning, not a refusal, as SpiffWorkflow loads such a
        // file (tests/api/accept.rs)
    ];
    for (what, xml, element) in cases {
        let (status, body) = upload(&app, "bad/model", "bad.bpmn", &xml).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        assert_eq!(
            body["error_code"], "invalid_process_model",
            "{what}: {body}"
        );
        assert_eq!(body["file_name"], "bad.bpmn", "{what}: {body}");
        if let Some(element) = element {
            assert_eq!(body["element_id"], element, "{what}: {body}");
        }
        assert!(
            !body["reason"].as_str().unwrap_or("").is_empty(),
            "{what}: {body}"
        );
    }
    // nothing was stored
    let (_, list) = get(&app, "/v1.0/process-models").await;
    assert_eq!(list["pagination"]["total"], 0);
}

#[tokio::test]
async fn one_model_owns_a_start_message() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "a/first",
        "f.bpmn",
        &models::one_step("first", "begin"),
    )
    .await;
    let (status, body) = upload(
        &app,
        "a/second",
        "s.bpmn",
        &models::one_step("second", "begin"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "message_start_conflict");
    assert_eq!(body["process_model_identifier"], "a/first");
}

#[tokio::test]
async fn a_user_task_waits_then_completes_and_the_instance_runs_on() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    let (status, started) = start(&app, "approvals/simple", &json!({"amount": 21})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    assert_eq!(started["process_instance"]["status"], "user_input_required");
    let id = started["process_instance"]["id"].as_i64().unwrap();

    let guid = waiting_task(&app, id, "approve").await;
    let (status, done) = complete_task(&app, id, &guid, &json!({"approved": true})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete");
    assert_eq!(
        done["task_data"],
        json!({"amount": 21, "approved": true, "total": 42})
    );

    let shown = show(&app, id).await;
    let elements: Vec<&str> = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["element_id"].as_str().unwrap())
        .collect();
    assert_eq!(elements, ["start", "approve", "double", "done"]);
    assert!(shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["state"] == "COMPLETED"));

    let (status, again) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(again["error_code"], "not_waiting");
    let (status, unknown) =
        complete_task(&app, id, &uuid::Uuid::new_v4().to_string(), &json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown["error_code"], "task_not_found");
}

#[tokio::test]
async fn two_concurrent_completions_of_one_task_exactly_one_wins() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    let id = start_ok(&app, "approvals/simple", &json!({"amount": 1})).await;
    let guid = waiting_task(&app, id, "approve").await;
    let (a, b) = futures_util::future::join(
        complete_task(&app, id, &guid, &json!({"by": "a"})),
        complete_task(&app, id, &guid, &json!({"by": "b"})),
    )
    .await;
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::BAD_REQUEST],
        "{a:?} {b:?}"
    );
    let loser = if a.0 == StatusCode::OK { &b.1 } else { &a.1 };
    assert_eq!(loser["error_code"], "not_waiting");
}

#[tokio::test]
async fn a_failing_script_puts_the_instance_in_error_with_element_and_message() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    let id = start_ok(&app, "approvals/simple", &json!({})).await;
    let guid = waiting_task(&app, id, "approve").await;
    // `amount` is missing: the script fails with a NameError
    let (status, body) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "error");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error");
    assert_eq!(shown["error"]["element_id"], "double");
    assert!(
        shown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("NameError"),
        "{shown}"
    );
}

#[tokio::test]
async fn instances_are_listed_and_filtered_and_need_their_scopes() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "approvals/simple",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    upload_ok(&app, "misc/one", "one.bpmn", &models::one_step("one", "go")).await;
    start_ok(&app, "approvals/simple", &json!({})).await;
    send(&app, "go", &json!({}), &[]).await;

    let (_, all) = get(&app, "/v1.0/process-instances").await;
    assert_eq!(all["pagination"]["total"], 2);
    let (_, waiting) = get(&app, "/v1.0/process-instances?status=user_input_required").await;
    assert_eq!(waiting["pagination"]["total"], 1);
    let (_, by_model) = get(
        &app,
        "/v1.0/process-instances?process_model_identifier=misc:one",
    )
    .await;
    assert_eq!(by_model["results"][0]["status"], "complete");

    let denied = app
        .client
        .post(format!(
            "{}/v1.0/process-instances/approvals:simple",
            app.address
        ))
        .bearer_auth(app.token("instances:create:misc/*"))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    let allowed = app
        .client
        .post(format!(
            "{}/v1.0/process-instances/approvals:simple",
            app.address
        ))
        .bearer_auth(app.token("instances:create:approvals/*"))
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), StatusCode::CREATED);
}

/// Every SpiffArena fixture folder loads as a model (read from the conformance corpus).
#[tokio::test]
async fn the_spiffarena_fixtures_load() {
    let root = conformance_or_skip!().join("spiffarena-fixtures");
    assert!(
        root.is_dir(),
        "the SpiffArena fixtures are missing: {} is not a directory",
        root.display()
    );
    let mut folders: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(folders.len() >= 7, "fixtures missing: {folders:?}");
    for folder in folders {
        // each folder on its own database: some fixtures share start message names on purpose
        let app = spawn_app().await;
        let model = format!("fixtures/{}", folder.file_name().unwrap().to_string_lossy());
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "bpmn"))
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let xml = std::fs::read_to_string(&file).unwrap();
            let (status, body) = upload(&app, &model, &name, &xml).await;
            assert!(status.is_success(), "{model}/{name}: {status} {body}");
        }
    }
    let app = spawn_app().await;
    for name in ["message_receiver.bpmn", "message_sender.bpmn"] {
        let xml =
            std::fs::read_to_string(root.join("message_send_one_conversation").join(name)).unwrap();
        upload_ok(&app, "fixtures/message_send_one_conversation", name, &xml).await;
    }
    // the conversation runs end to end as SpiffArena runs it
    let id = start_ok(&app, "fixtures/message_send_one_conversation", &json!({"customer_id": "sartography", "po_number": 1001, "amount": "One Billion Dollars! Mwhahahahahaha", "description": "But seriously."})).await;
    let guid = waiting_task(&app, id, "invoice_form").await;
    let (status, body) = complete_task(&app, id, &guid, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    assert_eq!(body["task_data"]["the_payload"]["po_number"], json!(1001));
    let _: Value = body;
}

/// The document's show paths: a message instance at `/v1.0/message-instances/{id}`, an
/// instance under its model (SpiffArena's path; another model's path does not find it). The
/// older paths still answer.
#[tokio::test]
async fn instances_and_messages_are_shown_at_their_own_paths() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "shown/model",
        "m.bpmn",
        &models::user_task_process("shown_p"),
    )
    .await;
    let id = start_ok(&app, "shown/model", &json!({})).await;
    let (status, body) = get(&app, &format!("/v1.0/process-instances/shown:model/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], id);
    assert!(body["tasks"][0]["element_id"].is_string(), "{body}");
    let (status, body) = get(&app, &format!("/v1.0/process-instances/other:model/{id}")).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("process_instance_not_found"))
    );
    let (status, _) = get(&app, &format!("/v1.0/process-instances/{id}")).await;
    assert_eq!(status, StatusCode::OK);

    let (_, body) = send(&app, "nobody waits", &json!({}), &[]).await;
    let message = body["message_instance_id"].as_i64().unwrap();
    let (status, shown) = get(&app, &format!("/v1.0/message-instances/{message}")).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["failure_reason"], "no_receiver");
    let (status, _) = get(&app, &format!("/v1.0/messages/{message}")).await;
    assert_eq!(status, StatusCode::OK);
}
