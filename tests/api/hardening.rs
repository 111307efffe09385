//! Issue 8: no input breaks a read, limits are enforced at the door, and nothing is revealed
//! or accepted that should not be. Each test reproduces a defect found by trying the service
//! as an attacker and as a careless client.

use crate::domain::*;
use crate::helpers::{
    problem, spawn_app, spawn_app_with, spawn_app_without_database, spawn_app_without_workers,
    TestApp,
};
use crate::messages::orders;
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

/// Uploads `shop/approve`: a user task, then a script.
async fn approvals(app: &TestApp) {
    upload_ok(
        app,
        "shop/approve",
        "approve.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
}

/// A JSON object nested `levels` deep: `{"a": {"a": ... 1}}`, with `order_id` at the top.
fn nested(levels: usize) -> String {
    format!(
        "{{\"order_id\": \"deep\", \"v\": {}1{}}}",
        "{\"a\": ".repeat(levels),
        "}".repeat(levels)
    )
}

/// POST a raw body (as given, not re-encoded) with an admin token.
async fn post_raw(app: &TestApp, path: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .bearer_auth(app.token(ADMIN))
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("request")
}

async fn refused(response: reqwest::Response, status: StatusCode, code: &str) -> Value {
    let (got, body) = problem(response).await;
    assert_eq!(
        (got, body["error_code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    body
}

/// Every read path that shows messages or instances answers 200.
async fn every_read_path_works(app: &TestApp) {
    for path in [
        "/v1.0/messages?per_page=500",
        "/v1.0/process-instances?per_page=500",
    ] {
        let (status, body) = get(app, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        for row in body["results"].as_array().unwrap() {
            let detail = if path.starts_with("/v1.0/messages") {
                format!("/v1.0/messages/{}", row["id"])
            } else {
                format!("/v1.0/process-instances/{}", row["id"])
            };
            let (status, body) = get(app, &detail).await;
            assert_eq!(status, StatusCode::OK, "{detail}: {body}");
        }
    }
}

#[tokio::test]
async fn values_that_cannot_be_read_back_are_refused_at_the_door() {
    let app = spawn_app().await;
    orders(&app).await;
    let huge = r#"{"order_id": "p1", "amount": 1.7976931348623157e308}"#;
    let body = refused(
        post_raw(&app, "/v1.0/messages/placed", huge).await,
        StatusCode::BAD_REQUEST,
        "invalid_payload",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("$.amount"),
        "{body}"
    );
    refused(
        post_raw(&app, "/v1.0/messages/placed", &nested(126)).await,
        StatusCode::BAD_REQUEST,
        "invalid_payload",
    )
    .await;
    // the same rules for start data, task data (through any path) and buffered messages
    refused(
        post_raw(
            &app,
            "/v1.0/messages/paid?time_to_live_in_seconds=60&message_instance_uuid=0b5bd9b0-3d4a-4f4b-9d0f-6a2b3c4d5e6f",
            &nested(100),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_payload",
    )
    .await;
    approvals(&app).await;
    refused(
        post_raw(&app, "/v1.0/process-instances/shop:approve", huge).await,
        StatusCode::BAD_REQUEST,
        "invalid_payload",
    )
    .await;
    let id = start_ok(&app, "shop/approve", &json!({})).await;
    let guid = waiting_task(&app, id, "approve").await;
    for data in [huge.to_string(), nested(126)] {
        let response = app
            .client
            .put(app.url(&format!("/v1.0/tasks/{id}/{guid}")))
            .bearer_auth(app.token(ADMIN))
            .header("Content-Type", "application/json")
            .body(data)
            .send()
            .await
            .unwrap();
        refused(response, StatusCode::BAD_REQUEST, "invalid_payload").await;
    }
    every_read_path_works(&app).await;
}

#[tokio::test]
async fn what_is_accepted_is_read_back_on_every_path() {
    let app = spawn_app().await;
    orders(&app).await;
    // the deepest payload accepted (64 levels: the object and 63 below it), with large and
    // tiny numbers: started, then correlated
    let deep: Value = serde_json::from_str(&nested(63)).unwrap();
    let mut placed = deep.clone();
    placed["order_id"] = json!(5);
    placed["big"] = json!(1.5e300);
    placed["small"] = json!(-2.5e-300);
    let (status, body) = send(&app, "placed", &placed, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let mut paid = deep;
    paid["order_id"] = json!(5);
    let (status, body) = send(&app, "paid", &paid, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete");
    let shown = show(&app, id).await;
    // the same number (storage writes it without an exponent: 1500…0.0)
    assert_eq!(shown["data"]["order"]["big"].as_f64(), Some(1.5e300));
    every_read_path_works(&app).await;
}

#[tokio::test]
async fn nul_characters_are_refused_everywhere_they_could_be_stored() {
    let app = spawn_app().await;
    orders(&app).await;
    approvals(&app).await;
    for body in [
        r#"{"order_id": "a\u0000b"}"#,
        r#"{"order\u0000id": 1}"#,
        r#"{"order_id": 1, "list": [{"x": "\u0000"}]}"#,
    ] {
        refused(
            post_raw(&app, "/v1.0/messages/placed", body).await,
            StatusCode::BAD_REQUEST,
            "invalid_payload",
        )
        .await;
        refused(
            post_raw(&app, "/v1.0/process-instances/shop:approve", body).await,
            StatusCode::BAD_REQUEST,
            "invalid_payload",
        )
        .await;
    }
    // task completion data
    let id = start_ok(&app, "shop/approve", &json!({"amount": 1})).await;
    let guid = waiting_task(&app, id, "approve").await;
    let response = app
        .client
        .put(app.url(&format!("/v1.0/tasks/{id}/{guid}")))
        .bearer_auth(app.token(ADMIN))
        .header("Content-Type", "application/json")
        .body(r#"{"note": "\u0000"}"#)
        .send()
        .await
        .unwrap();
    refused(response, StatusCode::BAD_REQUEST, "invalid_payload").await;

    // a message name, list filters, a file name
    refused(
        post_raw(&app, "/v1.0/messages/x%00y", "{}").await,
        StatusCode::BAD_REQUEST,
        "invalid_path",
    )
    .await;
    for query in ["name=%00", "status=%00", "name=a%00b"] {
        let response = app.get_as(&format!("/v1.0/messages?{query}"), ADMIN).await;
        refused(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    }
    let response = app
        .get_as("/v1.0/process-instances?status=%00", ADMIN)
        .await;
    refused(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    let (status, body) = upload(
        &app,
        "shop/approve",
        "a%00b.bpmn",
        &models::user_task_process("approve"),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_path")),
        "{body}"
    );
    every_read_path_works(&app).await;
}

#[tokio::test]
async fn pages_and_filters_out_of_range_are_refused_naming_what_is_allowed() {
    let app = spawn_app().await;
    for list in [
        "/v1.0/messages",
        "/v1.0/process-instances",
        "/v1.0/process-models",
    ] {
        for query in [
            "page=9223372036854775807&per_page=100",
            "page=0",
            "page=-1",
            "per_page=0",
            "per_page=501",
        ] {
            let response = app.get_as(&format!("{list}?{query}"), ADMIN).await;
            refused(response, StatusCode::BAD_REQUEST, "invalid_query").await;
        }
        let (status, body) = get(&app, &format!("{list}?page=201&per_page=500")).await;
        assert_eq!(status, StatusCode::OK, "{list}: the deepest page is fine");
        assert_eq!(body["pagination"]["total_exact"], true, "{body}");
        let response = app
            .get_as(&format!("{list}?page=202&per_page=500"), ADMIN)
            .await;
        refused(response, StatusCode::BAD_REQUEST, "invalid_query").await;
    }
    for (path, allowed) in [
        ("/v1.0/messages?status=bogus", "not_accepted"),
        ("/v1.0/messages?message_type=sent", "receive"),
        ("/v1.0/process-instances?status=completed", "complete"),
    ] {
        let body = refused(
            app.get_as(path, ADMIN).await,
            StatusCode::BAD_REQUEST,
            "invalid_query",
        )
        .await;
        assert!(
            body["detail"].as_str().unwrap().contains(allowed),
            "{path}: {body}"
        );
        assert!(body["allowed"].as_array().is_some(), "{body}");
    }
}

#[tokio::test]
async fn lists_are_summaries_whatever_the_rows_hold() {
    let app = spawn_app().await;
    orders(&app).await;
    // refused messages are kept in full; the list must not carry them
    let big = "x".repeat(800_000);
    for i in 0..3 {
        let (status, _) = send(&app, "nobody", &json!({"i": i, "blob": big}), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }
    let response = app.get_as("/v1.0/messages?per_page=500", ADMIN).await;
    let text = response.text().await.unwrap();
    assert!(text.len() < 20_000, "the list is {} bytes", text.len());
    let list: Value = serde_json::from_str(&text).unwrap();
    let first = &list["results"][0];
    assert!(first.get("payload").is_none(), "{first}");
    // the detail has it all
    let (status, one) = get(&app, &format!("/v1.0/messages/{}", first["id"])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["payload"]["blob"].as_str().unwrap().len(), 800_000);

    // instances: no data in the list
    approvals(&app).await;
    let id = start_ok(&app, "shop/approve", &json!({"blob": "y".repeat(100_000)})).await;
    let (_, list) = get(&app, "/v1.0/process-instances").await;
    let row = &list["results"][0];
    assert_eq!(row["id"], id);
    assert!(row.get("data").is_none(), "{row}");
    assert!(row["process_model_version"].is_string(), "{row}");
    assert_eq!(
        show(&app, id).await["data"]["blob"].as_str().unwrap().len(),
        100_000
    );
}

#[tokio::test]
async fn an_unreachable_database_answers_503_with_retry_after() {
    let app = spawn_app_without_database().await;
    let response = app.get_as("/v1.0/messages", ADMIN).await;
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("2")
    );
    refused(
        response,
        StatusCode::SERVICE_UNAVAILABLE,
        "database_unavailable",
    )
    .await;
}

/// Issue 35: without autovacuum nothing is analysed or vacuumed and the service slows as its
/// tables grow; readiness says so (as the start's log does), for the cluster and per table.
#[tokio::test]
async fn readiness_warns_when_autovacuum_is_off() {
    let app = spawn_app_without_workers().await;
    let (cluster_on,): (bool,) = sqlx::query_as(
        "SELECT current_setting('autovacuum') = 'on' AND current_setting('track_counts') = 'on'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let warnings = |body: &Value| -> Vec<String> {
        body["warnings"]
            .as_array()
            .expect("a list of warnings")
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    let body: Value = app.get("/v1.0/health/ready").await.json().await.unwrap();
    assert_eq!(
        warnings(&body)
            .iter()
            .any(|w| w.starts_with("autovacuum is off on the database")),
        !cluster_on,
        "{body}"
    );
    assert!(
        !warnings(&body).iter().any(|w| w.contains("for the tables")),
        "{body}"
    );

    sqlx::query("ALTER TABLE message_instances SET (autovacuum_enabled = false)")
        .execute(&app.pool)
        .await
        .unwrap();
    let response = app.get("/v1.0/health/ready").await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["database"], "up");
    assert!(
        warnings(&body)
            .iter()
            .any(|w| w.contains("turned off for the tables message_instances:")),
        "{body}"
    );
}

#[tokio::test]
async fn a_saturated_pool_is_busy_not_down() {
    let app = spawn_app_with(|s| {
        s.database_pool_size = 1;
        s.run_workers = false;
    })
    .await;
    let body: Value = app.get("/v1.0/health/ready").await.json().await.unwrap();
    assert_eq!(body["database"], "up");
    // the only connection, held
    let _held = app.state.pool.acquire().await.unwrap();
    let response = app.get("/v1.0/health/ready").await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["database"], "busy");
}

fn token_with(app: &TestApp, header: jsonwebtoken::Header, claims: Value) -> String {
    jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(
            app.settings.jwt.secret.as_ref().unwrap().as_bytes(),
        ),
    )
    .unwrap()
}

#[tokio::test]
async fn tokens_are_held_to_their_claims_and_the_configured_algorithm() {
    let app = spawn_app().await;
    let now = jsonwebtoken::get_current_timestamp();
    let claims = |extra: Value| {
        let mut c = json!({"sub": "someone", "scope": "admin", "exp": now + 600});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let hs256 = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    let ok = token_with(&app, hs256.clone(), claims(json!({})));
    assert_eq!(
        app.get_with_authorization("/test/whoami", &format!("Bearer {ok}"))
            .await
            .status(),
        StatusCode::OK
    );
    let mut crit = hs256.clone();
    crit.crit = Some(vec!["exp-ext".into()]);
    let cases = [
        (
            "nbf in the future",
            token_with(&app, hs256.clone(), claims(json!({"nbf": now + 120}))),
        ),
        (
            "expired 30 s ago",
            token_with(&app, hs256.clone(), claims(json!({"exp": now - 30}))),
        ),
        ("unknown crit", token_with(&app, crit, claims(json!({})))),
        (
            "HS512 with the HS256 secret",
            token_with(
                &app,
                jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS512),
                claims(json!({})),
            ),
        ),
        (
            "HS384 with the HS256 secret",
            token_with(
                &app,
                jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS384),
                claims(json!({})),
            ),
        ),
        (
            "empty sub",
            token_with(&app, hs256.clone(), claims(json!({"sub": ""}))),
        ),
    ];
    for (case, token) in cases {
        let response = app
            .get_with_authorization("/test/whoami", &format!("Bearer {token}"))
            .await;
        let (status, body) = problem(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{case}: {body}");
        assert!(
            ["invalid_token", "token_expired"].contains(&body["error_code"].as_str().unwrap()),
            "{case}: {body}"
        );
    }
    // within the default leeway (5 s) an expired token still passes
    let just = token_with(&app, hs256, claims(json!({"exp": now - 2})));
    assert_eq!(
        app.get_with_authorization("/test/whoami", &format!("Bearer {just}"))
            .await
            .status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn another_models_instances_look_exactly_like_missing_ones() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "team_a/approve",
        "approve.bpmn",
        &models::user_task_process("approve_a"),
    )
    .await;
    upload_ok(
        &app,
        "team_b/approve",
        "approve.bpmn",
        &models::user_task_process("approve_b"),
    )
    .await;
    let theirs = start_ok(&app, "team_b/approve", &json!({"amount": 1})).await;
    let guid = waiting_task(&app, theirs, "approve").await;
    let mine = "instances:read:team_a/* instances:update:team_a/*";
    let missing = 999_999;
    let answers = |id: i64| {
        let app = &app;
        let guid = guid.clone();
        async move {
            let show = app
                .get_as(&format!("/v1.0/process-instances/{id}"), mine)
                .await;
            let logs = app
                .get_as(
                    &format!("/v1.0/process-instances/{id}/connector-logs"),
                    mine,
                )
                .await;
            let complete = app
                .client
                .put(app.url(&format!("/v1.0/tasks/{id}/{guid}")))
                .bearer_auth(app.token(mine))
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let callback = app
                .client
                .put(app.url(&format!("/v1.0/tasks/{id}/{guid}/callback")))
                .bearer_auth(app.token(mine))
                .json(&json!({"command_response": {"body": 1}}))
                .send()
                .await
                .unwrap();
            let mut seen = Vec::new();
            for response in [show, logs, complete, callback] {
                let (status, body) = problem(response).await;
                seen.push((status, body["error_code"].clone()));
                assert!(
                    !body["detail"].as_str().unwrap().contains("team_b"),
                    "{body}"
                );
            }
            seen
        }
    };
    let for_theirs = answers(theirs).await;
    let for_missing = answers(missing).await;
    // the callback answers 403 to both, as the connector-proxy contract asks (issue 31)
    let (callback, others) = for_theirs.split_last().unwrap();
    assert!(
        others
            .iter()
            .all(|(s, c)| *s == StatusCode::NOT_FOUND && c == "process_instance_not_found"),
        "{for_theirs:?}"
    );
    assert_eq!(
        callback,
        &(StatusCode::FORBIDDEN, json!("not_authorized")),
        "{for_theirs:?}"
    );
    assert_eq!(for_theirs, for_missing);
    // reading is not updating: a reader of team_b gets 403 on completion
    let response = app
        .client
        .put(app.url(&format!("/v1.0/tasks/{theirs}/{guid}")))
        .bearer_auth(app.token("instances:read:team_b/*"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    refused(response, StatusCode::FORBIDDEN, "not_authorized").await;
}

#[tokio::test]
async fn a_body_that_trickles_is_cut_off_at_the_deadline() {
    let app = spawn_app_with(|s| s.body_read_timeout_ms = 300).await;
    let token = app.token(ADMIN);
    // a JSON body, and the raw bodies (a model file, start data) read as bytes
    for (method, path, content_type) in [
        ("POST", "/v1.0/messages/placed", "application/json"),
        (
            "PUT",
            "/v1.0/process-models/group:model/files/a.bpmn",
            "application/xml",
        ),
        (
            "POST",
            "/v1.0/process-instances/group:model",
            "application/json",
        ),
    ] {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: {content_type}\r\nContent-Length: 100\r\n\r\n{{"
        );
        // nothing more comes; the answer must not wait for the client
        let text = raw_exchange(&app, head.as_bytes(), "request_timeout").await;
        assert!(text.starts_with("HTTP/1.1 408"), "{path}: {text}");
        assert!(text.contains("application/problem+json"), "{path}: {text}");
        assert!(text.contains("\"request_timeout\""), "{path}: {text}");
    }
}

/// Writes `request` on a new connection and reads until `until` shows up in the answer, the
/// server closes, or 5 s pass (a failure: the server must answer without waiting for the client).
async fn raw_exchange(app: &TestApp, request: &[u8], until: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", app.port))
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap_or(0);
            answer.extend_from_slice(&buf[..n]);
            if n == 0 || String::from_utf8_lossy(&answer).contains(until) {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    assert!(read.is_ok(), "no answer: {text}");
    text
}

/// Requests actix's HTTP/1 parser refuses before any handler runs: each gets a 4xx status line
/// (actix writes these answers itself, without a body: there is no hook for problem+json) and
/// the server goes on answering.
#[tokio::test]
async fn malformed_requests_get_a_4xx_and_the_server_goes_on() {
    let app = spawn_app().await;
    let many_headers: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
    let long_path = format!("/{}", "a".repeat(100_000));
    let cases = [
        (
            "Content-Length is not a number",
            "POST /v1.0/messages/m HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".to_string(),
            "400",
        ),
        (
            "Content-Length and Transfer-Encoding",
            "POST /v1.0/messages/m HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\
             Transfer-Encoding: chunked\r\n\r\n{}"
                .to_string(),
            "400",
        ),
        (
            "more than 100 headers",
            format!("GET /v1.0/status HTTP/1.1\r\nHost: x\r\n{many_headers}\r\n"),
            "431",
        ),
        (
            "a 100 KB path",
            format!("GET {long_path} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "400",
        ),
    ];
    for (what, request, status) in cases {
        let text = raw_exchange(&app, request.as_bytes(), "\r\n\r\n").await;
        assert!(
            text.starts_with(&format!("HTTP/1.1 {status}")),
            "{what}: {text}"
        );
    }
    let status = app.get("/v1.0/status").await;
    assert_eq!(status.status(), StatusCode::OK);
}

#[tokio::test]
async fn paths_must_be_utf8_and_names_plain() {
    let app = spawn_app().await;
    refused(
        post_raw(&app, "/v1.0/messages/abc%ffdef", "{}").await,
        StatusCode::BAD_REQUEST,
        "invalid_path",
    )
    .await;
    let xml = models::user_task_process("p");
    let long = "a".repeat(5_000);
    for (model, file, code) in [
        (long.as_str(), "a.bpmn", "invalid_process_model_identifier"),
        (
            "group/.hidden",
            "a.bpmn",
            "invalid_process_model_identifier",
        ),
        ("group/model", "a..b.bpmn", "invalid_file_name"),
        ("group/model", "a%0Ab.bpmn", "invalid_path"),
        ("group/model", "a%5Cb.bpmn", "invalid_file_name"),
    ] {
        let (status, body) = upload(&app, model, file, &xml).await;
        assert_eq!(
            (status, body["error_code"].as_str()),
            (StatusCode::BAD_REQUEST, Some(code)),
            "{model}/{file}: {body}"
        );
    }
    let (status, body) = get(&app, "/v1.0/process-models").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["pagination"]["total"], 0, "{body}");
}

#[tokio::test]
async fn expired_buffered_messages_are_swept_in_bounded_steps_with_an_injected_clock() {
    use workflow_backend::workers::message_expiry::expire_due_once;
    let app = spawn_app_without_workers().await;
    for i in 0..3 {
        let uuid = uuid::Uuid::new_v4().to_string();
        let (status, body) = send(
            &app,
            "later",
            &json!({ "i": i }),
            &[
                ("time_to_live_in_seconds", &(10 * (i + 1)).to_string()),
                ("message_instance_uuid", &uuid),
            ],
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let now = chrono::Utc::now();
    let sweep = expire_due_once(&app.state.pool, now).await.unwrap();
    assert_eq!(sweep.expired, 0);
    let next = sweep.next_expiry.expect("three are buffered");
    assert!(
        next > now && next <= now + chrono::Duration::seconds(11),
        "{next}"
    );
    // 15 s later, the first has expired and the next is due at ~20 s
    let sweep = expire_due_once(&app.state.pool, now + chrono::Duration::seconds(15))
        .await
        .unwrap();
    assert_eq!(sweep.expired, 1);
    assert!(sweep.next_expiry.unwrap() > now + chrono::Duration::seconds(15));
    let cancelled = messages(&app, "status=cancelled").await;
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["failure_cause"], "expired");
    let sweep = expire_due_once(&app.state.pool, now + chrono::Duration::seconds(60))
        .await
        .unwrap();
    assert_eq!((sweep.expired, sweep.next_expiry), (2, None));
}

#[tokio::test]
async fn a_panic_in_a_handler_is_answered_and_the_server_goes_on() {
    let app = spawn_app().await;
    for _ in 0..3 {
        let response = app.get("/test/panic").await;
        let body = refused(
            response,
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_server_error",
        )
        .await;
        assert!(
            !body["detail"].as_str().unwrap().contains("defect"),
            "{body}"
        );
    }
    assert_eq!(app.get("/v1.0/status").await.status(), StatusCode::OK);
}
