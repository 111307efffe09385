//! The 401/403 matrix, through the `Principal` extractor on the probe routes.

use std::path::PathBuf;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{problem, spawn_app, spawn_app_with, TEST_JWT_SECRET};
use workflow_backend::tokens::mint_token;

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn sign(alg: Algorithm, key: &EncodingKey, claims: Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), &claims, key).unwrap()
}

fn hs256(claims: Value) -> String {
    sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(TEST_JWT_SECRET.as_bytes()),
        claims,
    )
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A 401 problem with the Bearer challenge; returns the body.
async fn unauthorized(response: Response) -> Value {
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_string());
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(challenge.as_deref(), Some("Bearer"), "{body}");
    body
}

#[tokio::test]
async fn a_valid_token_identifies_the_caller() {
    let app = spawn_app().await;
    let response = app
        .get_as("/test/whoami", "messages:send instances:read:*")
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"subject": "test-user", "scopes": ["messages:send", "instances:read:*"]})
    );
}

#[tokio::test]
async fn missing_or_unusable_credentials_are_401_invalid_token() {
    let app = spawn_app().await;
    let body = unauthorized(app.get("/test/whoami").await).await;
    assert_eq!(body["error_code"], "invalid_token");

    let malformed = [
        "Basic dXNlcjpwYXNz".to_string(),
        "Bearer".to_string(),
        "Bearer not-a-jwt".to_string(),
        "Bearer a.b.c".to_string(),
        format!("Token {}", app.token("admin")),
        // Signed with another secret.
        format!("Bearer {}", mint_token("another-secret", "mallory", "admin", Duration::from_secs(600))),
        // No exp.
        format!("Bearer {}", hs256(json!({"sub": "a", "scope": "admin"}))),
        // No sub.
        format!("Bearer {}", hs256(json!({"exp": now() + 600, "scope": "admin"}))),
        // alg none.
        "Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhIiwic2NvcGUiOiJhZG1pbiIsImV4cCI6OTk5OTk5OTk5OX0."
            .to_string(),
    ];
    for value in malformed {
        let body = unauthorized(app.get_with_authorization("/test/whoami", &value).await).await;
        assert_eq!(body["error_code"], "invalid_token", "{value}: {body}");
    }
}

#[tokio::test]
async fn an_expired_token_is_401_token_expired() {
    let app = spawn_app().await;
    let expired = hs256(json!({"sub": "a", "scope": "admin", "exp": now() - 3600}));
    let body = unauthorized(
        app.get_with_authorization("/test/whoami", &format!("Bearer {expired}"))
            .await,
    )
    .await;
    assert_eq!(body["error_code"], "token_expired");
}

#[tokio::test]
async fn issuer_and_audience_are_checked_when_configured() {
    let app = spawn_app_with(|s| {
        s.jwt.issuer = Some("https://idp.test".into());
        s.jwt.audience = Some("workflow-backend".into());
    })
    .await;
    // `token` carries the configured iss and aud.
    assert_eq!(
        app.get_as("/test/whoami", "admin").await.status(),
        StatusCode::OK
    );

    let exp = now() + 600;
    let cases = [
        ("no iss, no aud", json!({"sub": "a", "exp": exp})),
        (
            "no aud",
            json!({"sub": "a", "exp": exp, "iss": "https://idp.test"}),
        ),
        (
            "no iss",
            json!({"sub": "a", "exp": exp, "aud": "workflow-backend"}),
        ),
        (
            "wrong iss",
            json!({"sub": "a", "exp": exp, "iss": "https://evil.test", "aud": "workflow-backend"}),
        ),
        (
            "wrong aud",
            json!({"sub": "a", "exp": exp, "iss": "https://idp.test", "aud": "other"}),
        ),
    ];
    for (case, claims) in cases {
        let response = app
            .get_with_authorization("/test/whoami", &format!("Bearer {}", hs256(claims)))
            .await;
        let body = unauthorized(response).await;
        assert_eq!(body["error_code"], "invalid_token", "{case}: {body}");
    }
}

#[tokio::test]
async fn a_token_without_the_scope_is_403_not_authorized() {
    let app = spawn_app().await;
    let needed = "/test/require?scope=instances:create:finance/invoices";
    let response = app.get_as(needed, "messages:send instances:read:*").await;
    assert!(response.headers().get(WWW_AUTHENTICATE).is_none());
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error_code"], "not_authorized");
    assert_eq!(body["required_scope"], "instances:create:finance/invoices");
    assert!(body["detail"]
        .as_str()
        .unwrap()
        .contains("instances:create:finance/invoices"));

    for granted in [
        "admin",
        "instances:create:*",
        "instances:create:finance/*",
        "instances:create",
    ] {
        let response = app.get_as(needed, granted).await;
        assert_eq!(response.status(), StatusCode::OK, "granted {granted}");
    }
    for granted in ["instances:create:hr/*", "instances:read:*", "callback"] {
        let response = app.get_as(needed, granted).await;
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "granted {granted}"
        );
    }
}

#[tokio::test]
async fn rs256_and_es256_public_keys_verify_tokens() {
    for (alg, private, public) in [
        (Algorithm::RS256, "rs256-private.pem", "rs256-public.pem"),
        (Algorithm::ES256, "es256-private.pem", "es256-public.pem"),
    ] {
        let app = spawn_app_with(|s| {
            s.jwt.secret = None;
            s.jwt.public_key_file = Some(fixture(public));
        })
        .await;
        let pem = std::fs::read(fixture(private)).unwrap();
        let key = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem).unwrap(),
            _ => EncodingKey::from_ec_pem(&pem).unwrap(),
        };
        let token = sign(
            alg,
            &key,
            json!({"sub": "svc", "scope": "admin", "exp": now() + 600}),
        );
        let response = app
            .get_with_authorization("/test/whoami", &format!("Bearer {token}"))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{alg:?}");
        assert_eq!(response.json::<Value>().await.unwrap()["subject"], "svc");

        // Without a configured secret, HS256 tokens are refused (no algorithm confusion).
        let hs = mint_token(TEST_JWT_SECRET, "a", "admin", Duration::from_secs(600));
        let body = unauthorized(
            app.get_with_authorization("/test/whoami", &format!("Bearer {hs}"))
                .await,
        )
        .await;
        assert_eq!(body["error_code"], "invalid_token");

        // Expired tokens signed with the key are token_expired.
        let expired = sign(alg, &key, json!({"sub": "svc", "exp": now() - 3600}));
        let body = unauthorized(
            app.get_with_authorization("/test/whoami", &format!("Bearer {expired}"))
                .await,
        )
        .await;
        assert_eq!(body["error_code"], "token_expired");
    }
}
