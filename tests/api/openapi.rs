//! The OpenAPI document (committed, served, complete) and the Swagger UI.

use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::spawn_app;
use workflow_backend::api::error::status_of;
use workflow_backend::api::openapi_document;
use workflow_backend::services::ErrorCode;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");

#[test]
fn the_committed_document_matches_the_code() {
    let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
    assert!(
        committed == openapi_document(),
        "openapi/openapi.json differs from the code's OpenAPI document; regenerate it with \
         `cargo run -- openapi > openapi/openapi.json` and commit it"
    );
}

#[test]
fn the_document_describes_the_service() {
    let doc: Value = serde_json::from_str(&openapi_document()).unwrap();
    assert_eq!(doc["info"]["title"], "workflow-backend");
    assert!(!doc["info"]["description"].as_str().unwrap().is_empty());
    assert_eq!(doc["info"]["license"]["name"], "MIT");
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    let problem = &doc["components"]["schemas"]["Problem"]["properties"];
    for member in ["type", "title", "status", "detail", "error_code", "message"] {
        assert!(problem.get(member).is_some(), "Problem lacks {member}");
    }
    for path in [
        "/v1.0/status",
        "/v1.0/health/ready",
        "/v1.0/openapi.json",
        "/metrics",
    ] {
        assert!(
            doc["paths"][path]["get"].is_object(),
            "{path} is not documented"
        );
    }
    let unavailable = &doc["paths"]["/v1.0/health/ready"]["get"]["responses"]["503"];
    assert!(
        unavailable["content"]["application/problem+json"].is_object(),
        "{unavailable}"
    );
}

#[tokio::test]
async fn the_document_is_served() {
    let app = spawn_app().await;
    let response = app.get("/v1.0/openapi.json").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    assert_eq!(response.text().await.unwrap(), openapi_document());
}

#[tokio::test]
async fn the_ui_and_its_assets_are_served() {
    let app = spawn_app().await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = no_redirects.get(app.url("/v1.0/ui")).send().await.unwrap();
    assert!(response.status().is_redirection(), "{}", response.status());
    assert_eq!(response.headers()[LOCATION], "/v1.0/ui/");

    let page = app.get("/v1.0/ui").await; // follows the redirect
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui-bundle.js"), "{html}");

    let js = app.get("/v1.0/ui/swagger-ui-bundle.js").await;
    assert_eq!(js.status(), StatusCode::OK);
    let content_type = js.headers()[CONTENT_TYPE].to_str().unwrap().to_string();
    assert!(content_type.contains("javascript"), "{content_type}");
    assert!(js.bytes().await.unwrap().len() > 100_000);

    let initializer = app
        .get("/v1.0/ui/swagger-initializer.js")
        .await
        .text()
        .await
        .unwrap();
    assert!(initializer.contains("/v1.0/openapi.json"), "{initializer}");
}

/// Each error response shows the problem it answers: an example with that response's status,
/// its reason phrase, and an error code the description documents.
#[test]
fn every_error_response_has_an_example_with_its_own_status_and_a_documented_code() {
    let doc: Value = serde_json::from_str(&openapi_document()).unwrap();
    let mut checked = 0;
    let mut documented = std::collections::HashSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                let Some(media) = response["content"].get("application/problem+json") else {
                    continue;
                };
                let at = format!("{method} {path} {status}");
                let description = response["description"].as_str().unwrap();
                let codes = workflow_backend::api::openapi_examples::codes_in(description);
                assert!(
                    !codes.is_empty(),
                    "{at}: the description names no error code"
                );
                // the registry says which status each code is answered with
                for code in &codes {
                    let code = ErrorCode::parse(code).unwrap();
                    assert_eq!(
                        status_of(code).as_str(),
                        status,
                        "{at}: {} is answered with another status",
                        code.as_str()
                    );
                    documented.insert(code);
                }
                let example = &media["example"];
                assert_eq!(example["status"].to_string(), *status, "{at}: {example}");
                let code = example["error_code"].as_str().unwrap_or_default();
                assert!(
                    codes.iter().any(|c| c == code),
                    "{at}: {code} is not in {codes:?}"
                );
                let reason = StatusCode::from_u16(status.parse().unwrap())
                    .unwrap()
                    .canonical_reason()
                    .unwrap();
                assert_eq!(example["title"], reason, "{at}");
                assert!(!example["detail"].as_str().unwrap().is_empty(), "{at}");
                assert_eq!(example["detail"], example["message"], "{at}");
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} error responses");
    // and every code the service answers with is documented somewhere
    let undocumented: Vec<&str> = ErrorCode::ALL
        .iter()
        .filter(|code| !documented.contains(code) && !NOT_IN_ANSWERS.contains(code))
        .map(|code| code.as_str())
        .collect();
    assert!(
        undocumented.is_empty(),
        "codes no response documents: {undocumented:?}"
    );
}

/// Codes of the registry that are not documented per operation: an instance error's code,
/// and the answers any path may give (unknown path, wrong method, a failure of ours).
const NOT_IN_ANSWERS: &[ErrorCode] = &[
    ErrorCode::InvalidConnectorResponse,
    ErrorCode::NotFound,
    ErrorCode::MethodNotAllowed,
    ErrorCode::InternalServerError,
];

/// Every JSON answer has a schema that says what it holds (its properties, or its items).
#[test]
fn every_json_answer_has_a_schema_with_properties() {
    let doc: Value = serde_json::from_str(&openapi_document()).unwrap();
    let schemas = doc["components"]["schemas"].clone();
    let resolve = |schema: &Value| {
        let mut schema = schema.clone();
        while let Some(reference) = schema["$ref"].as_str().map(str::to_string) {
            schema = schemas[reference.rsplit('/').next().unwrap()].clone();
        }
        schema
    };
    let mut untyped = vec![];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                let Some(media) = response["content"].get("application/json") else {
                    continue;
                };
                if path == "/v1.0/openapi.json" {
                    continue; // the document itself
                }
                let schema = resolve(&media["schema"]);
                let parts_described = schema["allOf"].as_array().is_some_and(|parts| {
                    parts
                        .iter()
                        .all(|part| resolve(part)["properties"].is_object())
                });
                let described = schema["properties"].is_object()
                    || schema["items"].is_object()
                    || schema["oneOf"].is_array()
                    || parts_described;
                if !described {
                    untyped.push(format!("{method} {path} {status}"));
                }
            }
        }
    }
    assert!(untyped.is_empty(), "answers without a schema: {untyped:?}");
}

/// OpenAPI takes two templates that differ only in their parameters' names for one path: each
/// path of the document is a path of its own.
#[test]
fn no_two_paths_differ_only_in_parameter_names() {
    let doc: Value = serde_json::from_str(&openapi_document()).unwrap();
    let mut shapes = std::collections::HashMap::new();
    for path in doc["paths"].as_object().unwrap().keys() {
        let shape: String = path
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "{}"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        if let Some(other) = shapes.insert(shape, path.clone()) {
            panic!("{path} and {other} are the same path");
        }
    }
}
