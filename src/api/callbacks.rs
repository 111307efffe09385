//! PUT /v1.0/tasks/{process_instance_id}/{task_guid}/callback: a worker completes or fails
//! the service task it was given (connector proxy protocol, asynchronous completion).

use super::auth::Principal;
use super::error::{ApiError, Problem};

use crate::connector;
use crate::services::{self, service_tasks};
use crate::startup::AppState;
use actix_web::{web, HttpResponse};
use serde_json::Value;
use uuid::Uuid;

/// Complete or fail a service task that waits for its connector's callback.
///
/// The caller needs `instances:update:<model>` for the instance's model, or the task's own
/// token (scope `callback:<process_instance_id>/<task_guid>`, sent to the proxy as
/// `wf__callback_token`). Body: the version 2 envelope; `command_response.body` becomes the
/// task's result variable, a structured `error` fails the task (retry, error boundary event,
/// or instance error).
#[utoipa::path(
    put,
    path = "/v1.0/tasks/{process_instance_id}/{task_guid}/callback",
    tag = "service tasks",
    params(
        ("process_instance_id" = i64, Path, description = "Process instance id"),
        ("task_guid" = String, Path, format = Uuid, description = "Service task guid"),
    ),
    request_body(content = Object, description = "Version 2 envelope: `command_response.body`, or a structured `error`", content_type = "application/json"),
    responses(
        (status = 200, description = "`{ok, status: completed | retry_scheduled | error_handled, process_instance_id, process_model_identifier}`; a retry also carries `task_guid`, `retry_at`, `retries_attempted`, `retries_remaining`, `max_retries`", body = Object),
        (status = 400, description = "`invalid_callback_body` (also: a NUL character, nesting deeper than 64 levels, a number that cannot be stored), `callback_not_found`, `not_waiting_for_callback`, `service_task_error` (the instance is now in error), `invalid_json`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: the caller may read the instance but not update it", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`: no such instance, or one the caller may not see", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn callback(
    principal: Principal,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let (instance, guid) = path.into_inner();
    let id: i64 = instance
        .parse()
        .map_err(|_| ApiError::from(services::instances::instance_not_found(&instance)))?;
    // a guid that is not one cannot name a task's scope: the instance's scope decides alone
    let task_guid = Uuid::parse_str(&guid).ok();
    let task_scope = task_guid.map(|g| service_tasks::callback_scope(id, g));
    super::process_instances::authorize(&principal, &state, id, "update", task_scope.as_deref())
        .await?;
    let task_guid = task_guid.ok_or_else(|| {
        ApiError::bad_request("callback_not_found", format!("'{guid}' is not a task guid"))
    })?;
    let body = body.into_inner();
    services::input::check_json(&body, "invalid_callback_body", "the callback body")?;
    let outcome = connector::parse_callback(&body)
        .map_err(|e| ApiError::bad_request("invalid_callback_body", e))?;
    let ctx = state.service_tasks();
    Ok(HttpResponse::Ok().json(service_tasks::callback(&ctx, id, task_guid, &outcome).await?))
}

/// Commands a service task can call: embedded ones first, then the connector proxy's
/// `GET /v1/commands` (an unreachable or failing proxy gives none).
#[utoipa::path(
    get,
    path = "/v1.0/service-tasks",
    tag = "service tasks",
    responses(
        (status = 200, description = "Command descriptors `{id, parameters}`", body = Vec<Object>),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn service_tasks(
    principal: Principal,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let proxy = match &state.connector {
        Some(client) => client.commands().await,
        None => Vec::new(),
    };
    // No embedded connectors exist yet; `merge_commands` is where they would win.
    Ok(HttpResponse::Ok().json(connector::merge_commands(Vec::new(), proxy)))
}

/// Authentication handlers the connector proxy manages (`GET /v1/auths`; none on failure).
#[utoipa::path(
    get,
    path = "/v1.0/authentications",
    tag = "service tasks",
    responses(
        (status = 200, description = "Authentication descriptors", body = Vec<Object>),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn authentications(
    principal: Principal,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let auths = match &state.connector {
        Some(client) => client.auths().await,
        None => Vec::new(),
    };
    Ok(HttpResponse::Ok().json(auths))
}

/// `wf__logs` lines the connector proxy returned for this instance's service tasks.
#[utoipa::path(
    get,
    path = "/v1.0/process-instances/{id}/connector-logs",
    tag = "service tasks",
    params(("id" = i64, Path, description = "Process instance id")),
    responses(
        (status = 200, description = "`{results: [{id, task_guid, line, created_at}]}`", body = Object),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn connector_logs(
    principal: Principal,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    super::process_instances::authorize(&principal, &state, id, "read", None).await?;
    Ok(HttpResponse::Ok().json(service_tasks::connector_logs(&state.pool, id).await?))
}
