//! Identity providers (JWKS, OpenID discovery, scope claims and role mapping) and API keys.
//! The identity provider is a real HTTP server on 127.0.0.1 serving a key set the test changes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpResponse, HttpServer};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{problem, spawn_app_with, TestApp};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn jwk(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// A token signed with a fixture's private key, naming `kid`.
fn signed(alg: Algorithm, private_pem: &str, kid: &str, claims: Value) -> String {
    let pem = std::fs::read(fixture(private_pem)).unwrap();
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem).unwrap(),
        _ => EncodingKey::from_rsa_pem(&pem).unwrap(),
    };
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn claims(scope: Value) -> Value {
    json!({
        "sub": "alice",
        "exp": jsonwebtoken::get_current_timestamp() + 600,
        "iss": "http://idp.test",
        "scope": scope,
    })
}

/// An identity provider: `/jwks` serves `keys` and counts fetches; its discovery document is at
/// `/.well-known/openid-configuration`.
struct Provider {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

struct ProviderState {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

async fn jwks(state: web::Data<ProviderState>) -> HttpResponse {
    state.fetches.fetch_add(1, Ordering::SeqCst);
    let keys = state.keys.lock().unwrap().clone();
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .json(json!({ "keys": keys }))
}

async fn discovery(state: web::Data<ProviderState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "issuer": state.url,
        "jwks_uri": format!("{}/jwks", state.url),
    }))
}

impl Provider {
    /// On `listener` (a port reserved by the test, so it can be started after the service).
    fn start_on(listener: std::net::TcpListener, keys: Vec<Value>) -> Provider {
        let url = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let state = web::Data::new(ProviderState {
            url: url.clone(),
            keys: keys.clone(),
            fetches: fetches.clone(),
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .route("/jwks", web::get().to(jwks))
                .route(
                    "/.well-known/openid-configuration",
                    web::get().to(discovery),
                )
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        tokio::spawn(server);
        Provider { url, keys, fetches }
    }

    fn start(keys: Vec<Value>) -> Provider {
        Provider::start_on(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), keys)
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

async fn whoami(app: &TestApp, token: &str) -> (StatusCode, Value) {
    let response = app
        .get_with_authorization("/test/whoami", &format!("Bearer {token}"))
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn app_with_jwks(url: String) -> TestApp {
    spawn_app_with(|s| {
        s.jwt.jwks_url = Some(url);
        s.jwt.issuer = Some("http://idp.test".into());
    })
    .await
}

#[tokio::test]
async fn keys_rotate_at_the_provider_without_a_restart() {
    let provider = Provider::start(vec![jwk("rs256.jwk.json")]);
    let app = app_with_jwks(format!("{}/jwks", provider.url)).await;
    assert_eq!(provider.fetches(), 1, "fetched at start");

    let old = signed(
        Algorithm::RS256,
        "rs256-private.pem",
        "rsa-a",
        claims(json!("messages:send")),
    );
    let (status, body) = whoami(&app, &old).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"subject": "alice", "scopes": ["messages:send"]})
    );

    // the provider adds a key and starts signing with it: the unknown kid refetches once
    provider.keys.lock().unwrap().push(jwk("rs256b.jwk.json"));
    let new = signed(
        Algorithm::RS256,
        "rs256b-private.pem",
        "rsa-b",
        claims(json!("admin")),
    );
    let (status, body) = whoami(&app, &new).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(provider.fetches(), 2);
    // the old key keeps working while it is in the set, without further fetches
    assert_eq!(whoami(&app, &old).await.0, StatusCode::OK);
    assert_eq!(provider.fetches(), 2);

    // the provider drops the old key: after the next refresh its tokens are refused
    provider.keys.lock().unwrap().remove(0);
    app.state.keys.jwks().unwrap().refresh().await.unwrap();
    let (status, body) = whoami(&app, &old).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error_code"], "invalid_token");
    assert!(body["detail"].as_str().unwrap().contains("rsa-a"), "{body}");
    assert_eq!(whoami(&app, &new).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_forged_token_with_a_known_kid_is_refused() {
    let provider = Provider::start(vec![jwk("rs256.jwk.json"), jwk("es256.jwk.json")]);
    let app = app_with_jwks(format!("{}/jwks", provider.url)).await;
    // signed with another RSA key but naming the provider's kid
    let forged = signed(
        Algorithm::RS256,
        "rs256b-private.pem",
        "rsa-a",
        claims(json!("admin")),
    );
    let (status, body) = whoami(&app, &forged).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error_code"], "invalid_token");
    assert!(
        body["detail"].as_str().unwrap().contains("signature"),
        "{body}"
    );
    // an HS256 token naming a JWKS kid: the key set never verifies an HMAC (no secret here
    // but the test one, which this token does not use)
    let hmac = jsonwebtoken::encode(
        &Header {
            kid: Some("rsa-a".into()),
            ..Header::new(Algorithm::HS256)
        },
        &claims(json!("admin")),
        &EncodingKey::from_secret(b"guess"),
    )
    .unwrap();
    assert_eq!(whoami(&app, &hmac).await.0, StatusCode::UNAUTHORIZED);
    // the EC key only takes ES256; signed right, it is accepted
    let ec = signed(
        Algorithm::ES256,
        "es256-private.pem",
        "ec-a",
        claims(json!(["a", "b"])),
    );
    let (status, body) = whoami(&app, &ec).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["scopes"], json!(["a", "b"]));
    // a wrong issuer is refused even with a good signature
    let mut other = claims(json!("admin"));
    other["iss"] = "http://elsewhere".into();
    let wrong_issuer = signed(Algorithm::RS256, "rs256-private.pem", "rsa-a", other);
    assert_eq!(
        whoami(&app, &wrong_issuer).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn tokens_with_random_kids_do_not_hammer_the_provider() {
    let provider = Provider::start(vec![jwk("rs256.jwk.json")]);
    let app = app_with_jwks(format!("{}/jwks", provider.url)).await;
    for i in 0..20 {
        let token = signed(
            Algorithm::RS256,
            "rs256-private.pem",
            &format!("random-{i}"),
            claims(json!("admin")),
        );
        let (status, body) = whoami(&app, &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    // the start, and one refetch for the first unknown kid
    assert_eq!(provider.fetches(), 2);
}

#[tokio::test]
async fn a_provider_down_at_start_gives_503_until_its_keys_arrive() {
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = reserved.local_addr().unwrap();
    drop(reserved);
    let app = app_with_jwks(format!("http://{address}/jwks")).await;
    let token = signed(
        Algorithm::RS256,
        "rs256-private.pem",
        "rsa-a",
        claims(json!("admin")),
    );
    let response = app
        .get_with_authorization("/test/whoami", &format!("Bearer {token}"))
        .await;
    assert!(response.headers().contains_key("retry-after"));
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error_code"], "identity_provider_unavailable");
    // HS256 tokens (the secret is configured too) are not held up by the provider
    assert_eq!(whoami(&app, &app.token("admin")).await.0, StatusCode::OK);

    // the provider comes up; the refresher's next round (driven here) loads its keys
    let provider = Provider::start_on(
        std::net::TcpListener::bind(address).unwrap(),
        vec![jwk("rs256.jwk.json")],
    );
    app.state.keys.jwks().unwrap().refresh().await.unwrap();
    let (status, body) = whoami(&app, &token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(provider.fetches(), 1);
}

#[tokio::test]
async fn an_oidc_issuer_is_discovered_and_keycloak_roles_map_to_scopes() {
    let provider = Provider::start(vec![jwk("rs256.jwk.json")]);
    let map = tempfile_with(&json!({
        "workflow-operator": "instances:read:* instances:update:*",
        "sender": ["messages:send"],
    }));
    let issuer = provider.url.clone();
    let app = spawn_app_with(|s| {
        s.jwt.oidc_issuer = Some(issuer);
        s.jwt.scope_claim = "realm_access.roles".into();
        s.jwt.scope_map_file = Some(map.clone());
    })
    .await;
    let keycloak = json!({
        "sub": "f2c1",
        "exp": jsonwebtoken::get_current_timestamp() + 600,
        "iss": provider.url,
        "realm_access": {"roles": ["workflow-operator", "offline_access"]},
        "scope": "admin",
    });
    let token = signed(
        Algorithm::RS256,
        "rs256-private.pem",
        "rsa-a",
        keycloak.clone(),
    );
    let (status, body) = whoami(&app, &token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // the `scope` claim is not read: the configured claim is
    assert_eq!(
        body["scopes"],
        json!([
            "instances:read:*",
            "instances:update:*",
            "workflow-operator",
            "offline_access"
        ])
    );
    // the issuer is the one discovered: a token from another is refused
    let mut other = keycloak;
    other["iss"] = "http://elsewhere".into();
    let token = signed(Algorithm::RS256, "rs256-private.pem", "rsa-a", other);
    assert_eq!(whoami(&app, &token).await.0, StatusCode::UNAUTHORIZED);
}

fn tempfile_with(value: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("scope-map-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

// ---- API keys

async fn create_key(app: &TestApp, body: Value, scope: &str) -> (StatusCode, Value) {
    let response = app.post_json("/v1.0/api-keys", &body, scope).await;
    let status = response.status();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn an_api_key_works_in_both_headers_with_its_scopes_until_revoked() {
    let app = spawn_app_with(|_| {}).await;
    let (status, created) = create_key(
        &app,
        json!({"name": "order-service", "scope": "messages:send instances:read:*"}),
        "admin",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let key = created["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("wbk_"));
    assert_eq!(created["prefix"], key[..12]);
    assert_eq!(
        created["scopes"],
        json!(["messages:send", "instances:read:*"])
    );
    assert_eq!(created["created_by"], "test-user");

    // as a bearer credential and in SpiffArena's header
    let (status, body) = whoami(&app, &key).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subject"], "api-key:order-service");
    let response = app
        .request(
            reqwest::Method::GET,
            "/test/require?scope=messages:send:order_paid",
        )
        .header("SpiffWorkflow-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = app
        .request(reqwest::Method::GET, "/test/require?scope=models:write")
        .header("SpiffWorkflow-Api-Key", &key)
        .send()
        .await
        .unwrap();
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error_code"], "not_authorized");

    // the listing shows the use, never the key
    let listed: Value = app
        .get_as("/v1.0/api-keys", "api-keys:read")
        .await
        .json()
        .await
        .unwrap();
    let text = listed.to_string();
    assert!(!text.contains(&key[12..]), "{text}");
    assert_eq!(listed["results"][0]["name"], "order-service");
    assert!(listed["results"][0]["last_used_at"].is_string(), "{listed}");

    // revoked: refused at once, through the other header too
    let response = app
        .request(reqwest::Method::DELETE, "/v1.0/api-keys/order-service")
        .bearer_auth(app.token("api-keys:write"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (status, body) = whoami(&app, &key).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error_code"], "invalid_token");
    let response = app
        .request(reqwest::Method::GET, "/test/whoami")
        .header("SpiffWorkflow-Api-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // a made-up key of the right shape is refused the same way
    let (status, _) = whoami(&app, "wbk_0123456789abcdef").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn api_key_creation_is_checked_and_gives_no_more_than_the_caller_has() {
    let app = spawn_app_with(|_| {}).await;
    // a caller allowed to make keys cannot make one with scopes it lacks
    let (status, body) = create_key(
        &app,
        json!({"name": "escalate", "scope": "admin"}),
        "api-keys:write messages:send",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["required_scope"], "admin");
    let (status, _) = create_key(
        &app,
        json!({"name": "sender", "scope": "messages:send:order_paid"}),
        "api-keys:write messages:send",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    for (body, code) in [
        (
            json!({"name": "sender", "scope": "messages:send"}),
            "api_key_name_conflict",
        ),
        (
            json!({"name": "bad name", "scope": "a"}),
            "invalid_api_key_name",
        ),
        (json!({"name": "n", "scope": "  "}), "invalid_scope"),
        (
            json!({"name": "n", "scope": "a", "expires_in_days": 0}),
            "invalid_expiry",
        ),
    ] {
        let (_, answer) = create_key(&app, body, "admin").await;
        assert_eq!(answer["error_code"], code, "{answer}");
    }
    let response = app
        .request(reqwest::Method::DELETE, "/v1.0/api-keys/nobody")
        .bearer_auth(app.token("admin"))
        .send()
        .await
        .unwrap();
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error_code"], "api_key_not_found");
    // reading keys needs its scope
    let response = app.get_as("/v1.0/api-keys", "messages:send").await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn an_expired_api_key_is_refused() {
    let app = spawn_app_with(|_| {}).await;
    let (_, created) = create_key(
        &app,
        json!({"name": "short", "scope": "admin", "expires_in_days": 1}),
        "admin",
    )
    .await;
    let key = created["key"].as_str().unwrap().to_string();
    assert_eq!(whoami(&app, &key).await.0, StatusCode::OK);
    sqlx::query("UPDATE api_keys SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(whoami(&app, &key).await.0, StatusCode::UNAUTHORIZED);
}
