//! A database URL with several hosts: the pool follows the one that takes writes. The first
//! host is a TCP proxy to the test Postgres that the test can kill (a primary that dies); the
//! second is the test Postgres itself. Read-only hosts are made with
//! `default_transaction_read_only`. The watch is driven with its one-shot check.
//!
//! The session settings the failover guarantees rest on are checked here too, and what
//! happens to a pooled connection whose session the server ended.
//!
//! The full failover, with pg_auto_failover and load, is `tests/ha/run`; replication itself,
//! `tests/ha/durability`.

use crate::domain::*;
use crate::helpers::{problem, spawn_app_with, spawn_app_without_workers, test_settings, TestApp};
use crate::models;
use reqwest::StatusCode;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use workflow_backend::config::DatabaseHosts;
use workflow_backend::store::primary::Check;

/// Forwards TCP connections to the test Postgres until killed.
struct TcpProxy {
    port: u16,
    handles: Arc<Mutex<Vec<AbortHandle>>>,
}

impl TcpProxy {
    async fn start(to: (String, u16)) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let handles = Arc::new(Mutex::new(Vec::new()));
        let connections = handles.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let to = to.clone();
                let copy = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                connections.lock().unwrap().push(copy.abort_handle());
            }
        });
        handles.lock().unwrap().push(accept.abort_handle());
        TcpProxy { port, handles }
    }

    /// The host dies: its port refuses connections and every open one is cut.
    fn kill(&self) {
        for handle in self.handles.lock().unwrap().drain(..) {
            handle.abort();
        }
    }
}

/// The test Postgres' host and port.
fn postgres() -> (String, u16) {
    let url = reqwest::Url::parse(&test_settings().database_url).unwrap();
    (
        url.host_str().unwrap().to_string(),
        url.port().unwrap_or(5432),
    )
}

async fn spawn_with_hosts(hosts: Vec<(String, u16)>) -> TestApp {
    spawn_app_with(move |s| {
        s.run_workers = false;
        s.database_failover = Some(DatabaseHosts { hosts });
    })
    .await
}

async fn ready(app: &TestApp) -> StatusCode {
    app.get("/v1.0/health/ready").await.status()
}

/// Ends every session of database `db` (from `admin`, a session of another database) and
/// waits until they are gone: `pg_terminate_backend` only signals them.
async fn end_sessions(admin: &sqlx::PgPool, db: &str) {
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(db)
        .execute(admin)
        .await
        .unwrap();
    for round in 0.. {
        assert!(
            round < 10_000,
            "the terminated sessions of {db} did not end"
        );
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
                .bind(db)
                .fetch_one(admin)
                .await
                .unwrap();
        if left == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

async fn check(app: &TestApp) -> Check {
    let primary = app.state.database_primary.clone().expect("several hosts");
    primary.check_once(&app.state.pool).await
}

#[tokio::test]
async fn when_the_primary_dies_the_pool_moves_to_the_host_that_takes_writes() {
    let proxy = TcpProxy::start(postgres()).await;
    let app = spawn_with_hosts(vec![("127.0.0.1".into(), proxy.port), postgres()]).await;
    assert_eq!(app.state.database_primary.as_ref().unwrap().current(), 0);
    upload_ok(
        &app,
        "ha/one",
        "one.bpmn",
        &models::one_step("one", "ha start"),
    )
    .await;
    let (status, _) = send(
        &app,
        "ha start",
        &json!({}),
        &[(
            "message_instance_uuid",
            "0b6f4ec6-58b1-4d3e-9f43-6a1a5c1e0001",
        )],
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    proxy.kill();
    // the request that meets the dead primary is answered 503, never 500
    let uuid = "0b6f4ec6-58b1-4d3e-9f43-6a1a5c1e0002";
    let (status, body) = send(
        &app,
        "ha start",
        &json!({}),
        &[("message_instance_uuid", uuid)],
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error_code"], "database_unavailable");

    assert_eq!(check(&app).await, Check::Switched { from: 0, to: 1 });
    assert_eq!(ready(&app).await, StatusCode::OK);
    // connections to the new primary are made as the first ones were (generic plans)
    let mode: String = sqlx::query_scalar("SHOW plan_cache_mode")
        .fetch_one(&app.state.pool)
        .await
        .unwrap();
    assert_eq!(mode, "force_generic_plan");
    // the client retries with the same uuid: delivered once
    let (status, first) = send(
        &app,
        "ha start",
        &json!({}),
        &[("message_instance_uuid", uuid)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, again) = send(
        &app,
        "ha start",
        &json!({}),
        &[("message_instance_uuid", uuid)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        again["process_instance"]["id"],
        first["process_instance"]["id"]
    );
    let instances: i64 = sqlx::query_scalar("SELECT count(*) FROM process_instances")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(instances, 2, "one instance per acknowledged uuid");
    assert_eq!(check(&app).await, Check::Writable(1));
}

#[tokio::test]
async fn while_no_host_takes_writes_requests_and_readiness_get_503_and_then_recover() {
    let app = spawn_with_hosts(vec![postgres()]).await;
    upload_ok(
        &app,
        "ha/one",
        "one.bpmn",
        &models::one_step("one", "ha ro"),
    )
    .await;
    let db = app.db_name.clone();
    let admin_url = app.settings.with_database_name("postgres");
    // from the maintenance database: a session of the read-only database could not undo it
    let set = |value: &'static str| {
        let (admin_url, db) = (admin_url.clone(), db.clone());
        async move {
            let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
            let sql =
                format!(r#"ALTER DATABASE "{db}" SET default_transaction_read_only = {value}"#);
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&admin)
                .await
                .unwrap();
            // sessions take the setting when they start: end the open ones
            end_sessions(&admin, &db).await;
            admin.close().await;
        }
    };

    // a primary demoted in place: it still answers, read-only
    set("on").await;
    assert_eq!(check(&app).await, Check::NoWritableHost);
    assert_eq!(ready(&app).await, StatusCode::SERVICE_UNAVAILABLE);
    let (status, body) = problem(
        app.client
            .post(app.url("/v1.0/messages/ha%20ro"))
            .bearer_auth(app.token(ADMIN))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error_code"], "database_unavailable");

    set("off").await;
    assert_eq!(check(&app).await, Check::Writable(0));
    assert_eq!(ready(&app).await, StatusCode::OK);
    let (status, _) = send(&app, "ha ro", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn sessions_run_without_a_statement_timeout_whatever_the_database_says() {
    // a cancelled wait for the synchronous standby commits locally and reports success: a
    // statement timeout would turn a stalled standby into acknowledged, unreplicated commits
    let app = spawn_app_without_workers().await;
    let admin = sqlx::PgPool::connect(&app.settings.with_database_name("postgres"))
        .await
        .unwrap();
    let db = &app.db_name;
    let sql = format!(r#"ALTER DATABASE "{db}" SET statement_timeout = '1s'"#);
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&admin)
        .await
        .unwrap();
    // the pool's sessions end: the next ones start under the database's setting
    end_sessions(&admin, db).await;
    let mut shown = None;
    for _ in 0..3 {
        // a pooled session that was terminated fails once, then the pool opens a new one
        if let Ok(value) = sqlx::query_scalar::<_, String>("SHOW statement_timeout")
            .fetch_one(&app.state.pool)
            .await
        {
            shown = Some(value);
            break;
        }
    }
    assert_eq!(shown.as_deref(), Some("0"));
    let plain = sqlx::PgPool::connect(&app.settings.with_database_name(db))
        .await
        .unwrap();
    let configured: String = sqlx::query_scalar("SHOW statement_timeout")
        .fetch_one(&plain)
        .await
        .unwrap();
    assert_eq!(
        configured, "1s",
        "the database's setting is in effect for other sessions"
    );
    plain.close().await;
    admin.close().await;
}

/// The pool checks a connection before each use (sqlx's `test_before_acquire`, a `Sync` and
/// its answer), so a pooled connection whose session ended is replaced, not an error. Dropping
/// the check would save a round trip per request (measured in docs/perf: no gain beyond the
/// noise) and would need a retry of a `BEGIN` that meets a closed session: this holds either.
#[tokio::test]
async fn a_message_after_the_pools_sessions_were_ended_is_answered_on_new_ones() {
    let app = spawn_app_without_workers().await;
    upload_ok(
        &app,
        "ha/one",
        "one.bpmn",
        &models::one_step("one", "ha ended"),
    )
    .await;
    let (status, _) = send(&app, "ha ended", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::OK);

    // every session of the service's pool ends (a restart, an administrator) while its
    // connections wait in the pool, used a moment ago
    let admin = sqlx::PgPool::connect(&app.settings.with_database_name("postgres"))
        .await
        .unwrap();
    assert!(app.state.pool.num_idle() > 0, "the pool holds connections");
    end_sessions(&admin, &app.db_name).await;
    admin.close().await;

    let (status, body) = send(&app, "ha ended", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete");
}
