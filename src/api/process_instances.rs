//! Process instances: start, show, list; completing a user or manual task.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use super::messages::{InstanceAnswer, ListAnswer};
use crate::services;
use crate::startup::AppState;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::IntoParams;
use uuid::Uuid;

/// Start an instance of the model's primary process and run it to its wait states.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{modified_process_model_identifier}",
    tag = "process instances",
    params(("modified_process_model_identifier" = String, Path, description = "`group:sub:model`")),
    request_body(content = Option<Object>, description = "Optional initial task data (a JSON object)", content_type = "application/json"),
    responses(
        (status = 201, description = "Started; the instance after it ran on", body = InstanceAnswer),
        (status = 400, description = "`invalid_payload`, `invalid_json`, `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:create:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn start_instance(
    principal: Principal,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let model = services::models::identifier_from_url(&path)?;
    principal.require(&format!("instances:create:{model}"))?;
    let data = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(ApiError::bad_request(
                    "invalid_payload",
                    "the initial data must be a JSON object",
                ))
            }
            Err(e) => {
                return Err(ApiError::bad_request(
                    "invalid_json",
                    format!("the body is not JSON: {e}"),
                ))
            }
        }
    };
    let answer = services::instances::start(&state.pool, &state.models, &model, &data).await?;
    Ok(HttpResponse::Created().json(answer))
}

/// Show an instance: status, data, every task (guid, element, type, state) and its error.
#[utoipa::path(
    get,
    path = "/v1.0/process-instances/{id}",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    responses(
        (status = 200, description = "The instance", body = Object),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_instance(
    principal: Principal,
    state: web::Data<AppState>,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    let instance = services::instances::show(&state.pool, id.into_inner()).await?;
    let model = instance["process_model_identifier"]
        .as_str()
        .unwrap_or_default();
    principal.require(&format!("instances:read:{model}"))?;
    Ok(HttpResponse::Ok().json(instance))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InstanceListQuery {
    /// `group/sub/model` or `group:sub:model`
    process_model_identifier: Option<String>,
    /// `running`, `waiting`, `user_input_required`, `complete`, `error`, `suspended`, `terminated`
    status: Option<String>,
    page: Option<i64>,
    per_page: Option<i64>,
}

/// List instances, newest first.
#[utoipa::path(
    get,
    path = "/v1.0/process-instances",
    tag = "process instances",
    params(InstanceListQuery),
    responses(
        (status = 200, description = "Instances", body = ListAnswer),
        (status = 400, description = "`invalid_query`, `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:<model>` (or `instances:read:*` without a model filter)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_instances(
    principal: Principal,
    state: web::Data<AppState>,
    query: web::Query<InstanceListQuery>,
) -> Result<HttpResponse, ApiError> {
    let model = match &query.process_model_identifier {
        Some(m) => Some(services::models::identifier_from_url(m)?),
        None => None,
    };
    principal.require(&format!(
        "instances:read:{}",
        model.as_deref().unwrap_or("*")
    ))?;
    let filter = crate::store::instances::InstanceFilter {
        process_model_identifier: model.as_deref(),
        status: query.status.as_deref(),
    };
    let page = crate::store::Page::new(query.page, query.per_page);
    Ok(HttpResponse::Ok().json(services::instances::list(&state.pool, &filter, page).await?))
}

/// Complete a waiting user or manual task: the body is merged into the task data and the
/// instance runs on.
#[utoipa::path(
    put,
    path = "/v1.0/tasks/{process_instance_id}/{task_guid}",
    tag = "process instances",
    params(
        ("process_instance_id" = i64, Path, description = "Process instance id"),
        ("task_guid" = Uuid, Path, description = "Task guid"),
    ),
    request_body(content = Object, description = "Data to merge into the task data", content_type = "application/json"),
    responses(
        (status = 200, description = "Completed; the instance after it ran on", body = InstanceAnswer),
        (status = 400, description = "`not_waiting`, `task_not_found`, `process_instance_cannot_be_found`, `invalid_payload`, `invalid_path`, `invalid_json`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn complete_task(
    principal: Principal,
    state: web::Data<AppState>,
    path: web::Path<(i64, Uuid)>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let (instance_id, task_guid) = path.into_inner();
    let Value::Object(data) = body.into_inner() else {
        return Err(ApiError::bad_request(
            "invalid_payload",
            "the task data must be a JSON object",
        ));
    };
    let model = services::instances::model_of(&state.pool, instance_id).await?;
    principal.require(&format!("instances:update:{model}"))?;
    let answer = services::instances::complete_task(
        &state.pool,
        &state.models,
        instance_id,
        task_guid,
        &data,
    )
    .await?;
    Ok(HttpResponse::Ok().json(answer))
}
