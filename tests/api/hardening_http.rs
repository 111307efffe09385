//! Issue 31, the HTTP side: a new API key gets no more than its creator has, Swagger UI is
//! framed and scripted as strictly as the console, the callback endpoint answers as the
//! connector-proxy contract says, and a secret's value never shows in an instance's error.

use crate::domain::*;
use crate::helpers::{spawn_app, TestApp};
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};

// ---- 5. API-key scopes are contained in the creator's grants

async fn create_key(app: &TestApp, scope_asked: &str, caller: &str) -> (StatusCode, Value) {
    let name = format!("k{}", uuid::Uuid::new_v4().simple());
    let response = app
        .post_json(
            "/v1.0/api-keys",
            &json!({"name": name, "scope": scope_asked}),
            caller,
        )
        .await;
    let status = response.status();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn a_glob_that_matches_the_text_admin_cannot_make_an_admin_key() {
    let app = spawn_app().await;
    // `a*` grants api-keys:write but not secrets:manage
    let response = app.get_as("/v1.0/secrets", "a*").await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    let (status, body) = create_key(&app, "admin", "a*").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error_code"], "not_authorized");
    assert_eq!(body["required_scope"], "admin");
    // nor a glob wider than its own, nor `*`
    for asked in ["*", "a* s*", "secrets:manage"] {
        let (status, body) = create_key(&app, asked, "a*").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{asked}: {body}");
    }
    let (status, body) = create_key(
        &app,
        "instances:read:*",
        "api-keys:write instances:read:finance/*",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["required_scope"], "instances:read:*");
}

#[tokio::test]
async fn a_key_may_still_get_a_narrowing_of_the_creators_scopes() {
    let app = spawn_app().await;
    for (asked, caller) in [
        ("api-keys:read", "a*"),
        ("a*", "a*"),
        ("api-keys:*", "a*"),
        (
            "instances:read:finance/* messages:send:order_*",
            "api-keys:write instances:read:* messages:send",
        ),
        ("messages:send", "api-keys:write messages:*"),
        ("admin", "admin"),
        ("*", "admin"),
    ] {
        let (status, body) = create_key(&app, asked, caller).await;
        assert_eq!(status, StatusCode::CREATED, "{asked} by {caller}: {body}");
    }
    // and the narrowed key grants what it says
    let (_, created) = create_key(&app, "secrets:manage", "api-keys:write secrets:*").await;
    let key = created["key"].as_str().unwrap();
    let response = app
        .get_with_authorization("/v1.0/secrets", &format!("Bearer {key}"))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

// ---- 14. Swagger UI gets the console's headers

#[tokio::test]
async fn swagger_ui_is_served_with_the_consoles_headers() {
    let app = spawn_app().await;
    let console = app.get("/console/").await;
    let expected = console.headers().clone();
    assert_eq!(expected["x-frame-options"], "DENY");
    for path in [
        "/v1.0/ui/",
        "/v1.0/ui/index.css",
        "/v1.0/ui/swagger-ui-bundle.js",
        "/v1.0/ui/swagger-initializer.js",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers();
        for name in [
            "content-security-policy",
            "x-frame-options",
            "x-content-type-options",
            "referrer-policy",
        ] {
            assert_eq!(headers.get(name), expected.get(name), "{path}: {name}");
        }
    }
    let csp = expected["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    // the page works under that policy: its scripts are files of this origin, and the online
    // validator (another origin) is off
    let page = app.get("/v1.0/ui/").await.text().await.unwrap();
    assert!(!page.contains("<script>"), "{page}");
    assert!(!page.contains("http"), "{page}");
    for script in [
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
        "swagger-initializer.js",
    ] {
        assert!(
            page.contains(&format!("<script src=\"./{script}\"")),
            "{page}"
        );
    }
    let initializer = app
        .get("/v1.0/ui/swagger-initializer.js")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        initializer.contains("\"validatorUrl\": \"none\""),
        "{initializer}"
    );
}

// ---- 10. A secret's value never shows in an instance's error

const SECRET_VALUE: &str = "s3cr3t-value";

/// `start -> run (the script) -> end`.
fn script_model(process_id: &str, source: &str) -> String {
    models::definitions(&format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="run" />
    <bpmn:scriptTask id="run"><bpmn:script>{source}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="run" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Every answer that could show instance `id` and its error, as one text.
async fn everything_shown_of(app: &TestApp, id: i64, model: &str) -> String {
    let mut shown = String::new();
    for path in [
        format!("/v1.0/process-instances/{id}"),
        format!("/v1.0/process-instances/{}/{id}", model.replace('/', ":")),
        "/v1.0/process-instances?per_page=500".to_string(),
        format!(
            "/v1.0/process-instances?per_page=500&process_model_identifier={model}&status=error"
        ),
        format!("/v1.0/process-instances/{id}/connector-logs"),
        "/v1.0/messages?per_page=500".to_string(),
    ] {
        let response = app.get_as(&path, ADMIN).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        shown.push_str(&response.text().await.unwrap());
    }
    shown
}

#[tokio::test]
async fn a_secrets_value_is_redacted_from_instance_errors_on_every_path() {
    let app = spawn_app().await;
    let stored = app
        .request(reqwest::Method::PUT, "/v1.0/secrets/X")
        .bearer_auth(app.token(ADMIN))
        .json(&json!({"value": SECRET_VALUE}))
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), StatusCode::CREATED);
    let failing = "n = int(get_secret('X'))";

    // started: the answer, the instance, the lists
    upload_ok(
        &app,
        "leak/start",
        "s.bpmn",
        &script_model("leak_start", failing),
    )
    .await;
    let (status, started) = start(&app, "leak/start", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let instance = &started["process_instance"];
    assert_eq!(instance["status"], "error", "{started}");
    let message = instance["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("ValueError: invalid literal for int() with base 10: '[secret X]'"),
        "{message}"
    );
    let id = instance["id"].as_i64().unwrap();
    let shown = format!(
        "{started}{}",
        everything_shown_of(&app, id, "leak/start").await
    );
    assert!(shown.contains("[secret X]"), "{shown}");
    assert!(!shown.contains(SECRET_VALUE), "{shown}");

    // a message delivered to a waiting instance runs the script
    let waiter = models::keyed_waiter("leak_message", "go").replace(
        r#"<bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done" />"#,
        &format!(
            r#"<bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="run" />
    <bpmn:scriptTask id="run"><bpmn:script>{failing}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="run" targetRef="done" />"#
        ),
    );
    upload_ok(&app, "leak/message", "m.bpmn", &waiter).await;
    let id = start_ok(&app, "leak/message", &json!({"key": "k"})).await;
    let (status, delivered) = send(&app, "go", &json!({"key": "k"}), &[]).await;
    assert!(status.is_success(), "{status}: {delivered}");
    let after = show(&app, id).await;
    assert_eq!(after["status"], "error", "{after}");
    let shown = format!(
        "{delivered}{}",
        everything_shown_of(&app, id, "leak/message").await
    );
    assert!(shown.contains("[secret X]"), "{shown}");
    assert!(!shown.contains(SECRET_VALUE), "{shown}");
}
