//! Every error answer, actix's own included, is a problem (see `helpers::problem`).

use reqwest::header::{ALLOW, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{problem, spawn_app, spawn_app_with};

#[tokio::test]
async fn an_unknown_path_is_a_404_problem() {
    let app = spawn_app().await;
    for path in ["/v1.0/no-such-thing", "/nothing", "/v1.0/status/extra"] {
        let (status, body) = problem(app.get(path).await).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body["error_code"], "not_found");
        assert!(body["detail"].as_str().unwrap().contains(path), "{body}");
    }
}

#[tokio::test]
async fn a_known_path_with_another_method_is_a_405_problem() {
    let app = spawn_app().await;
    for (method, path) in [
        (Method::POST, "/v1.0/status"),
        (Method::DELETE, "/v1.0/health/ready"),
        (Method::PUT, "/v1.0/openapi.json"),
        (Method::GET, "/test/echo"),
    ] {
        let response = app.request(method.clone(), path).send().await.unwrap();
        assert!(
            response.headers().get(ALLOW).is_some(),
            "{method} {path}: no Allow header"
        );
        let (status, body) = problem(response).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert_eq!(body["error_code"], "method_not_allowed");
        assert!(
            body["detail"].as_str().unwrap().contains(method.as_str()),
            "{body}"
        );
    }
}

#[tokio::test]
async fn malformed_json_is_a_400_invalid_json() {
    let app = spawn_app().await;
    let response = app
        .request(Method::POST, "/test/echo")
        .header(CONTENT_TYPE, "application/json")
        .body("{\"a\": ")
        .send()
        .await
        .unwrap();
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "invalid_json");
    // The same route accepts a well-formed body.
    let ok = app.post_json("/test/echo", &json!({"a": 1}), "admin").await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(
        ok.json::<serde_json::Value>().await.unwrap(),
        json!({"a": 1})
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_a_413_problem() {
    let app = spawn_app_with(|s| s.max_body_bytes = 64).await;
    let small = json!({"x": "a".repeat(40)});
    assert_eq!(
        app.post_json("/test/echo", &small, "admin").await.status(),
        StatusCode::OK
    );

    let large = json!({"x": "a".repeat(100)});
    let (status, body) = problem(app.post_json("/test/echo", &large, "admin").await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error_code"], "payload_too_large");
    assert_eq!(body["limit_bytes"], 64);

    // Raw bodies (bytes, text) have the same limit.
    let raw = |len: usize| {
        app.request(Method::POST, "/test/raw")
            .body("a".repeat(len))
            .send()
    };
    assert_eq!(raw(64).await.unwrap().status(), StatusCode::OK);
    let (status, body) = problem(raw(65).await.unwrap()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["error_code"], "payload_too_large");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_415_problem() {
    let app = spawn_app().await;
    for content_type in [Some("text/plain"), Some("application/xml"), None] {
        let mut request = app.request(Method::POST, "/test/echo").body("{}");
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        let (status, body) = problem(request.send().await.unwrap()).await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        assert_eq!(body["error_code"], "unsupported_media_type");
    }
}

#[tokio::test]
async fn a_bad_query_or_path_parameter_is_a_400_problem() {
    let app = spawn_app().await;
    let (status, body) = problem(app.get_as("/test/require", "admin").await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "invalid_query");

    let (status, body) = problem(app.get("/test/items/not-a-number").await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "invalid_path");
    assert_eq!(app.get("/test/items/7").await.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_internal_error_is_a_500_without_its_cause() {
    let app = spawn_app().await;
    let response = app.get("/test/boom").await;
    assert!(response.headers().get(WWW_AUTHENTICATE).is_none());
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body["error_code"], "internal_server_error");
    let text = body.to_string();
    assert!(
        !text.contains("hunter2") && !text.contains("secret-host"),
        "{text}"
    );
}
