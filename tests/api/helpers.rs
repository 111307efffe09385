//! Starts the application on 127.0.0.1:0 against a fresh database per test (created and migrated
//! by `Application::build`, dropped when the `TestApp` goes away), with a fixed HS256 secret.
//! `TEST_LOG=1` shows the server's logs.

use std::sync::Once;
use std::time::Duration;

use actix_web::{web, HttpResponse};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use uuid::Uuid;

use workflow_backend::api::auth::Principal;
use workflow_backend::api::error::ApiError;
use workflow_backend::config::Settings;
use workflow_backend::startup::Application;
use workflow_backend::tokens::JwtKeys;
use workflow_backend::App;

pub const TEST_JWT_SECRET: &str = "test-secret-not-for-production";

pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub address: String,
    pub port: u16,
    pub pool: PgPool,
    pub client: reqwest::Client,
    /// The settings the server runs with.
    pub settings: Settings,
    pub db_name: String,
    /// What the server's handlers and workers share: drive the workers' one-shot functions
    /// with it (spawn with `run_workers = false` so that no background loop races them).
    pub state: std::sync::Arc<App>,
}

static TRACING: Once = Once::new();

fn init_tracing() {
    TRACING.call_once(|| {
        if std::env::var("TEST_LOG").is_ok() {
            tracing_subscriber::fmt()
                .with_env_filter(workflow_backend::telemetry::env_filter().expect("RUST_LOG"))
                .with_test_writer()
                .init();
        }
    });
}

/// Test settings: defaults (the database server from `WORKFLOW_BACKEND_DATABASE_URL`, if set),
/// a fresh database name, port 0, the test secret.
pub fn test_settings() -> Settings {
    let from_env = std::env::vars().filter(|(k, _)| k == "WORKFLOW_BACKEND_DATABASE_URL");
    let mut settings = Settings::from_vars(from_env).expect("test settings");
    settings.database_url = settings.with_database_name(&Uuid::new_v4().to_string());
    settings.bind = "127.0.0.1:0".into();
    settings.public_url = "http://127.0.0.1:0".into();
    settings.jwt.secret = Some(TEST_JWT_SECRET.into());
    settings
}

/// A server whose background workers do not run: tests drive them with their one-shot rounds
/// (timers fired with a `now` of the test's choosing, jobs dispatched), so nothing races them.
pub async fn spawn_app_without_workers() -> TestApp {
    spawn_app_with(|s| s.run_workers = false).await
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// As `spawn_app`, with settings changed first (another database URL, JWT issuer, ...).
pub async fn spawn_app_with(customise: impl FnOnce(&mut Settings)) -> TestApp {
    init_tracing();
    let mut settings = test_settings();
    customise(&mut settings);
    let app = Application::build_with(settings, probe_routes)
        .await
        .expect("failed to build the application");
    let settings = (*app.settings()).clone();
    let pool = PgPool::connect(&settings.database_url)
        .await
        .expect("failed to connect to the test database");
    test_app(app, settings, pool)
}

/// The application with a pool to a database that does not answer (port 1).
pub async fn spawn_app_without_database() -> TestApp {
    spawn_app_without_database_with(|_| {}).await
}

/// As `spawn_app_without_database`, with settings changed first.
pub async fn spawn_app_without_database_with(customise: impl FnOnce(&mut Settings)) -> TestApp {
    init_tracing();
    let mut settings = test_settings();
    customise(&mut settings);
    settings.database_url = "postgres://postgres@127.0.0.1:1/unreachable".into();
    let options: PgConnectOptions = settings.database_url.parse().unwrap();
    let pool = PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy_with(options);
    let app = Application::build_with_pool(settings, pool.clone())
        .await
        .expect("failed to build the application");
    let settings = (*app.settings()).clone();
    test_app(app, settings, pool)
}

fn test_app(app: Application, settings: Settings, pool: PgPool) -> TestApp {
    let port = app.port();
    let state = app.state();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        pool,
        client: reqwest::Client::new(),
        db_name: settings.database_name(),
        settings,
        state,
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Runs on its own thread and runtime: the test's runtime is single-threaded and busy here.
        let admin_url = self.settings.with_database_name("postgres");
        let name = self.db_name.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&admin_url).await {
                    let sql = format!(r#"DROP DATABASE IF EXISTS "{name}" WITH (FORCE)"#);
                    let _ = conn.execute(sqlx::AssertSqlSafe(sql)).await;
                }
            });
        })
        .join();
    }
}

impl TestApp {
    /// A token for `scope`, signed with the test secret (with the configured iss/aud).
    pub fn token(&self, scope: &str) -> String {
        JwtKeys::from_settings(&self.settings.jwt)
            .expect("JWT settings")
            .mint("test-user", scope, Duration::from_secs(600))
            .expect("the test app has an HS256 secret")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path)
            .send()
            .await
            .expect("request failed")
    }

    /// GET with a token for `scope`.
    pub async fn get_as(&self, path: &str, scope: &str) -> Response {
        self.request(Method::GET, path)
            .bearer_auth(self.token(scope))
            .send()
            .await
            .expect("request failed")
    }

    /// GET with `Authorization: <value>` as given.
    pub async fn get_with_authorization(&self, path: &str, value: &str) -> Response {
        self.request(Method::GET, path)
            .header("Authorization", value)
            .send()
            .await
            .expect("request failed")
    }

    /// POST a JSON body with a token for `scope`.
    pub async fn post_json(&self, path: &str, body: &Value, scope: &str) -> Response {
        self.request(Method::POST, path)
            .bearer_auth(self.token(scope))
            .json(body)
            .send()
            .await
            .expect("request failed")
    }
}

/// Checks that `response` is a problem (content type and the six members, `message` equal to
/// `detail`, `status` equal to the HTTP status) and returns its status and body.
pub async fn problem(response: Response) -> (StatusCode, Value) {
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = response.text().await.expect("body");
    assert!(
        content_type.starts_with("application/problem+json"),
        "{status}: content type {content_type:?}, body {text}"
    );
    let body: Value = serde_json::from_str(&text).expect("a JSON body");
    for member in ["type", "title", "detail", "error_code", "message"] {
        assert!(body[member].is_string(), "{member} missing in {body}");
    }
    assert!(!body["error_code"].as_str().unwrap().is_empty(), "{body}");
    assert_eq!(body["status"], json!(status.as_u16()), "{body}");
    assert_eq!(body["message"], body["detail"], "{body}");
    assert_eq!(
        body["title"],
        json!(status.canonical_reason().unwrap()),
        "{body}"
    );
    (status, body)
}

// Probe routes, mounted only in tests, to exercise the extractors and error handlers through HTTP.

fn probe_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/test/whoami").route(web::get().to(whoami)))
        .service(web::resource("/test/require").route(web::get().to(require)))
        .service(web::resource("/test/echo").route(web::post().to(echo)))
        .service(web::resource("/test/items/{id}").route(web::get().to(item)))
        .service(web::resource("/test/raw").route(web::post().to(raw)))
        .service(web::resource("/test/boom").route(web::get().to(boom)))
        .service(web::resource("/test/panic").route(web::get().to(panics)));
}

async fn whoami(principal: Principal) -> HttpResponse {
    HttpResponse::Ok().json(json!({"subject": principal.subject, "scopes": principal.scopes}))
}

#[derive(serde::Deserialize)]
struct Needed {
    scope: String,
}

async fn require(
    principal: Principal,
    needed: web::Query<Needed>,
) -> Result<HttpResponse, ApiError> {
    principal.require(&needed.scope)?;
    Ok(HttpResponse::Ok().json(json!({"allowed": needed.scope})))
}

async fn echo(body: web::Json<Value>) -> HttpResponse {
    HttpResponse::Ok().json(body.into_inner())
}

async fn item(id: web::Path<u32>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"id": id.into_inner()}))
}

async fn raw(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().json(json!({"length": body.len()}))
}

async fn panics() -> HttpResponse {
    panic!("a defect in a handler");
}

async fn boom() -> Result<HttpResponse, ApiError> {
    Err(ApiError::internal(
        "connection to secret-host:5432 refused (password=hunter2)",
    ))
}

/// An address on 127.0.0.1 no one listens on now, for a server the test starts as a process.
pub fn free_local_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
}

/// The (backend, statement start, statement) of a statement of this test's database waiting
/// for a lock, if one is.
pub async fn lock_waiter(app: &TestApp) -> Option<(i32, String, String)> {
    sqlx::query_as(
        "SELECT pid, query_start::text, query FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock' LIMIT 1",
    )
    .fetch_optional(&app.pool)
    .await
    .unwrap()
}

/// Whether a statement of this test's database containing `text` waits for a lock within 5 s
/// (a condition poll).
pub async fn until_a_statement_waits(app: &TestApp, text: &str) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let waiting: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND strpos(query, $1) > 0)",
        )
        .bind(text)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if waiting {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    false
}
