//! Process models: upload a BPMN file, list, show.

use super::auth::Principal;
use super::display::PaginationAnswer;
use super::error::{ApiError, Problem};
use crate::services::ErrorCode;
use crate::services::{self, models::Model, models::ModelDetail};
use crate::App;
use actix_web::http::header::{
    Charset, ContentDisposition, DispositionParam, DispositionType, ExtendedValue,
};
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// A process model (its current version).
#[derive(Serialize, ToSchema)]
pub struct ModelAnswer {
    /// The identifier (SpiffArena's clients read `id`).
    #[schema(example = "finance/invoices")]
    id: String,
    /// `group/sub/model`.
    #[schema(example = "finance/invoices")]
    identifier: String,
    /// The identifier as URLs write it (`group:sub:model`).
    #[schema(example = "finance:invoices")]
    modified_process_model_identifier: String,
    display_name: String,
    /// The file whose first process is the primary one (`process_model.json`), if set.
    primary_file_name: Option<String>,
    /// The process a plain start starts.
    primary_process_id: String,
    /// What the model holds: `processes` (id, name, file, `is_primary`, `start_events` with
    /// their `kind`: none, message, messages, timer, signal), the messages it starts with,
    /// waits for and sends, and the service task operators it calls.
    #[schema(value_type = Object)]
    summary: Value,
    /// The current version: a hash of the files and the primary process.
    version_sha: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<&Model> for ModelAnswer {
    fn from(model: &Model) -> ModelAnswer {
        ModelAnswer {
            id: model.identifier.to_string(),
            identifier: model.identifier.to_string(),
            modified_process_model_identifier: model.identifier.as_str().replace('/', ":"),
            display_name: model.display_name.clone(),
            primary_file_name: model.primary_file_name.clone(),
            primary_process_id: model.primary_process_id.clone(),
            summary: summary_shown(&model.summary),
            version_sha: model.version_sha.clone(),
            created_at: model.created_at,
            updated_at: model.updated_at,
        }
    }
}

/// The summary without its warnings (a model's detail shows them as `warnings`).
fn summary_shown(summary: &Value) -> Value {
    let mut shown = summary.clone();
    if let Some(fields) = shown.as_object_mut() {
        fields.remove("warnings");
    }
    shown
}

/// A version that live instances still run on.
#[derive(Serialize, ToSchema)]
pub struct VersionAnswer {
    version_sha: String,
    /// Instances of it that are not complete, in error or terminated.
    live_instances: i64,
    created_at: Option<DateTime<Utc>>,
    /// It is the current version.
    current: bool,
}

/// A file of the current version.
#[derive(Serialize, ToSchema)]
pub struct FileAnswer {
    #[schema(example = "order.bpmn")]
    name: String,
    /// SHA-256 of the content, hex.
    sha256: String,
    /// Bytes.
    size: usize,
}

/// A process model with its files and the versions its live instances run on.
#[derive(Serialize, ToSchema)]
pub struct ModelDetailAnswer {
    #[serde(flatten)]
    #[schema(inline)]
    model: ModelAnswer,
    /// `version_sha` again: the version new instances start on.
    current_version: String,
    versions_in_use: Vec<VersionAnswer>,
    files: Vec<FileAnswer>,
    /// What SpiffWorkflow's parser loads and SpiffArena fails on only when the element runs
    /// (a script or expression Python does not compile, a message event without
    /// `messageRef`): the model is accepted, and an instance errs at that element.
    warnings: Vec<ModelWarning>,
}

/// A fault of a model found at upload that fails its element only when it runs.
#[derive(Serialize, ToSchema)]
pub struct ModelWarning {
    #[schema(example = "order (v2).bpmn")]
    file_name: String,
    /// The element, sequence flow or correlation property (null: the file).
    #[schema(example = "compute_total")]
    element_id: Option<String>,
    #[schema(example = "script: SyntaxError: invalid syntax (line 1, column 5)")]
    reason: String,
}

/// The warnings stored in a model's summary (none for a model saved before they were).
fn warnings_of(summary: &Value) -> Vec<ModelWarning> {
    let Some(warnings) = summary["warnings"].as_array() else {
        return vec![];
    };
    warnings
        .iter()
        .map(|w| ModelWarning {
            file_name: w["file_name"].as_str().unwrap_or_default().to_string(),
            element_id: w["element_id"].as_str().map(str::to_string),
            reason: w["reason"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

impl From<ModelDetail> for ModelDetailAnswer {
    fn from(detail: ModelDetail) -> ModelDetailAnswer {
        let current = detail.model.version_sha.clone();
        ModelDetailAnswer {
            warnings: warnings_of(&detail.model.summary),
            model: ModelAnswer::from(&detail.model),
            versions_in_use: detail
                .versions_in_use
                .into_iter()
                .map(|v| VersionAnswer {
                    current: v.version_sha == current,
                    version_sha: v.version_sha,
                    live_instances: v.live_instances,
                    created_at: v.created_at,
                })
                .collect(),
            files: detail
                .files
                .into_iter()
                .map(|f| FileAnswer {
                    name: f.name,
                    sha256: f.sha256,
                    size: f.size,
                })
                .collect(),
            current_version: current,
        }
    }
}

/// `{results, pagination}`: a page of the models, by identifier.
#[derive(Serialize, ToSchema)]
pub struct ModelList {
    results: Vec<ModelAnswer>,
    pagination: PaginationAnswer,
}

/// Create or replace one BPMN file of a process model (the model is created if needed).
///
/// The whole model is validated: a file that is not well-formed BPMN, an element the engine
/// cannot run or a broken reference is refused with the file, the element id and the reason.
/// What SpiffWorkflow's parser loads and SpiffArena fails on only when the element runs (a
/// script or expression with a syntax error, a message event without `messageRef`) is
/// accepted and listed in `warnings`; an instance errs at that element.
#[utoipa::path(
    put,
    path = "/v1.0/process-models/{modified_process_model_identifier}/files/{file_name}",
    tag = "process models",
    params(
        ("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model` (the model's path with `/` written `:`)"),
        ("file_name" = String, Path, max_length = 255, pattern = "^[^/\\\\\\x00-\\x1f\\x7f]+\\.(bpmn|dmn|json)$", description = "NAME.bpmn, NAME.dmn (DMN decision tables) or NAME.json (kept with the model, not run), percent-encoded: any name without `/`, `\\`, `..` or control characters, at most 255 bytes (`Sub process.bpmn` is `Sub%20process.bpmn`)"),
    ),
    request_body(content = String, description = "BPMN 2.0 XML (or DMN for a `.dmn` file)", content_type = "application/xml", example = json!(super::answer_examples::ORDERS_BPMN)),
    responses(
        (status = 201, description = "Model created", body = ModelDetailAnswer),
        (status = 200, description = "Model updated", body = ModelDetailAnswer),
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
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    principal.require("models:write")?;
    let (modified, file_name) = path.into_inner();
    let identifier = services::models::identifier_from_url(&modified)?;
    let content = std::str::from_utf8(&body).map_err(|_| {
        ApiError::refused(ErrorCode::InvalidProcessModel, "the file is not UTF-8 text")
    })?;
    let (created, model) =
        services::models::put_file(&state.pool, &state.models, &identifier, &file_name, content)
            .await?;
    Ok(if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    }
    .json(ModelDetailAnswer::from(model)))
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
        (status = 200, description = "Process models", body = ModelList),
        (status = 400, description = "`invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_models(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let page = services::Page::new(query.page, query.per_page)?;
    let page = services::models::list(&state.pool, page).await?;
    Ok(HttpResponse::Ok().json(ModelList {
        results: page.results.iter().map(ModelAnswer::from).collect(),
        pagination: page.pagination.into(),
    }))
}

/// Show a process model: files, processes, start events, the messages it starts with and
/// waits for, its `current_version` and the `versions_in_use` by live instances.
#[utoipa::path(
    get,
    path = "/v1.0/process-models/{modified_process_model_identifier}",
    tag = "process models",
    params(("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`")),
    responses(
        (status = 200, description = "The process model", body = ModelDetailAnswer),
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
    state: web::Data<App>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let identifier = services::models::identifier_from_url(&path)?;
    let detail = services::models::show(&state.pool, &identifier).await?;
    Ok(HttpResponse::Ok().json(ModelDetailAnswer::from(detail)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FileQuery {
    /// A version (`version_sha`) of the model; default its current version
    #[param(max_length = 128, pattern = "^[0-9a-f]{1,128}$")]
    version: Option<String>,
}

/// Download one file of a process model: of its current version, or of `?version=` (every
/// version an instance ran on is kept, so an instance's diagram can be drawn as it ran).
#[utoipa::path(
    get,
    path = "/v1.0/process-models/{modified_process_model_identifier}/files/{file_name}",
    tag = "process models",
    params(
        ("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`"),
        ("file_name" = String, Path, max_length = 255, pattern = "^[^/\\\\\\x00-\\x1f\\x7f]+\\.(bpmn|dmn|json)$", description = "NAME.bpmn, NAME.dmn (DMN decision tables) or NAME.json (kept with the model, not run), percent-encoded: any name without `/`, `\\`, `..` or control characters, at most 255 bytes (`Sub process.bpmn` is `Sub%20process.bpmn`)"),
        FileQuery,
    ),
    responses(
        (status = 200, description = "The file (BPMN or DMN XML; a `.json` file as application/json), as an attachment", content_type = "application/xml", body = String),
        (status = 400, description = "`invalid_process_model_identifier`, `invalid_file_name`, `invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`, `process_model_version_not_found`, `process_model_file_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get_file(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    query: web::Query<FileQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let (modified, file_name) = path.into_inner();
    let identifier = services::models::identifier_from_url(&modified)?;
    let version = super::filter(&query.version);
    if let Some(version) = version {
        if version.len() > 128 || !version.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ApiError::refused(
                ErrorCode::InvalidQuery,
                "version: a version_sha (hexadecimal)",
            ));
        }
    }
    let content = services::models::file(&state.pool, &identifier, &file_name, version).await?;
    let content_type = if file_name.ends_with(".json") {
        "application/json"
    } else {
        "application/xml; charset=utf-8"
    };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(attachment(&file_name))
        .body(content))
}

/// `Content-Disposition: attachment` with the file's name: quoted (quotes escaped); a name
/// that is not ASCII as UTF-8 too (RFC 6266 `filename*`), its quoted form with `_` for what
/// is not ASCII.
fn attachment(file_name: &str) -> ContentDisposition {
    let ascii: String = file_name
        .chars()
        .map(|c| if c.is_ascii() { c } else { '_' })
        .collect();
    let mut parameters = vec![DispositionParam::Filename(ascii)];
    if !file_name.is_ascii() {
        parameters.push(DispositionParam::FilenameExt(ExtendedValue {
            charset: Charset::Ext("UTF-8".to_string()),
            language_tag: None,
            value: file_name.as_bytes().to_vec(),
        }));
    }
    ContentDisposition {
        disposition: DispositionType::Attachment,
        parameters,
    }
}

/// Delete a process model with its files and versions. Refused with 409
/// `process_model_in_use` (with `live_instances`) while instances of it are not complete or
/// terminated (one in error may still be retried, a suspended one resumed).
#[utoipa::path(
    delete,
    path = "/v1.0/process-models/{modified_process_model_identifier}",
    tag = "process models",
    params(("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_model_in_use` (with `live_instances`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn delete_model(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    principal.require("models:write")?;
    let identifier = services::models::identifier_from_url(&path)?;
    services::models::delete(&state.pool, &identifier).await?;
    Ok(HttpResponse::NoContent().finish())
}
