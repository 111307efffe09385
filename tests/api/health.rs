//! Liveness, readiness (with and without a database), the metrics endpoint, and the test
//! harness's own promise of one migrated database per test app.

use reqwest::header::CONTENT_TYPE;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{problem, spawn_app, spawn_app_without_database};

#[tokio::test]
async fn status_answers_ok_without_credentials() {
    let app = spawn_app().await;
    let response = app.get("/v1.0/status").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"ok": true}));
}

#[tokio::test]
async fn ready_when_the_database_answers() {
    let app = spawn_app().await;
    let response = app.get("/v1.0/health/ready").await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.json::<Value>().await.unwrap();
    // what the database's upkeep needs depends on its settings (hardening.rs checks it)
    assert!(body["warnings"].is_array(), "{body}");
    body.as_object_mut().unwrap().remove("warnings");
    assert_eq!(
        body,
        json!({"ok": true, "database": "up", "connector_jobs_waiting": 0})
    );
}

#[tokio::test]
async fn not_ready_when_the_database_is_unreachable() {
    let app = spawn_app_without_database().await;
    let started = std::time::Instant::now();
    let (status, body) = problem(app.get("/v1.0/health/ready").await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error_code"], "database_unavailable");
    assert!(
        started.elapsed().as_secs() < 10,
        "readiness took {:?}",
        started.elapsed()
    );
    // Liveness does not depend on the database.
    assert_eq!(app.get("/v1.0/status").await.status(), StatusCode::OK);
}

#[tokio::test]
async fn metrics_count_requests_per_route_pattern() {
    let app = spawn_app().await;
    app.get("/v1.0/status").await;
    app.get("/test/items/41").await;
    app.get("/test/items/42").await;
    app.get("/no/such/path/1").await;
    app.get("/no/such/path/2").await;

    let response = app.get("/metrics").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = response.text().await.unwrap();
    let total = |labels: &str| format!("workflow_backend_http_requests_total{{{labels}}}");
    assert!(
        text.contains(&(total(r#"endpoint="/v1.0/status",method="GET",status="200""#) + " 1")),
        "{text}"
    );
    // A parameterised route is one series, not one per value.
    assert!(
        text.contains(&(total(r#"endpoint="/test/items/{id}",method="GET",status="200""#) + " 2")),
        "{text}"
    );
    // Unknown paths are one series too.
    assert!(
        text.contains(&(total(r#"endpoint="UNMATCHED",method="GET",status="404""#) + " 2")),
        "{text}"
    );
    assert!(!text.contains("/no/such/path"), "{text}");
    assert!(text.contains(r#"workflow_backend_http_requests_duration_seconds_bucket{endpoint="/v1.0/status",method="GET",status="200",le="0.005"}"#));
}

#[tokio::test]
async fn each_test_app_has_its_own_migrated_database() {
    let app = spawn_app().await;
    assert!(app.address.ends_with(&format!(":{}", app.port)));
    let current: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(current, app.db_name);
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(applied >= 1);
    let other = spawn_app().await;
    assert_ne!(other.db_name, app.db_name);
}
