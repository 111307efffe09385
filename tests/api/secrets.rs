//! Secrets: the admin API (PUT, GET list, DELETE), its scope and refusals, the `secret`
//! command, the service function the script runtime reads values with, and that no answer,
//! command output or log line ever holds a value.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};
use sqlx::{Connection, Executor, PgConnection};

use crate::helpers::{problem, spawn_app, test_settings, TestApp, TEST_JWT_SECRET};
use workflow_backend::services::secrets;

const MANAGE: &str = "secrets:manage";

async fn put(app: &TestApp, name: &str, body: &Value, scope: &str) -> Response {
    app.request(Method::PUT, &format!("/v1.0/secrets/{name}"))
        .bearer_auth(app.token(scope))
        .json(body)
        .send()
        .await
        .expect("request failed")
}

async fn delete(app: &TestApp, name: &str, scope: &str) -> Response {
    app.request(Method::DELETE, &format!("/v1.0/secrets/{name}"))
        .bearer_auth(app.token(scope))
        .send()
        .await
        .expect("request failed")
}

async fn keep(response: Response) -> (StatusCode, String) {
    let status = response.status();
    (status, response.text().await.unwrap())
}

async fn json_of(response: Response, expected: StatusCode) -> Value {
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, expected, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn names(list: &Value) -> Vec<&str> {
    list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

async fn stored_values(app: &TestApp) -> secrets::SecretValues {
    let mut tx = app.pool.begin().await.unwrap();
    let values = secrets::all_values(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    values
}

#[tokio::test]
async fn secrets_are_created_replaced_listed_and_deleted() {
    let app = spawn_app().await;

    let created = json_of(
        put(&app, "SMTP_PASSWORD", &json!({"value": "first"}), MANAGE).await,
        StatusCode::CREATED,
    )
    .await;
    let members: Vec<&String> = created.as_object().unwrap().keys().collect();
    assert_eq!(members, ["created_at", "name", "updated_at"], "{created}");
    assert_eq!(created["name"], "SMTP_PASSWORD");
    assert_eq!(created["created_at"], created["updated_at"]);

    let replaced = json_of(
        put(&app, "SMTP_PASSWORD", &json!({"value": "second"}), "admin").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(replaced["created_at"], created["created_at"]);
    let time = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert!(time(&replaced["updated_at"]) > time(&created["updated_at"]));

    let other = put(&app, "api.key-2", &json!({"value": "x"}), MANAGE).await;
    assert_eq!(other.status(), StatusCode::CREATED);
    let underscore = put(&app, "_x", &json!({"value": "y"}), MANAGE).await;
    assert_eq!(underscore.status(), StatusCode::CREATED);

    let list = json_of(app.get_as("/v1.0/secrets", MANAGE).await, StatusCode::OK).await;
    // byte order, whatever the database's locale
    assert_eq!(names(&list), ["SMTP_PASSWORD", "_x", "api.key-2"]);
    assert_eq!(list["results"][0], replaced);
    assert_eq!(list["pagination"]["total"], 3);
    assert_eq!(list["pagination"]["total_exact"], true);
    let page = json_of(
        app.get_as("/v1.0/secrets?page=2&per_page=2", MANAGE).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(names(&page), ["api.key-2"]);
    assert_eq!(page["pagination"]["pages"], 2);
    let (status, body) = problem(app.get_as("/v1.0/secrets?per_page=0", MANAGE).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "invalid_query");

    let values = stored_values(&app).await;
    assert_eq!(values.get("SMTP_PASSWORD"), Some("second"));
    assert_eq!(values.get("api.key-2"), Some("x"));

    let deleted = delete(&app, "api.key-2", MANAGE).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(deleted.text().await.unwrap().is_empty());
    let (status, body) = problem(delete(&app, "api.key-2", MANAGE).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error_code"], "secret_not_found");
    let list = json_of(app.get_as("/v1.0/secrets", MANAGE).await, StatusCode::OK).await;
    assert_eq!(names(&list), ["SMTP_PASSWORD", "_x"]);
    assert_eq!(stored_values(&app).await.get("api.key-2"), None);
}

#[tokio::test]
async fn the_secret_endpoints_need_a_token_with_secrets_manage() {
    let app = spawn_app().await;
    let body = json!({"value": "v"});

    let no_token = [
        app.request(Method::PUT, "/v1.0/secrets/A")
            .json(&body)
            .send()
            .await
            .unwrap(),
        app.get("/v1.0/secrets").await,
        app.request(Method::DELETE, "/v1.0/secrets/A")
            .send()
            .await
            .unwrap(),
    ];
    for response in no_token {
        assert!(response.headers().contains_key("www-authenticate"));
        let (status, body) = problem(response).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["error_code"], "invalid_token");
    }

    let other_scopes = "models:write instances:read:* messages:send secrets:read";
    let forbidden = [
        put(&app, "A", &body, other_scopes).await,
        app.get_as("/v1.0/secrets", other_scopes).await,
        delete(&app, "A", other_scopes).await,
    ];
    for response in forbidden {
        let (status, body) = problem(response).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body["error_code"], "not_authorized");
        assert_eq!(body["required_scope"], "secrets:manage");
    }
    assert!(stored_values(&app).await.is_empty(), "a refused PUT stored");

    // `admin` grants it too
    assert_eq!(
        put(&app, "A", &body, "admin").await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        app.get_as("/v1.0/secrets", "admin").await.status(),
        StatusCode::OK
    );
    assert_eq!(
        delete(&app, "A", "admin").await.status(),
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn invalid_names_and_values_are_refused() {
    let app = spawn_app().await;
    let too_long = format!("a{}", "b".repeat(128));
    for name in [
        "1abc",
        "a%20b",
        "a:b",
        "-x",
        ".env",
        "%C3%A4",
        too_long.as_str(),
    ] {
        for response in [
            put(&app, name, &json!({"value": "v"}), MANAGE).await,
            delete(&app, name, MANAGE).await,
        ] {
            let (status, body) = problem(response).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {body}");
            assert_eq!(body["error_code"], "invalid_secret_name", "{name}: {body}");
        }
    }
    let longest = format!("a{}", "b".repeat(127));
    assert_eq!(
        put(&app, &longest, &json!({"value": "v"}), MANAGE)
            .await
            .status(),
        StatusCode::CREATED
    );

    let values = [
        json!({"value": ""}),
        json!({"value": "x".repeat(64 * 1024 + 1)}),
        json!({"value": "a\u{0}b"}),
        json!({"value": 42}),
        json!({"value": null}),
        json!({"value": ["v"]}),
    ];
    for body in &values {
        let (status, problem) = problem(put(&app, "V", body, MANAGE).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(problem["error_code"], "invalid_secret_value", "{problem}");
    }
    for body in [
        json!({}),
        json!({"value": "v", "other": 1}),
        json!("v"),
        json!([]),
    ] {
        let (status, problem) = problem(put(&app, "V", &body, MANAGE).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(problem["error_code"], "invalid_json", "{body}: {problem}");
    }
    let not_json = app
        .request(Method::PUT, "/v1.0/secrets/V")
        .bearer_auth(app.token(MANAGE))
        .header(CONTENT_TYPE, "text/plain")
        .body("v")
        .send()
        .await
        .unwrap();
    let (status, _) = problem(not_json).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(stored_values(&app).await.get("V"), None);

    // the largest value, with newlines and any other text
    let largest = format!("line 1\nline 2\t✓{}", "x".repeat(64 * 1024 - 17));
    assert_eq!(largest.len(), 64 * 1024);
    assert_eq!(
        put(&app, "V", &json!({ "value": largest }), MANAGE)
            .await
            .status(),
        StatusCode::CREATED
    );
    assert_eq!(stored_values(&app).await.get("V"), Some(largest.as_str()));
}

#[tokio::test]
async fn no_answer_ever_holds_a_value() {
    let app = spawn_app().await;
    let value = "wf-marker-7d1f0c52e9";
    let mut answers = Vec::new();
    answers.push(keep(put(&app, "K", &json!({ "value": value }), MANAGE).await).await);
    answers
        .push(keep(put(&app, "K", &json!({ "value": format!("{value}2") }), MANAGE).await).await);
    answers.push(keep(app.get_as("/v1.0/secrets", MANAGE).await).await);
    answers.push(keep(app.get_as("/v1.0/secrets?per_page=1", "admin").await).await);
    // refusals that carried a value
    for (name, body) in [
        ("1bad", json!({ "value": value })),
        ("K", json!({ "value": format!("{value}\u{0}") })),
        (
            "K",
            json!({ "value": format!("{value}{}", "x".repeat(70_000)) }),
        ),
        ("K", json!({ "value": value, "other": value })),
        ("K", json!([value])),
        ("K", json!({ "value": [value] })),
        ("K", json!({ "value": 4242424242u64 })),
    ] {
        answers.push(keep(put(&app, name, &body, MANAGE).await).await);
        answers.push(keep(put(&app, name, &body, "models:write").await).await);
    }
    let broken = app
        .request(Method::PUT, "/v1.0/secrets/K")
        .bearer_auth(app.token(MANAGE))
        .header(CONTENT_TYPE, "application/json")
        .body(format!("{{\"value\": \"{value}"))
        .send()
        .await
        .unwrap();
    answers.push(keep(broken).await);
    // there is no endpoint that reads one
    let read = app.get_as("/v1.0/secrets/K", MANAGE).await;
    assert_eq!(read.status(), StatusCode::METHOD_NOT_ALLOWED);
    answers.push(keep(read).await);
    answers.push(keep(delete(&app, "K", MANAGE).await).await);

    assert_eq!(answers.len(), 21);
    for (status, text) in &answers {
        assert!(
            !text.contains(value) && !text.contains("4242424242"),
            "{status}: {text}"
        );
    }
}

#[tokio::test]
async fn the_script_runtime_reads_every_value_and_debug_shows_none() {
    let app = spawn_app().await;
    assert!(stored_values(&app).await.is_empty());
    for (name, value) in [("B", "two"), ("A", "one\nwith a newline")] {
        let response = put(&app, name, &json!({ "value": value }), MANAGE).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    // inside the caller's transaction, or on a connection of its own
    let in_tx = stored_values(&app).await;
    let mut conn = app.pool.acquire().await.unwrap();
    let alone = secrets::all_values(&mut conn).await.unwrap();
    assert_eq!(in_tx, alone);
    assert_eq!(in_tx.len(), 2);
    assert_eq!(in_tx.names().collect::<Vec<_>>(), ["A", "B"]);
    assert_eq!(in_tx.get("A"), Some("one\nwith a newline"));
    assert_eq!(in_tx.get("B"), Some("two"));
    assert_eq!(in_tx.get("C"), None);
    let shown = format!("{in_tx:?}");
    assert!(
        shown.contains("\"A\"") && shown.contains("\"B\""),
        "{shown}"
    );
    assert!(!shown.contains("one") && !shown.contains("two"), "{shown}");
    let map = in_tx.into_map();
    assert_eq!(map["B"], "two");
}

// --- the binary ---

/// The binary with a clean environment in an empty working directory (no `.env`), as in
/// cli.rs.
fn binary(args: &[&str], env: &[(&str, &str)]) -> Command {
    let dir: PathBuf = std::env::temp_dir().join("workflow-backend-test-cwd");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(!dir.join(".env").exists(), "{} holds a .env", dir.display());
    let mut command = Command::new(env!("CARGO_BIN_EXE_workflow-backend"));
    command.args(args).env_clear().current_dir(dir);
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// Runs the binary with `stdin` piped in.
fn run_with_stdin(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Output {
    let mut child = binary(args, env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut pipe = child.stdin.take().unwrap();
    // a refusal may come before the value is read: a closed pipe is fine then
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A child process that is killed if the test fails before it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

async fn drop_database(settings: &workflow_backend::config::Settings) {
    let mut conn = PgConnection::connect(&settings.with_database_name("postgres"))
        .await
        .unwrap();
    let sql = format!(
        r#"DROP DATABASE IF EXISTS "{}" WITH (FORCE)"#,
        settings.database_name()
    );
    conn.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
}

#[tokio::test]
async fn the_secret_command_reads_the_value_from_stdin_and_never_prints_one() {
    let settings = test_settings();
    // debug logs too: sqlx's statement logs must not carry the value either
    let env = [
        (
            "WORKFLOW_BACKEND_DATABASE_URL",
            settings.database_url.as_str(),
        ),
        ("RUST_LOG", "debug"),
    ];
    let value = "tok-5be2a9c1";

    // the database is created and migrated first, as `migrate` does
    let created = run_with_stdin(
        &["secret", "set", "API_TOKEN"],
        &env,
        format!("{value}\n").as_bytes(),
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert_eq!(text(&created.stdout), "secret API_TOKEN created\n");
    let replaced = run_with_stdin(
        &["secret", "set", "API_TOKEN"],
        &env,
        format!("{value}-2\r\n").as_bytes(),
    );
    assert!(replaced.status.success(), "{}", text(&replaced.stderr));
    assert_eq!(text(&replaced.stdout), "secret API_TOKEN replaced\n");
    // one trailing newline is dropped, no more
    let multi = run_with_stdin(&["secret", "set", "MULTI"], &env, b"line 1\nline 2\n\n");
    assert!(multi.status.success(), "{}", text(&multi.stderr));

    let list = run_with_stdin(&["secret", "list"], &env, b"");
    assert!(list.status.success(), "{}", text(&list.stderr));
    let listed = text(&list.stdout);
    let lines: Vec<(&str, &str)> = listed
        .lines()
        .map(|line| line.split_once('\t').expect("name<TAB>updated_at"))
        .collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert_eq!(lines[0].0, "API_TOKEN");
    assert_eq!(lines[1].0, "MULTI");
    for (_, updated_at) in &lines {
        chrono::DateTime::parse_from_rfc3339(updated_at).expect("an RFC 3339 time");
    }

    let mut conn = PgConnection::connect(&settings.database_url).await.unwrap();
    let values = secrets::all_values(&mut conn).await.unwrap();
    assert_eq!(values.get("API_TOKEN"), Some(format!("{value}-2").as_str()));
    assert_eq!(values.get("MULTI"), Some("line 1\nline 2\n"));
    conn.close().await.unwrap();

    let deleted = run_with_stdin(&["secret", "delete", "MULTI"], &env, b"");
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    assert_eq!(text(&deleted.stdout), "secret MULTI deleted\n");
    let again = run_with_stdin(&["secret", "delete", "MULTI"], &env, b"");
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("secret 'MULTI' does not exist"),
        "{}",
        text(&again.stderr)
    );
    let list = run_with_stdin(&["secret", "list"], &env, b"");
    assert_eq!(text(&list.stdout).lines().count(), 1);

    // refusals, before the database is touched (this one does not answer)
    let unreachable = [(
        "WORKFLOW_BACKEND_DATABASE_URL",
        "postgres://postgres@127.0.0.1:1/x",
    )];
    for (args, stdin, expected) in [
        (
            &["secret", "set", "bad name"][..],
            &b"v"[..],
            "is not a secret name",
        ),
        (
            &["secret", "delete", "1x"][..],
            &b""[..],
            "is not a secret name",
        ),
        (
            &["secret", "set", "EMPTY"][..],
            &b"\n"[..],
            "the value is empty",
        ),
        (&["secret", "set", "NUL"][..], &b"a\0b"[..], "NUL character"),
        (&["secret", "set", "BIN"][..], &b"\xff\xfe"[..], "not UTF-8"),
    ] {
        let output = run_with_stdin(args, &unreachable, stdin);
        assert!(!output.status.success(), "{args:?}");
        let err = text(&output.stderr);
        assert!(
            err.starts_with("error: ") && err.contains(expected),
            "{args:?}: {err}"
        );
    }
    let too_long = vec![b'x'; 64 * 1024 + 1];
    let output = run_with_stdin(&["secret", "set", "LONG"], &unreachable, &too_long);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("the limit is 65536 bytes"));

    // neither stdout nor the (debug) log says a value
    assert!(text(&created.stderr).contains("INSERT INTO secrets"));
    for output in [&created, &replaced, &multi, &list, &deleted] {
        for shown in [text(&output.stdout), text(&output.stderr)] {
            assert!(
                !shown.contains(value) && !shown.contains("line 1"),
                "{shown}"
            );
        }
    }
    drop_database(&settings).await;
}

#[tokio::test]
async fn secret_values_never_reach_the_server_log() {
    let settings = test_settings();
    let bind = crate::helpers::free_local_address();
    let mut child = binary(
        &["serve"],
        &[
            ("WORKFLOW_BACKEND_DATABASE_URL", &settings.database_url),
            ("WORKFLOW_BACKEND_BIND", &bind),
            ("WORKFLOW_BACKEND_JWT_SECRET", TEST_JWT_SECRET),
            ("RUST_LOG", "debug"),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // read all along, so that a full pipe never blocks the server's logging
    let mut stderr = child.stderr.take().unwrap();
    let log_reader = std::thread::spawn(move || {
        let mut log = Vec::new();
        let _ = stderr.read_to_end(&mut log);
        text(&log)
    });
    let mut child = KillOnDrop(child);
    let child = &mut child.0;

    let base = format!("http://{bind}");
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("{base}/v1.0/status")).send().await {
            assert_eq!(response.status(), StatusCode::OK);
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the server did not start"
        );
        // poll interval of a condition (the child answers) bounded by the deadline above
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let token =
        workflow_backend::tokens::JwtKeys::from_settings(&workflow_backend::config::JwtSettings {
            secret: Some(TEST_JWT_SECRET.into()),
            ..Default::default()
        })
        .unwrap()
        .mint("log-test", MANAGE, Duration::from_secs(600))
        .unwrap();
    let value = "wf-logged-3c9e71aa";
    let url = format!("{base}/v1.0/secrets/LOGGED");
    for (body, expected) in [
        (json!({ "value": value }), StatusCode::CREATED),
        (json!({ "value": format!("{value}-2") }), StatusCode::OK),
        (
            json!({ "value": format!("{value}\u{0}") }),
            StatusCode::BAD_REQUEST,
        ),
        (json!({ "value": value, "x": 1 }), StatusCode::BAD_REQUEST),
    ] {
        let response = client
            .put(&url)
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), expected);
    }
    let list = client
        .get(format!("{base}/v1.0/secrets"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), StatusCode::OK);
    let gone = client
        .delete(&url)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let stopping = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the server did not stop"
        );
        // poll interval of a condition (the child exited) bounded by the deadline above
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(child.wait().unwrap().success());
    let log = log_reader.join().unwrap();
    // the requests were logged (and at debug, sqlx's statements too) ...
    assert!(log.contains("/v1.0/secrets/LOGGED"), "{log}");
    assert!(log.contains("UPDATE secrets"), "{log}");
    // ... without the value
    assert!(!log.contains(value), "{log}");
    drop_database(&settings).await;
}
