//! HTTP layer: routes, the OpenAPI document, error answers and authentication.
//!
//! Routes are registered one resource (or one `web::scope`) per family, never a catch-all
//! `web::scope("/v1.0")`: such a scope would swallow `/v1.0/ui/` and `/v1.0/openapi.json`.

pub mod answer_examples;
pub mod api_keys;
pub mod auth;
pub mod bulk;
pub mod callbacks;
pub mod console;
pub mod data_stores;
pub mod decisions;
pub mod display;
pub mod error;
pub mod etag;
pub mod guard;
pub mod health;
pub mod lifecycle;
pub mod messages;
pub mod openapi_examples;
pub mod process_instances;
pub mod process_models;
pub mod search;
pub mod secrets;
pub mod signals;
pub mod stats;

use std::sync::OnceLock;

use actix_web::{web, HttpResponse};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::api::error::{ApiError, Problem};

pub const OPENAPI_PATH: &str = "/v1.0/openapi.json";

/// The OpenAPI document of every endpoint (`openapi/openapi.json` is this, pretty-printed).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "workflow-backend",
        description = "The engine side of a BPMN workflow system: messages, correlation, service \
                       tasks and connector proxy callbacks. Errors are `application/problem+json` \
                       (`Problem`); authenticated endpoints take a bearer JWT (`bearer`).",
        license(name = "MIT", identifier = "MIT")
    ),
    paths(
        health::status, health::ready, health::metrics, openapi_json,
        messages::send_message, messages::list_messages, messages::show_message,
        process_models::put_file, process_models::get_file, process_models::list_models,
        process_models::show_model, process_models::delete_model,
        process_instances::start_instance, process_instances::show_instance,
        process_instances::list_instances, process_instances::complete_task,
        process_instances::migrate_instance, bulk::bulk,
        lifecycle::suspend, lifecycle::resume, lifecycle::terminate, lifecycle::retry,
        callbacks::callback, callbacks::service_tasks, callbacks::authentications,
        callbacks::connector_logs,
        secrets::put_secret, secrets::list_secrets, secrets::delete_secret,
        api_keys::create_api_key, api_keys::list_api_keys, api_keys::revoke_api_key,
        signals::send_signal,
        decisions::show_decision, decisions::evaluate_decision,
        data_stores::list_data_stores, data_stores::show_data_store,
        data_stores::put_data_store, data_stores::delete_data_store,
        stats::overview, stats::message_chart, stats::element_counts,
    ),
    components(schemas(
        Problem, process_instances::MigrateRequest, lifecycle::RetryRequest, secrets::SecretValueBody,
        secrets::SecretAnswer, secrets::SecretList, signals::SignalAnswer,
        decisions::DecisionAnswer, decisions::DecisionInput, decisions::DecisionOutput,
        decisions::DecisionRule, decisions::EvaluateRequest, decisions::EvaluationAnswer,
        decisions::RuleRef, data_stores::DataStoreAnswer, data_stores::DataStoreList,
        data_stores::DataStoreDetail, data_stores::DataStoreBody, data_stores::KkvEntry,
        data_stores::TypeaheadItem, api_keys::ApiKeyAnswer, api_keys::CreatedApiKey,
        api_keys::ApiKeyList, api_keys::NewApiKeyBody,
    )),
    modifiers(&SecuritySchemes),
    tags(
        (name = "health", description = "Liveness, readiness and metrics"),
        (name = "meta", description = "This API's description"),
        (name = "messages", description = "BPMN messages: start, correlate, buffer, audit"),
        (name = "process models", description = "BPMN files and the models they make"),
        (name = "decisions", description = "DMN decision tables of the models: show, try on data"),
        (name = "data stores", description = "SpiffArena's data stores (JSON, JSON file, KKV, typeahead) that models read and write"),
        (name = "process instances", description = "Running processes and their user tasks"),
        (name = "service tasks", description = "Connector proxies and their callbacks"),
        (name = "signals", description = "BPMN signals sent from outside"),
        (name = "stats", description = "The console's overview: counts per model and status, errors by element, messages per minute, instances per diagram element"),
        (name = "secrets", description = "Values scripts read with `get_secret(name)`; never answered"),
        (name = "api keys", description = "Keys for machine clients (`Authorization: Bearer wbk_...` or `SpiffWorkflow-Api-Key`)")
    )
)]
pub struct ApiDoc;

/// Adds the `bearer` security scheme (a JWT or an API key in `Authorization: Bearer ...`) and
/// the `apiKey` one (`SpiffWorkflow-Api-Key`). Endpoints that need a token say so with
/// `security(("bearer" = []))` in their `#[utoipa::path]`; [`document_token_alternatives`]
/// adds `apiKey` beside it.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT or API key")
                    .description(Some(
                        "A JWT with `exp`, `sub` and scopes (HS256 with the shared secret, RS256 or \
                         ES256 with the configured public key, or any key of the identity \
                         provider's JWKS: RS256/384/512, PS256/384/512, ES256/384, EdDSA; scopes \
                         from the configured claim, `scope` by default), or an API key \
                         (`wbk_...`, also accepted in the `SpiffWorkflow-Api-Key` header). \
                         Missing or invalid: 401 `invalid_token` (`token_expired` when expired); \
                         valid without the needed scope: 403 `not_authorized`; the identity \
                         provider's keys cannot be fetched: 503 `identity_provider_unavailable`.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "SpiffWorkflow-Api-Key",
                "An API key (`wbk_...`) in the header SpiffArena's clients send; the same key \
                 is also accepted as `Authorization: Bearer wbk_...`. Scopes, 401, 403 and 503 \
                 as for `bearer`.",
            ))),
        );
    }
}

/// The document as served and as committed: pretty JSON with a trailing newline; each error
/// response with its own example (see [`openapi_examples`]), each success with a real answer
/// (see [`answer_examples`]).
pub fn openapi_document() -> String {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serialises");
    document_token_alternatives(&mut doc);
    document_body_limits(&mut doc);
    openapi_examples::add_error_examples(&mut doc);
    answer_examples::add_answer_examples(&mut doc);
    let mut json = serde_json::to_string_pretty(&doc).expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

/// Every operation that takes a token also takes an API key in `SpiffWorkflow-Api-Key` (the
/// `apiKey` scheme), and may answer 503 `identity_provider_unavailable` (the identity
/// provider's keys cannot be fetched to verify a token): said once here for all of them, after
/// whatever else their 503 says, rather than in each `#[utoipa::path]`.
fn document_token_alternatives(doc: &mut serde_json::Value) {
    const WHY: &str = "`identity_provider_unavailable` when the identity provider's keys \
                       cannot be fetched to verify the token (with `Retry-After`)";
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let operations = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let Some(schemes) = operation.get_mut("security").and_then(|s| s.as_array_mut()) else {
            continue;
        };
        let takes_token = schemes.iter().any(|s| s.get("bearer").is_some());
        if takes_token {
            schemes.push(serde_json::json!({"apiKey": []}));
        }
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(|r| r.as_object_mut())
        else {
            continue;
        };
        if !takes_token {
            continue;
        }
        let unavailable = responses.entry("503").or_insert_with(|| {
            serde_json::json!({
                "description": "",
                "content": {"application/problem+json": {
                    "schema": {"$ref": "#/components/schemas/Problem"}
                }}
            })
        });
        let description = unavailable["description"].as_str().unwrap_or_default();
        unavailable["description"] = if description.is_empty() {
            WHY.into()
        } else {
            format!("{description}; or {WHY}").into()
        };
    }
}

/// Every operation that reads a request body may answer 408 `request_timeout` (the body did
/// not arrive within the body-read deadline) and 413 `payload_too_large` (over the body limit):
/// said here for all of them, where their `#[utoipa::path]` does not say it already.
fn document_body_limits(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let operations = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
        .filter(|operation| operation.get("requestBody").is_some());
    for operation in operations {
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(|r| r.as_object_mut())
        else {
            continue;
        };
        for (status, description) in [
            ("408", "`request_timeout`: the body did not arrive in time"),
            ("413", "`payload_too_large`"),
        ] {
            responses.entry(status).or_insert_with(|| {
                serde_json::json!({
                    "description": description,
                    "content": {"application/problem+json": {
                        "schema": {"$ref": "#/components/schemas/Problem"}
                    }}
                })
            });
        }
    }
}

/// This API's OpenAPI document.
#[utoipa::path(
    get,
    path = "/v1.0/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json"))
)]
pub async fn openapi_json() -> HttpResponse {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.get_or_init(openapi_document).as_str())
}

/// A list filter from the query string: an empty value is no filter.
pub fn filter(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// A JSON answer serialised on the blocking pool: a large body (a full payload, an instance's
/// task history) never holds up the async workers that serve every other request.
pub async fn json_off_thread<T: serde::Serialize + Send + 'static>(
    status: actix_web::http::StatusCode,
    value: T,
) -> Result<HttpResponse, ApiError> {
    let body = web::block(move || serde_json::to_vec(&value))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(HttpResponse::build(status)
        .content_type("application/json")
        .body(body))
}

/// The most of an answer serialised on an async worker by [`json_answer`].
pub const INLINE_JSON_BYTES: usize = 64 * 1024;

/// A JSON answer of a size not known beforehand (an instance's data grows with every step; a
/// buffered message holds its whole payload): serialised here while it stays under
/// [`INLINE_JSON_BYTES`], so the common small answer costs no hop to another thread (measured
/// on message answers: the hop cost +0.08 ms of server CPU per message at 16 clients), and
/// serialised on the blocking pool once it is larger, so no more than that is ever done on the
/// async workers.
pub async fn json_answer<T: serde::Serialize + Send + 'static>(
    status: actix_web::http::StatusCode,
    value: T,
) -> Result<HttpResponse, ApiError> {
    let mut body = Vec::with_capacity(1024);
    let capped = Capped {
        body: &mut body,
        cap: INLINE_JSON_BYTES,
    };
    match serde_json::to_writer(capped, &value) {
        Ok(()) => Ok(HttpResponse::build(status)
            .content_type("application/json")
            .body(body)),
        Err(e) if e.is_io() => json_off_thread(status, value).await,
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// A writer that refuses to grow `body` past `cap` bytes.
struct Capped<'a> {
    body: &'a mut Vec<u8>,
    cap: usize,
}

impl std::io::Write for Capped<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.body.len() + data.len() > self.cap {
            return Err(std::io::Error::other("larger than the inline limit"));
        }
        self.body.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Registers every route. `/metrics` is answered by the metrics middleware (see `startup`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    // the two front doors first: the router tries the routes' templates in turn
    cfg.service(
        web::resource("/v1.0/messages/{modified_message_name}")
            .route(web::post().to(messages::send_message))
            // kept: the document shows /v1.0/message-instances/{id}
            .route(web::get().to(messages::show_message)),
    )
    .service(
        web::resource("/v1.0/tasks/{process_instance_id}/{task_guid}/callback")
            .route(web::put().to(callbacks::callback)),
    );
    cfg.service(web::resource("/v1.0/status").route(web::get().to(health::status)))
        .service(web::resource("/v1.0/health/ready").route(web::get().to(health::ready)))
        .service(web::resource("/metrics").route(web::get().to(health::metrics)))
        .service(web::resource(OPENAPI_PATH).route(web::get().to(openapi_json)))
        .service(web::resource("/v1.0/messages").route(web::get().to(messages::list_messages)))
        .service(
            web::resource("/v1.0/message-instances/{message_instance_id}")
                .route(web::get().to(messages::show_message)),
        )
        .service(
            web::resource("/v1.0/process-models").route(web::get().to(process_models::list_models)),
        )
        .service(
            web::resource("/v1.0/process-models/{modified_process_model_identifier}")
                .route(web::get().to(process_models::show_model))
                .route(web::delete().to(process_models::delete_model)),
        )
        .service(
            web::resource(
                "/v1.0/process-models/{modified_process_model_identifier}/element-counts",
            )
            .route(web::get().to(stats::element_counts)),
        )
        .service(web::resource("/v1.0/stats/overview").route(web::get().to(stats::overview)))
        .service(web::resource("/v1.0/stats/messages").route(web::get().to(stats::message_chart)))
        .service(
            web::resource(
                "/v1.0/process-models/{modified_process_model_identifier}/files/{file_name}",
            )
            .route(web::put().to(process_models::put_file))
            .route(web::get().to(process_models::get_file)),
        )
        .service(
            web::resource("/v1.0/process-instances")
                .route(web::get().to(process_instances::list_instances)),
        )
        .service(web::resource("/v1.0/bulk/process-instances").route(web::post().to(bulk::bulk)))
        .service(
            web::resource("/v1.0/process-instances/{id}")
                .route(web::post().to(process_instances::start_instance))
                // kept: the document shows the path with the model
                .route(web::get().to(process_instances::show_instance_by_id)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/migrate")
                .route(web::post().to(process_instances::migrate_instance)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/suspend")
                .route(web::post().to(lifecycle::suspend)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/resume")
                .route(web::post().to(lifecycle::resume)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/terminate")
                .route(web::post().to(lifecycle::terminate)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/retry")
                .route(web::post().to(lifecycle::retry)),
        )
        .service(
            web::resource("/v1.0/process-instances/{id}/connector-logs")
                .route(web::get().to(callbacks::connector_logs)),
        )
        // after the fixed sub-paths above, which this template would also match
        .service(
            web::resource(
                "/v1.0/process-instances/{modified_process_model_identifier}/{process_instance_id}",
            )
            .route(web::get().to(process_instances::show_instance)),
        )
        .service(
            web::resource("/v1.0/tasks/{process_instance_id}/{task_guid}")
                .route(web::put().to(process_instances::complete_task)),
        )
        .service(
            web::resource("/v1.0/service-tasks").route(web::get().to(callbacks::service_tasks)),
        )
        .service(
            web::resource("/v1.0/authentications").route(web::get().to(callbacks::authentications)),
        )
        .service(web::resource("/v1.0/secrets").route(web::get().to(secrets::list_secrets)))
        .service(
            web::resource("/v1.0/api-keys")
                .route(web::get().to(api_keys::list_api_keys))
                .route(web::post().to(api_keys::create_api_key)),
        )
        .service(
            web::resource("/v1.0/api-keys/{name}")
                .route(web::delete().to(api_keys::revoke_api_key)),
        )
        .service(
            web::resource("/v1.0/data-stores").route(web::get().to(data_stores::list_data_stores)),
        )
        .service(
            web::resource("/v1.0/data-stores/{kind}/{identifier}")
                .route(web::get().to(data_stores::show_data_store))
                .route(web::put().to(data_stores::put_data_store))
                .route(web::delete().to(data_stores::delete_data_store)),
        )
        .service(
            web::resource("/v1.0/secrets/{name}")
                .route(web::put().to(secrets::put_secret))
                .route(web::delete().to(secrets::delete_secret)),
        )
        .service(
            web::resource("/v1.0/signals/{signal_name}")
                .route(web::post().to(signals::send_signal)),
        )
        .service(
            web::resource("/v1.0/decisions/{decision_id}")
                .route(web::get().to(decisions::show_decision)),
        )
        .service(
            web::resource("/v1.0/decisions/{decision_id}/evaluate")
                .route(web::post().to(decisions::evaluate_decision)),
        )
        .configure(console::configure)
        .service(web::redirect("/v1.0/ui", "/v1.0/ui/"))
        // the console's headers; no online validator (it would send the document's URL away,
        // and the policy refuses its badge anyway)
        .service(
            web::scope("/v1.0/ui")
                .wrap(console::page_headers())
                .service(
                    SwaggerUi::new("/{_:.*}")
                        .config(Config::from(OPENAPI_PATH).validator_url("none")),
                ),
        );
}

#[cfg(test)]
mod json_answer_tests {
    use super::*;
    use actix_web::body::MessageBody;
    use actix_web::http::StatusCode;

    async fn body_of(value: serde_json::Value) -> (StatusCode, Vec<u8>) {
        let response = json_answer(StatusCode::CREATED, value).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().try_into_bytes().ok().unwrap();
        (status, bytes.to_vec())
    }

    #[actix_web::test]
    async fn small_and_large_answers_are_the_same_json() {
        let small = serde_json::json!({"id": 1, "data": {"a": [1, 2, 3]}});
        let large = serde_json::json!({"id": 2, "data": "x".repeat(INLINE_JSON_BYTES * 2)});
        for value in [small, large] {
            let (status, body) = body_of(value.clone()).await;
            assert_eq!(status, StatusCode::CREATED);
            assert_eq!(body, serde_json::to_vec(&value).unwrap());
        }
    }
}
