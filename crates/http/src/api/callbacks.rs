//! PUT /v1.0/tasks/{process_instance_id}/{task_guid}/callback: a worker completes or fails
//! the service task it was given (connector proxy protocol, asynchronous completion).

use super::auth::Principal;
use super::error::{ApiError, Problem};
use crate::services::ErrorCode;

use crate::connector;
use crate::services::instances::{InstanceId, TaskGuid};
use crate::services::service_tasks::{CallbackDone, ConnectorLogLine};
use crate::services::{self, service_tasks};
use crate::App;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// What a callback did: `completed` (the task completed with the result), `error_handled` (it
/// failed and a boundary event caught the error), `retry_scheduled` (a transient failure: the
/// call is made again at `retry_at`).
#[derive(Serialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CallbackStatus {
    Completed,
    ErrorHandled,
    RetryScheduled,
}

/// The answer to a callback. A scheduled retry also carries `task_guid`, `retry_at`,
/// `retries_attempted`, `retries_remaining` and `max_retries`.
#[derive(Serialize, ToSchema)]
pub struct CallbackAnswer {
    /// Always true (a refusal is a problem answer).
    ok: bool,
    status: CallbackStatus,
    process_instance_id: i64,
    process_model_identifier: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    task_guid: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retries_attempted: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retries_remaining: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_retries: Option<u32>,
}

impl From<service_tasks::CallbackAnswer> for CallbackAnswer {
    fn from(answer: service_tasks::CallbackAnswer) -> CallbackAnswer {
        let mut wire = CallbackAnswer {
            ok: true,
            status: CallbackStatus::Completed,
            process_instance_id: answer.process_instance_id,
            process_model_identifier: answer.process_model_identifier.to_string(),
            task_guid: None,
            retry_at: None,
            retries_attempted: None,
            retries_remaining: None,
            max_retries: None,
        };
        match answer.done {
            CallbackDone::Completed => {}
            CallbackDone::ErrorHandled => wire.status = CallbackStatus::ErrorHandled,
            CallbackDone::RetryScheduled(retry) => {
                wire.status = CallbackStatus::RetryScheduled;
                wire.task_guid = Some(answer.task_guid.0);
                wire.retry_at = Some(retry.retry_at);
                wire.retries_attempted = Some(retry.retries_attempted);
                wire.retries_remaining = Some(retry.max_retries as i32 - retry.retries_attempted);
                wire.max_retries = Some(retry.max_retries);
            }
        }
        wire
    }
}

/// One `wf__logs` line.
#[derive(Serialize, ToSchema)]
pub struct ConnectorLogAnswer {
    id: i64,
    /// The service task whose connector sent it.
    #[schema(value_type = String, format = Uuid)]
    task_guid: Uuid,
    line: String,
    created_at: DateTime<Utc>,
}

/// `{results}`: an instance's connector log lines, oldest first.
#[derive(Serialize, ToSchema)]
pub struct ConnectorLogList {
    results: Vec<ConnectorLogAnswer>,
    pagination: super::display::PaginationAnswer,
}

impl From<ConnectorLogLine> for ConnectorLogAnswer {
    fn from(line: ConnectorLogLine) -> ConnectorLogAnswer {
        ConnectorLogAnswer {
            id: line.id,
            task_guid: line.task_guid.0,
            line: line.line,
            created_at: line.created_at,
        }
    }
}

/// Complete or fail a service task that waits for its connector's callback.
///
/// The caller needs `instances:update:<model>` for the instance's model, or the task's own
/// token (scope `callback:<process_instance_id>/<task_guid>`, sent to the proxy as
/// `wf__callback_token`). Body: the version 2 envelope; `command_response.body` becomes the
/// task's result variable, a structured `error` fails the task (retry, error boundary event,
/// or instance error).
///
/// As the connector-proxy contract says, an unknown instance or task answers 400 and a caller
/// without access to the instance 401 or 403: a caller who may not update the instance gets
/// 403, also for an instance that does not exist when its scopes are limited to some models
/// (so that it learns nothing of other models' instances); a caller who may update it, or
/// every instance (`instances:update:*`), gets 400 `process_instance_cannot_be_found`.
#[utoipa::path(
    put,
    path = "/v1.0/tasks/{process_instance_id}/{task_guid}/callback",
    tag = "service tasks",
    params(
        ("process_instance_id" = i64, Path, description = "Process instance id"),
        ("task_guid" = String, Path, format = Uuid, description = "Service task guid"),
    ),
    request_body(content = Object, description = "Version 2 envelope: `command_response.body`, or a structured `error`", content_type = "application/json", example = json!({"command_response": {"body": {"approved": true, "score": 814}, "mimetype": "application/json"}, "command_response_version": 2, "error": null, "wf__logs": ["scored by the bureau"]})),
    responses(
        (status = 200, description = "What the callback did", body = CallbackAnswer),
        (status = 400, description = "`process_instance_cannot_be_found` (to a caller who could update it if it existed), `callback_not_found`, `not_waiting_for_callback`, `invalid_callback_body` (also: a NUL character, nesting deeper than 64 levels, a number that cannot be stored), `service_task_error` (the instance is now in error), `invalid_json`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_suspended`: the task still waits; send the callback again after the instance is resumed", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: the caller may not update the instance (nor the task); also for an unknown instance when the caller's scopes are limited to some models", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn callback(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let (instance, guid) = path.into_inner();
    // a guid that is not one cannot name a task's scope: the instance's scope decides alone
    let task_guid = Uuid::parse_str(&guid).ok();
    let id = authorize_callback(&principal, &state, &instance, task_guid).await?;
    let task_guid = task_guid.ok_or_else(|| {
        ApiError::refused(
            ErrorCode::CallbackNotFound,
            format!("'{guid}' is not a task guid"),
        )
    })?;
    let body = body.into_inner();
    services::input::check_json(&body, ErrorCode::InvalidCallbackBody, "the callback body")?;
    let outcome = connector::parse_callback(&body)
        .map_err(|e| ApiError::refused(ErrorCode::InvalidCallbackBody, e))?;
    let callback = service_tasks::Callback {
        id,
        task_guid: TaskGuid(task_guid),
        outcome,
    };
    let answer = service_tasks::callback_grouped(&state.callbacks, callback).await?;
    super::json_answer(StatusCode::OK, CallbackAnswer::from(answer)).await
}

/// The instance a callback names, once the caller may update it: it holds
/// `instances:update:<model>` for the instance's model, or the task's own token.
///
/// The connector-proxy contract decides the refusals on this endpoint: a caller without access
/// to the instance gets 403, an unknown instance or task 400. So a caller who may not update
/// the instance gets 403 `not_authorized`, worded the same whether the instance exists or not
/// when its scopes are limited to some models (it learns nothing of other models' instances);
/// a caller who may update it (or every instance: `instances:update:*`) learns that it does not
/// exist, 400 `process_instance_cannot_be_found`.
async fn authorize_callback(
    principal: &Principal,
    state: &App,
    instance: &str,
    task_guid: Option<Uuid>,
) -> Result<InstanceId, ApiError> {
    let id = instance.parse().map(InstanceId).ok();
    let holds_task_token = id.zip(task_guid).is_some_and(|(id, guid)| {
        principal.allows(&service_tasks::callback_scope(id, TaskGuid(guid)))
    });
    if let (Some(id), true) = (id, holds_task_token) {
        // the task's own token was minted for this instance; one that is gone since is
        // refused by the callback itself, as below
        return Ok(id);
    }
    let model = match id {
        Some(id) => services::instances::model_of(&state.pool, id).await?,
        None => None,
    };
    let may_update = holds_task_token
        || match &model {
            Some(model) => principal.allows(&format!("instances:update:{model}")),
            None => principal.allows_every("instances:update:*"),
        };
    match (id, model) {
        (Some(id), Some(_)) if may_update => Ok(id),
        (_, None) if may_update => Err(service_tasks::instance_cannot_be_found(instance).into()),
        _ => Err(ApiError::forbidden(
            "A callback needs `instances:update:<model>` for the instance's model, or the \
             task's own token (`callback:<process_instance_id>/<task_guid>`).",
        )),
    }
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
    state: web::Data<App>,
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
    state: web::Data<App>,
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
    params(("id" = i64, Path, description = "Process instance id"), ConnectorLogPageQuery),
    responses(
        (status = 200, description = "A page of the instance's connector log lines, oldest first", body = ConnectorLogList),
        (status = 400, description = "`invalid_path`, `invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`: no such instance, or one the caller may not see (it needs `instances:read:<model>`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn connector_logs(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
    query: web::Query<ConnectorLogPageQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let page = services::Page::new(
        query.page,
        Some(query.per_page.unwrap_or(services::Page::MAX_PER_PAGE)),
    )?;
    super::process_instances::authorize(&principal, &state, id, "read", None).await?;
    let (lines, pagination) = service_tasks::connector_logs(&state.pool, id, page).await?;
    Ok(HttpResponse::Ok().json(ConnectorLogList {
        results: lines.into_iter().map(ConnectorLogAnswer::from).collect(),
        pagination: pagination.into(),
    }))
}

/// The page of connector log lines: as other lists, but 500 lines by default (the whole log of
/// most instances, as this endpoint answered before it had pages).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConnectorLogPageQuery {
    /// 1 (default) to the page that starts at row 100,000
    #[param(minimum = 1, maximum = 100001)]
    page: Option<i64>,
    /// 1 to 500 (default 500)
    #[param(minimum = 1, maximum = 500)]
    per_page: Option<i64>,
}
