//! Process models: upload a BPMN file, list, show.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use super::messages::ListAnswer;
use crate::services;
use crate::startup::AppState;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

/// Create or replace one BPMN file of a process model (the model is created if needed).
///
/// The whole model is validated: a file that is not well-formed BPMN, an element the engine
/// cannot run, a broken reference or an expression with a syntax error is refused with the
/// file, the element id and the reason.
#[utoipa::path(
    put,
    path = "/v1.0/process-models/{modified_process_model_identifier}/files/{file_name}",
    tag = "process models",
    params(
        ("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model` (the model's path with `/` written `:`)"),
        ("file_name" = String, Path, max_length = 100, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\\.(bpmn|dmn)$", description = "NAME.bpmn, or NAME.dmn for DMN decision tables"),
    ),
    request_body(content = String, description = "BPMN 2.0 XML", content_type = "application/xml"),
    responses(
        (status = 201, description = "Model created", body = Object),
        (status = 200, description = "Model updated", body = Object),
        (status = 400, description = "`invalid_process_model` (with `file_name`, `element_id`, `reason`; also a NUL character in the file), `message_start_conflict`, `process_id_conflict` (with `process_id` and the `process_model_identifier` that defines it), `invalid_file_name`, `invalid_process_model_identifier`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn put_file(
    principal: Principal,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    principal.require("models:write")?;
    let (modified, file_name) = path.into_inner();
    let identifier = services::models::identifier_from_url(&modified)?;
    let content = std::str::from_utf8(&body).map_err(|_| {
        ApiError::bad_request("invalid_process_model", "the file is not UTF-8 text")
    })?;
    let (created, model) =
        services::models::put_file(&state.pool, &state.models, &identifier, &file_name, content)
            .await?;
    Ok(if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    }
    .json(model))
}

/// A page of a plain list (models, secrets).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 (default) to the page that starts at row 100,000 (100001 with `per_page=1`, 201
    /// with `per_page=500`)
    #[param(minimum = 1, maximum = 100001)]
    pub(super) page: Option<i64>,
    /// 1 to 500 (default 10)
    #[param(minimum = 1, maximum = 500)]
    pub(super) per_page: Option<i64>,
}

/// List process models.
#[utoipa::path(
    get,
    path = "/v1.0/process-models",
    tag = "process models",
    params(PageQuery),
    responses(
        (status = 200, description = "Process models", body = ListAnswer),
        (status = 400, description = "`invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_models(
    principal: Principal,
    state: web::Data<AppState>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let page = services::Page::new(query.page, query.per_page)?;
    Ok(HttpResponse::Ok().json(services::models::list(&state.pool, page).await?))
}

/// Show a process model: files, processes, start events, the messages it starts with and
/// waits for, its `current_version` and the `versions_in_use` by live instances.
#[utoipa::path(
    get,
    path = "/v1.0/process-models/{modified_process_model_identifier}",
    tag = "process models",
    params(("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`")),
    responses(
        (status = 200, description = "The process model", body = Object),
        (status = 400, description = "`invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_model(
    principal: Principal,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let identifier = services::models::identifier_from_url(&path)?;
    Ok(HttpResponse::Ok().json(services::models::show(&state.pool, &identifier).await?))
}
