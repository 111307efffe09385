//! The binary: configuration errors, the key requirement, `openapi`, `token`, `migrate`, and a
//! graceful stop on SIGTERM. Each run gets a clean environment and an empty working directory
//! (no `.env`).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sqlx::{Connection, Executor, PgConnection};

use crate::helpers::{test_settings, TEST_JWT_SECRET};
use workflow_backend::api::openapi_document;
use workflow_backend::config::JwtSettings;
use workflow_backend::tokens::JwtKeys;

fn binary(args: &[&str], env: &[(&str, &str)]) -> Command {
    // An empty working directory: no `.env` to pick up.
    let dir: PathBuf = std::env::temp_dir().join("workflow-backend-test-cwd");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(
        !dir.join(".env").exists(),
        "{} must not hold a .env",
        dir.display()
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_workflow-backend"));
    command.args(args).env_clear().current_dir(dir);
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    binary(args, env).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_invalid_variable_stops_the_process_with_one_line_naming_it() {
    let cases = [
        ("WORKFLOW_BACKEND_BIND", "x"),
        ("WORKFLOW_BACKEND_DATABASE_URL", "mysql://localhost/db"),
        ("WORKFLOW_BACKEND_URL", "not a url"),
        ("WORKFLOW_BACKEND_CONNECTOR_PROXY_URL", "localhost:7004"),
        ("WORKFLOW_BACKEND_MAX_BODY_BYTES", "lots"),
        ("WORKFLOW_BACKEND_LOG_FORMAT", "yaml"),
        ("WORKFLOW_BACKEND_CITUS", "yes"),
        ("WORKFLOW_BACKEND_CALLBACK_TOKEN_TTL_SECONDS", "0"),
        ("RUST_LOG", "info,[[["),
    ];
    for (var, value) in cases {
        let output = run(&[], &[("WORKFLOW_BACKEND_JWT_SECRET", "s"), (var, value)]);
        assert!(!output.status.success(), "{var}={value} started");
        let err = stderr(&output);
        assert_eq!(err.trim_end().lines().count(), 1, "{var}={value}: {err}");
        assert!(
            err.starts_with(&format!("error: {var}: ")),
            "{var}={value}: {err}"
        );
    }
}

/// With `WORKFLOW_BACKEND_CITUS=true` on a plain Postgres the server does not start (it would run
/// unsharded) and says what is missing; nothing is migrated.
#[tokio::test]
async fn citus_mode_on_a_plain_database_refuses_to_start() {
    let settings = test_settings();
    let output = run(
        &["serve"],
        &[
            ("WORKFLOW_BACKEND_DATABASE_URL", &settings.database_url),
            ("WORKFLOW_BACKEND_JWT_SECRET", "s"),
            ("WORKFLOW_BACKEND_BIND", "127.0.0.1:0"),
            ("WORKFLOW_BACKEND_CITUS", "true"),
        ],
    );
    assert!(!output.status.success());
    let err = stderr(&output);
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.contains("citus_not_ready") && last.contains("CREATE EXTENSION citus"),
        "{err}"
    );
    let mut conn = PgConnection::connect(&settings.database_url).await.unwrap();
    let migrated: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(migrated, None);
    conn.close().await.unwrap();
    drop_database(
        &settings.with_database_name("postgres"),
        &settings.database_name(),
    )
    .await;
}

#[test]
fn without_a_jwt_key_the_server_refuses_to_start_and_says_how_to_configure_one() {
    // The key is checked before the database is touched: this database does not answer.
    let output = run(
        &["serve"],
        &[(
            "WORKFLOW_BACKEND_DATABASE_URL",
            "postgres://postgres@127.0.0.1:1/x",
        )],
    );
    assert!(!output.status.success());
    let err = stderr(&output);
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("error: no JWT key configured"), "{err}");
    assert!(
        last.contains("WORKFLOW_BACKEND_JWT_SECRET")
            && last.contains("WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE"),
        "{err}"
    );
}

#[test]
fn openapi_prints_the_document() {
    let output = run(&["openapi"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        openapi_document()
    );
}

#[tokio::test]
async fn token_prints_a_token_the_server_accepts() {
    let output = run(
        &[
            "token",
            "--sub",
            "me",
            "--scope",
            "admin messages:send",
            "--ttl",
            "120",
        ],
        &[("WORKFLOW_BACKEND_JWT_SECRET", TEST_JWT_SECRET)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let token = String::from_utf8(output.stdout).unwrap();
    let keys = JwtKeys::from_settings(&JwtSettings {
        secret: Some(TEST_JWT_SECRET.into()),
        ..JwtSettings::default()
    })
    .unwrap();
    let principal = keys.verify(token.trim()).await.unwrap();
    assert_eq!(principal.subject, "me");
    assert_eq!(principal.scopes, vec!["admin", "messages:send"]);

    let output = run(&["token", "--sub", "me", "--scope", "admin"], &[]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).starts_with("error: WORKFLOW_BACKEND_JWT_SECRET: not set"),
        "{}",
        stderr(&output)
    );
}

async fn drop_database(database_url: &str, name: &str) {
    let mut conn = PgConnection::connect(database_url).await.unwrap();
    let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
    conn.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
}

#[tokio::test]
async fn migrate_creates_and_migrates_the_database() {
    let settings = test_settings();
    let output = run(
        &["migrate"],
        &[("WORKFLOW_BACKEND_DATABASE_URL", &settings.database_url)],
    );
    assert!(output.status.success(), "{}", stderr(&output));

    let mut conn = PgConnection::connect(&settings.database_url).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .count();
    assert_eq!(applied as usize, files);
    conn.close().await.unwrap();
    drop_database(
        &settings.with_database_name("postgres"),
        &settings.database_name(),
    )
    .await;
}

/// A database that applied a migration before its comments were reworded (its stored checksum
/// is the released text's) still migrates and starts; the checksum moves to the current text.
#[tokio::test]
async fn a_migration_reworded_after_release_does_not_stop_an_existing_database() {
    let settings = test_settings();
    let env = [(
        "WORKFLOW_BACKEND_DATABASE_URL",
        settings.database_url.as_str(),
    )];
    let output = run(&["migrate"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let (version, released) = workflow_backend::startup::REWORDED_MIGRATIONS[0];
    assert_eq!(version, 20261125000100);
    let released = hex::decode(released).unwrap();
    let mut conn = PgConnection::connect(&settings.database_url).await.unwrap();
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 20261125000100")
        .bind(&released)
        .execute(&mut conn)
        .await
        .unwrap();

    let output = run(&["migrate"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 20261125000100")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    let current = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/20261125000100_domain.sql"
    ))
    .unwrap();
    use sha2::Digest;
    assert_eq!(stored, sha2::Sha384::digest(&current).to_vec());
    conn.close().await.unwrap();
    drop_database(
        &settings.with_database_name("postgres"),
        &settings.database_name(),
    )
    .await;
}

#[tokio::test]
async fn sigterm_stops_the_server_gracefully() {
    let settings = test_settings();
    let bind = crate::helpers::free_local_address();
    let mut child = binary(
        &[],
        &[
            ("WORKFLOW_BACKEND_DATABASE_URL", &settings.database_url),
            ("WORKFLOW_BACKEND_BIND", &bind),
            ("WORKFLOW_BACKEND_JWT_SECRET", TEST_JWT_SECRET),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();

    let status_url = format!("http://{bind}/v1.0/status");
    let started = Instant::now();
    loop {
        if let Ok(response) = reqwest::get(&status_url).await {
            assert_eq!(response.status(), reqwest::StatusCode::OK);
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the server exited before answering"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the server did not start"
        );
        // poll interval of a condition (the child answers) bounded by the deadline above
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let stopping = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the server did not stop"
        );
        // poll interval of a condition (the child exited) bounded by the deadline above
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "exit status {status}: {err}");
    assert!(err.contains("SIGTERM") && err.contains("stopped"), "{err}");
    drop_database(
        &settings.with_database_name("postgres"),
        &settings.database_name(),
    )
    .await;
}

/// Every command's `--help` lists the environment variables it reads, with their defaults.
#[test]
fn help_lists_the_environment_each_command_reads() {
    for command in ["serve", "migrate", "token", "secret"] {
        let output = run(&[command, "--help"], &[]);
        assert!(output.status.success());
        let help = String::from_utf8(output.stdout).unwrap();
        assert!(
            help.contains("WORKFLOW_BACKEND_DATABASE_URL")
                && help.contains("default: postgres://postgres@127.0.0.1:5432/workflow_backend")
                && help.contains("WORKFLOW_BACKEND_JWT_SECRET")
                && help.contains("RUST_LOG"),
            "{command}: {help}"
        );
    }
    let output = run(&["openapi", "--help"], &[]);
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(help.contains("Reads no environment variable"), "{help}");
}

/// An installation is the binary with its `python-packages` folder beside it, anywhere: a copy
/// of both runs scripts (the examples' decision model: a DMN table, then a script); a copy of
/// the binary alone refuses to start, naming the folder it needs.
#[tokio::test]
async fn a_copied_binary_runs_scripts_from_the_packages_folder_beside_it() {
    let settings = test_settings();
    let installed = std::env::temp_dir().join(format!("wb-installed-{}", std::process::id()));
    std::fs::create_dir_all(&installed).unwrap();
    let copy = installed.join("workflow-backend");
    std::fs::copy(env!("CARGO_BIN_EXE_workflow-backend"), &copy).unwrap();
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let bind = crate::helpers::free_local_address();
    let serve = || {
        Command::new(&copy)
            .env_clear()
            .current_dir(&installed)
            .env("WORKFLOW_BACKEND_DATABASE_URL", &settings.database_url)
            .env("WORKFLOW_BACKEND_BIND", &bind)
            .env("WORKFLOW_BACKEND_JWT_SECRET", TEST_JWT_SECRET)
            .env("WORKFLOW_BACKEND_PROCESS_MODELS_DIR", examples)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };

    let alone = serve().wait_with_output().unwrap();
    assert!(!alone.status.success());
    let why = stderr(&alone);
    assert!(why.contains("python-packages"), "{why}");

    let copied = Command::new("cp")
        .arg("-r")
        .arg(workflow_backend::python::default_packages())
        .arg(installed.join("python-packages"))
        .status()
        .unwrap();
    assert!(copied.success());
    let mut server = serve();
    let client = reqwest::Client::new();
    let started = Instant::now();
    while client
        .get(format!("http://{bind}/v1.0/status"))
        .send()
        .await
        .is_err()
    {
        assert!(server.try_wait().unwrap().is_none(), "the copy exited");
        assert!(started.elapsed() < Duration::from_secs(60), "no answer");
        // poll interval of a condition (the child answers) bounded by the deadline above
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let token = JwtKeys::from_settings(&JwtSettings {
        secret: Some(TEST_JWT_SECRET.into()),
        ..JwtSettings::default()
    })
    .unwrap()
    .mint("me", "admin", Duration::from_secs(60))
    .unwrap();
    let answer: serde_json::Value = client
        .post(format!("http://{bind}/v1.0/process-instances/decision"))
        .bearer_auth(token)
        .json(&serde_json::json!({"country": "DE", "order_total": 30}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    std::fs::remove_dir_all(&installed).unwrap();
    drop_database(
        &settings.with_database_name("postgres"),
        &settings.database_name(),
    )
    .await;
    assert_eq!(answer["process_instance"]["status"], "complete", "{answer}");
    assert_eq!(answer["task_data"]["total"], 34.9, "{answer}");
}
