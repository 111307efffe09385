//! Operators' commands on an instance: suspend, resume, terminate, retry. Each answers the
//! instance as the command left it (`InstanceAnswer`), and needs `instances:update:<model>`.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use super::process_instances::{authorize, optional_json, InstanceAnswer};
use crate::services::instances::InstanceId;
use crate::services::lifecycle::{self, Command};
use crate::services::{input, ErrorCode};
use crate::App;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

/// Suspend an instance: until it is resumed it takes no message, fires no timer and makes no
/// connector call.
///
/// A message for one of its waiting receives follows the normal rules as if the receive were
/// not there: it goes to another waiting instance that matches, else starts the model that
/// starts with it, else is buffered (with `time_to_live_in_seconds`) or refused (400
/// `message_not_accepted`). A signal thrown meanwhile does not reach it (signals are not
/// kept). Completing one of its tasks, or a connector's callback for it, answers 409
/// `process_instance_suspended` (the task still waits: send it again after the resume). A
/// connector call under way when it is suspended is made again after the resume. Suspending
/// a suspended instance changes nothing.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{id}/suspend",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    responses(
        (status = 200, description = "Suspended (or already suspended): the instance", body = InstanceAnswer),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`; `process_model_version_not_found` when the version it ran on was deleted", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_finished`: it is complete, terminated or in error", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn suspend(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
) -> Result<HttpResponse, ApiError> {
    command(principal, state, id.into_inner(), Command::Suspend).await
}

/// Resume a suspended instance. What came due meanwhile happens now: its timers that are due
/// fire, its connector calls that are due are made, and each waiting receive takes a matching
/// message buffered meanwhile.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{id}/resume",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    responses(
        (status = 200, description = "Resumed: the instance (after any buffered message it took)", body = InstanceAnswer),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`; `process_model_version_not_found` when the version it ran on was deleted", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_not_suspended`, `process_instance_finished`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` or `scripts_unavailable` (with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn resume(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
) -> Result<HttpResponse, ApiError> {
    command(principal, state, id.into_inner(), Command::Resume).await
}

/// Terminate an instance: every live task is cancelled with its timers, connector calls and
/// waiting receives, in one transaction; the instance is `terminated`. An instance that is
/// suspended or in error may be terminated; terminating a terminated one changes nothing.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{id}/terminate",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    responses(
        (status = 200, description = "Terminated (or already terminated): the instance", body = InstanceAnswer),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`; `process_model_version_not_found` when the version it ran on was deleted", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_finished`: it is complete", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn terminate(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
) -> Result<HttpResponse, ApiError> {
    command(principal, state, id.into_inner(), Command::Terminate).await
}

/// The body of a retry (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    /// Move the instance to this version of its model (`version_sha`, e.g. the model's
    /// `current_version` after the fix was uploaded) before the failed task runs again, as
    /// `POST .../migrate` would; default: retry on the version it is on.
    pub target_version: Option<String>,
}

/// Retry an instance in error: the task that failed (a script, a connector call after an
/// outage, a gateway without a matching condition...) runs again from its start with the
/// instance's current data, and the instance runs on from there. The waits and calls of its
/// other live tasks, closed when it failed, are opened again (a timer's duration counts from
/// the retry). If the task fails again the instance is back in error with the new cause.
///
/// The task runs as the instance's version of the model has it. When the cause was in the
/// model (a script), upload the fix and retry with `{"target_version": "<the new
/// version_sha>"}`: the instance moves to that version (the same rules as `migrate`, which
/// also moves an instance in error) and the fixed task runs, in one step.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{id}/retry",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    request_body(content = Option<RetryRequest>, description = "Optional `{\"target_version\": \"<version_sha>\"}`", content_type = "application/json"),
    responses(
        (status = 200, description = "Retried: the instance (running on, or in error again)", body = InstanceAnswer),
        (status = 400, description = "`invalid_json`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`; `process_model_version_not_found` when the version it ran on was deleted, or `target_version` is not a version of its model", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_not_in_error`, `nothing_to_retry` (its error came from outside a task), `process_instance_finished`, `migration_not_possible` (`target_version` cannot carry it: with `elements`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` or `scripts_unavailable` (with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn retry(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let request: RetryRequest = match optional_json(&body)? {
        None => RetryRequest::default(),
        Some(value) => serde_json::from_value(value).map_err(|e| {
            ApiError::refused(
                ErrorCode::InvalidJson,
                format!("the body is not a retry: {e}"),
            )
        })?,
    };
    let Some(target) = request.target_version else {
        return command(principal, state, id.into_inner(), Command::Retry).await;
    };
    input::check_text(&target, ErrorCode::InvalidJson, "target_version", 128)?;
    let id = id.into_inner();
    authorize(&principal, &state, id, "update", None).await?;
    let outcome =
        lifecycle::retry_on_version(&state.pool, &state.models, id, &target, &principal.subject)
            .await?;
    Ok(HttpResponse::Ok().json(InstanceAnswer::from(outcome)))
}

async fn command(
    principal: Principal,
    state: web::Data<App>,
    id: InstanceId,
    command: Command,
) -> Result<HttpResponse, ApiError> {
    authorize(&principal, &state, id, "update", None).await?;
    let outcome =
        lifecycle::run(&state.pool, &state.models, id, command, &principal.subject).await?;
    Ok(HttpResponse::Ok().json(InstanceAnswer::from(outcome)))
}
