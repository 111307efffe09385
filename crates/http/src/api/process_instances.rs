//! Process instances: start, show, list; completing a user or manual task.

use super::auth::Principal;
use super::display;
use super::display::PaginationAnswer;
use super::error::{ApiError, Problem};
use super::search;
use crate::services::instances::states as stored;
use crate::services::instances::InstanceOutcome;
use crate::services::instances::{
    Instance, InstanceDetail, InstanceId, ModelId, StoredTask, TaskGuid,
};
use crate::services::ErrorCode;
use crate::services::{self, input};
use crate::App;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Where an instance stands.
#[derive(Serialize, Deserialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InstanceStatus {
    Running,
    Waiting,
    UserInputRequired,
    Complete,
    Error,
    Suspended,
    Terminated,
}

/// Where a task stands.
#[derive(Serialize, Deserialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStateAnswer {
    Ready,
    Waiting,
    Started,
    Completed,
    Error,
    Cancelled,
}

/// Why an instance is in error: the element, the message, the model's error code (or
/// `script_time_limit`, ...) and the BPMN file.
#[derive(Serialize, Deserialize, ToSchema, Debug, Clone)]
pub struct InstanceErrorAnswer {
    element_id: String,
    message: String,
    error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
}

/// A process instance, as lists show it (no data).
#[derive(Serialize, ToSchema)]
pub struct ProcessInstanceAnswer {
    id: i64,
    #[schema(example = "finance/invoices")]
    process_model_identifier: String,
    /// The model version it runs on.
    process_model_version: String,
    process_id: String,
    status: InstanceStatus,
    error: Option<InstanceErrorAnswer>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<&InstanceOutcome> for ProcessInstanceAnswer {
    fn from(outcome: &InstanceOutcome) -> ProcessInstanceAnswer {
        ProcessInstanceAnswer {
            id: outcome.id.0,
            process_model_identifier: outcome.process_model_identifier.to_string(),
            process_model_version: outcome.model_version.clone(),
            process_id: outcome.process_id.clone(),
            status: outcome.status.into(),
            error: outcome.error.as_ref().map(error_of),
            created_at: outcome.created_at,
            updated_at: outcome.updated_at,
        }
    }
}

impl From<stored::InstanceStatus> for InstanceStatus {
    fn from(status: stored::InstanceStatus) -> InstanceStatus {
        match status {
            stored::InstanceStatus::Running => InstanceStatus::Running,
            stored::InstanceStatus::Waiting => InstanceStatus::Waiting,
            stored::InstanceStatus::UserInputRequired => InstanceStatus::UserInputRequired,
            stored::InstanceStatus::Complete => InstanceStatus::Complete,
            stored::InstanceStatus::Error => InstanceStatus::Error,
            stored::InstanceStatus::Suspended => InstanceStatus::Suspended,
            stored::InstanceStatus::Terminated => InstanceStatus::Terminated,
        }
    }
}

impl From<stored::TaskState> for TaskStateAnswer {
    fn from(state: stored::TaskState) -> TaskStateAnswer {
        match state {
            stored::TaskState::Ready => TaskStateAnswer::Ready,
            stored::TaskState::Waiting => TaskStateAnswer::Waiting,
            stored::TaskState::Started => TaskStateAnswer::Started,
            stored::TaskState::Completed => TaskStateAnswer::Completed,
            stored::TaskState::Error => TaskStateAnswer::Error,
            stored::TaskState::Cancelled => TaskStateAnswer::Cancelled,
        }
    }
}

fn error_of(error: &Value) -> InstanceErrorAnswer {
    serde_json::from_value(error.clone()).unwrap_or_else(|_| InstanceErrorAnswer {
        element_id: String::new(),
        message: error.to_string(),
        error_code: None,
        file: None,
    })
}

/// An instance after a start, a task completion or a delivered message ran it on to its next
/// wait (or its end).
#[derive(Serialize, ToSchema)]
pub struct InstanceAnswer {
    process_instance: ProcessInstanceAnswer,
    /// The task data after the step.
    #[schema(value_type = Object)]
    task_data: Value,
}

impl From<InstanceOutcome> for InstanceAnswer {
    /// Takes the outcome: its task data (all of it, possibly large) moves, not copied.
    fn from(mut outcome: InstanceOutcome) -> InstanceAnswer {
        let data = std::mem::take(&mut outcome.data);
        InstanceAnswer {
            process_instance: ProcessInstanceAnswer::from(&outcome),
            task_data: shown(data),
        }
    }
}

/// A migrated instance, and the version it ran on before.
#[derive(Serialize, ToSchema)]
pub struct MigratedAnswer {
    #[serde(flatten)]
    #[schema(inline)]
    instance: InstanceAnswer,
    previous_version: String,
}

impl From<&Instance> for ProcessInstanceAnswer {
    fn from(row: &Instance) -> ProcessInstanceAnswer {
        ProcessInstanceAnswer {
            id: row.id.0,
            process_model_identifier: row.process_model_identifier.to_string(),
            process_model_version: row.model_version.clone(),
            process_id: row.process_id.clone(),
            status: row.status.into(),
            error: row.error.as_ref().map(error_of),
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A task of an instance.
#[derive(Serialize, ToSchema)]
pub struct TaskAnswer {
    #[schema(value_type = String, format = Uuid)]
    guid: Uuid,
    element_id: String,
    /// The BPMN element's type (`userTask`, `serviceTask`, ...).
    element_type: String,
    name: Option<String>,
    state: TaskStateAnswer,
    /// The subprocess (or call activity, or multi-instance) task it runs in.
    #[schema(value_type = Option<String>, format = Uuid)]
    scope: Option<Uuid>,
    /// The process its element belongs to.
    process_id: Option<String>,
    /// A failed task: `{error_code, message}`.
    #[schema(value_type = Option<Object>)]
    data: Option<Value>,
    /// A service task: attempts so far.
    retries_attempted: i32,
    /// A service task: when it is called again.
    retry_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<&StoredTask> for TaskAnswer {
    fn from(task: &StoredTask) -> TaskAnswer {
        TaskAnswer {
            guid: task.guid.0,
            element_id: task.element_id.clone(),
            element_type: task.element_type.clone(),
            name: task.name.clone(),
            state: task.state.into(),
            scope: task.scope.map(|scope| scope.0),
            process_id: task.process_id.clone(),
            data: task.data.clone().map(shown),
            retries_attempted: task.retries_attempted,
            retry_at: task.retry_at,
            created_at: task.created_at,
            updated_at: task.updated_at,
        }
    }
}

/// A timer that has not fired yet.
#[derive(Serialize, ToSchema)]
pub struct PendingTimerAnswer {
    #[schema(value_type = String, format = Uuid)]
    task_guid: Uuid,
    element_id: String,
    due_at: DateTime<Utc>,
}

/// A process instance with its data, every task and its pending timers.
#[derive(Serialize, ToSchema)]
pub struct ProcessInstanceDetail {
    #[serde(flatten)]
    #[schema(inline)]
    instance: ProcessInstanceAnswer,
    /// The file of its model version that holds its process (draw it with
    /// `GET /v1.0/process-models/{model}/files/{file}?version={process_model_version}`); null
    /// when that version cannot be found.
    process_file_name: Option<String>,
    /// The task data.
    #[schema(value_type = Object)]
    data: Value,
    /// The correlation values it was started or matched with, by property.
    #[schema(value_type = Object)]
    correlations: Value,
    /// Its data objects (kept out of the task data).
    #[schema(value_type = Object)]
    data_objects: Value,
    tasks: Vec<TaskAnswer>,
    pending_timers: Vec<PendingTimerAnswer>,
}

impl From<InstanceDetail> for ProcessInstanceDetail {
    fn from(detail: InstanceDetail) -> ProcessInstanceDetail {
        let row = &detail.instance;
        ProcessInstanceDetail {
            instance: ProcessInstanceAnswer::from(row),
            process_file_name: detail.process_file_name.clone(),
            data: shown(row.data.clone()),
            correlations: shown(row.correlations.clone()),
            data_objects: shown(
                row.internal
                    .get("data_objects")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
            tasks: detail.tasks.iter().map(TaskAnswer::from).collect(),
            pending_timers: detail
                .pending_timers
                .into_iter()
                .map(|t| PendingTimerAnswer {
                    task_guid: t.task_guid.0,
                    element_id: t.element_id,
                    due_at: t.due_at,
                })
                .collect(),
        }
    }
}

/// Values as clients read them (see [`display::untag`]).
fn shown(mut value: Value) -> Value {
    display::untag(&mut value);
    value
}

/// `{results, pagination}`: a page of instances, newest first.
#[derive(Serialize, ToSchema)]
pub struct ProcessInstanceList {
    results: Vec<ProcessInstanceAnswer>,
    pagination: PaginationAnswer,
}

/// Start an instance of the model's primary process and run it to its wait states.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{modified_process_model_identifier}",
    tag = "process instances",
    params(("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`")),
    request_body(content = Option<Object>, description = "Optional initial task data (a JSON object; `null` or no body: none)", content_type = "application/json", example = json!({"customer_id": "C-42", "amount": 120})),
    responses(
        (status = 201, description = "Started; the instance after it ran on", body = InstanceAnswer),
        (status = 400, description = "`invalid_payload`, `invalid_json`, `invalid_process_model_identifier`, `process_instance_cannot_start` (the model has no start event a plain start can use)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:create:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn start_instance(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let model = services::models::identifier_from_url(&path)?;
    principal.require(&format!("instances:create:{model}"))?;
    let data = match optional_json(&body)? {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ApiError::refused(
                ErrorCode::InvalidPayload,
                "the initial data must be a JSON object",
            ))
        }
    };
    input::check_json(
        &Value::Object(data.clone()),
        ErrorCode::InvalidPayload,
        "the initial data",
    )?;
    let answer = services::instances::start(
        &state.pool,
        &state.models,
        &model,
        &data,
        &principal.subject,
    )
    .await?;
    super::json_answer(StatusCode::CREATED, InstanceAnswer::from(answer)).await
}

/// A body that may be left out: `None` when it is empty (or whitespace) or `null`, else its
/// JSON (floats written to come back from storage as floats: `input::keep_floats`); 400
/// `invalid_json` when it is not JSON.
pub(super) fn optional_json(body: &[u8]) -> Result<Option<Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Null) => Ok(None),
        Ok(mut value) => {
            input::keep_floats(&mut value);
            Ok(Some(value))
        }
        Err(e) => Err(ApiError::refused(
            ErrorCode::InvalidJson,
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// Show an instance: status, data, its data objects (`data_objects`, by id), every task (guid, element, type, state, `scope`: the
/// subprocess, call or multi-instance activity it runs in, `process_id`: the process its
/// element belongs to, so a called process's tasks show the tree of calls), its error, and
/// its pending timers (`pending_timers: [{task_guid, element_id, due_at}]`, soonest first).
#[utoipa::path(
    get,
    path = "/v1.0/process-instances/{modified_process_model_identifier}/{process_instance_id}",
    tag = "process instances",
    params(
        ("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "The instance's model, `group:sub:model` (SpiffArena's path)"),
        ("process_instance_id" = i64, Path, description = "Process instance id"),
    ),
    responses(
        (status = 200, description = "The instance", body = ProcessInstanceDetail),
        (status = 400, description = "`invalid_path`, `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`: no such instance of that model, or one the caller may not see (it needs `instances:read:<model>`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_instance(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, InstanceId)>,
) -> Result<HttpResponse, ApiError> {
    let (modified, id) = path.into_inner();
    let model = services::models::identifier_from_url(&modified)?;
    let found = authorize(&principal, &state, id, "read", None).await?;
    if model != found {
        return Err(services::instances::instance_not_found(id).into());
    }
    instance_detail(&state, id).await
}

/// `GET /v1.0/process-instances/{id}`: the instance without naming its model (kept for the
/// clients that use it; the document shows the path above, as two path templates that differ
/// only in their parameter's name would be one path to OpenAPI).
pub async fn show_instance_by_id(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    authorize(&principal, &state, id, "read", None).await?;
    instance_detail(&state, id).await
}

async fn instance_detail(state: &App, id: InstanceId) -> Result<HttpResponse, ApiError> {
    let detail = services::instances::show(&state.pool, &state.models, id).await?;
    super::json_off_thread(StatusCode::OK, ProcessInstanceDetail::from(detail)).await
}

/// The model of instance `id` once `principal` may `action` it (`instances:<action>:<model>`,
/// or the `alternative` scope). An instance the caller may not even read is answered exactly
/// like a missing one (404 `process_instance_not_found`), so a token scoped to one model learns
/// nothing about another's instances; 403 only when it may read but not `action` it.
pub(crate) async fn authorize(
    principal: &Principal,
    state: &App,
    id: InstanceId,
    action: &str,
    alternative: Option<&str>,
) -> Result<ModelId, ApiError> {
    let allowed = |model: &ModelId| {
        principal.allows(&format!("instances:{action}:{model}"))
            || alternative.is_some_and(|scope| principal.allows(scope))
    };
    let visible = services::instances::model_of(&state.pool, id)
        .await?
        .filter(|model| allowed(model) || principal.allows(&format!("instances:read:{model}")));
    let Some(model) = visible else {
        return Err(services::instances::instance_not_found(id).into());
    };
    if !allowed(&model) {
        principal.require(&format!("instances:{action}:{model}"))?;
    }
    Ok(model)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InstanceListQuery {
    /// `group/sub/model` or `group:sub:model` (an empty value is no filter)
    #[param(
        max_length = 255,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}([:/][A-Za-z0-9][A-Za-z0-9._-]{0,99})*$"
    )]
    process_model_identifier: Option<String>,
    /// `running`, `waiting`, `user_input_required`, `complete`, `error`, `suspended`, `terminated`
    #[param(value_type = Option<InstanceStatus>)]
    status: Option<String>,
    /// `property=value`: instances that established this correlation value (`order_id=A-17`;
    /// a number or boolean also matches as such: `order_id=17` finds `"17"` and `17`)
    #[param(max_length = 1000, example = "order_id=A-17")]
    correlation: Option<String>,
    /// A JSON object: instances whose data contains it (`{"customer": {"id": "C-7"}}`)
    #[param(max_length = 4000, example = json!("{\"customer_id\": \"C-7\"}"))]
    data: Option<String>,
    /// Instances started at or after this time (RFC 3339)
    created_after: Option<DateTime<Utc>>,
    /// Instances started before this time (RFC 3339)
    created_before: Option<DateTime<Utc>>,
    /// 1 (default) to the page that starts at row 100,000 (100001 with `per_page=1`, 201
    /// with `per_page=500`)
    #[param(minimum = 1, maximum = 100001)]
    page: Option<i64>,
    /// 1 to 500 (default 10)
    #[param(minimum = 1, maximum = 500)]
    per_page: Option<i64>,
}

/// List instances, newest first; search them by model, status, a correlation value, their
/// data (JSON containment) and when they started. Each filter narrows the others.
#[utoipa::path(
    get,
    path = "/v1.0/process-instances",
    tag = "process instances",
    params(InstanceListQuery),
    responses(
        (status = 200, description = "Instances", body = ProcessInstanceList),
        (status = 400, description = "`invalid_query` (a bad filter: `correlation` without `=`, `data` not a JSON object, a time not RFC 3339...), `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:<model>` (or `instances:read:*` without a model filter)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_instances(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<InstanceListQuery>,
) -> Result<HttpResponse, ApiError> {
    let model = match super::filter(&query.process_model_identifier) {
        Some(m) => Some(services::models::identifier_from_url(m)?),
        None => None,
    };
    principal.require(&format!(
        "instances:read:{}",
        model.as_ref().map_or("*", |m| m.as_str())
    ))?;
    let status = input::choice(super::filter(&query.status), "status")?;
    let page = services::Page::new(query.page, query.per_page)?;
    let correlation = super::filter(&query.correlation)
        .map(search::correlation)
        .transpose()?;
    let data = super::filter(&query.data)
        .map(|text| search::json_object(text, "data"))
        .transpose()?;
    let filter = services::instances::InstanceFilter {
        process_model_identifier: model.as_ref(),
        status,
        correlation,
        data: data.as_ref(),
        created_after: query.created_after,
        created_before: query.created_before,
    };
    let page = services::instances::list(&state.pool, &filter, page).await?;
    Ok(HttpResponse::Ok().json(ProcessInstanceList {
        results: page
            .results
            .iter()
            .map(ProcessInstanceAnswer::from)
            .collect(),
        pagination: page.pagination.into(),
    }))
}

/// The body of a migration (every member optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MigrateRequest {
    /// The version (`version_sha`) to move to; default the model's current version.
    pub target_version: Option<String>,
}

/// Move an instance to another version of its model (default: the current one).
///
/// Allowed when every live task's element exists in the target version with the same kind
/// (and waits for the same message); the instance then steps against that version, and its
/// waiting correlations keep working. Otherwise 409 `migration_not_possible`, listing the
/// elements (`elements: [{element_id, reason}]`). An instance in error moves too (its failed
/// task's element checked as a live one's), so that a retry runs the task as the new version
/// has it; a complete or terminated instance does not.
#[utoipa::path(
    post,
    path = "/v1.0/process-instances/{id}/migrate",
    tag = "process instances",
    params(("id" = i64, Path, description = "Process instance id")),
    request_body(content = Option<MigrateRequest>, description = "Optional `{\"target_version\": \"<version_sha>\"}`", content_type = "application/json"),
    responses(
        (status = 200, description = "Moved (or already there); the instance, with `previous_version`", body = MigratedAnswer),
        (status = 400, description = "`invalid_json`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`, `process_model_version_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`migration_not_possible` (with `elements`, `target_version`; or the instance is complete or terminated)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn migrate_instance(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<InstanceId>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    authorize(&principal, &state, id, "update", None).await?;
    let request: MigrateRequest = match optional_json(&body)? {
        None => MigrateRequest::default(),
        Some(value) => serde_json::from_value(value).map_err(|e| {
            ApiError::refused(
                ErrorCode::InvalidJson,
                format!("the body is not a migration: {e}"),
            )
        })?,
    };
    if let Some(version) = &request.target_version {
        input::check_text(version, ErrorCode::InvalidJson, "target_version", 128)?;
    }
    let migrated = services::instances::migrate(
        &state.pool,
        &state.models,
        id,
        request.target_version.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(MigratedAnswer {
        instance: InstanceAnswer::from(migrated.outcome),
        previous_version: migrated.previous_version,
    }))
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
    request_body(content = Object, description = "Data to merge into the task data", content_type = "application/json", example = json!({"approved": true, "comment": "fine"})),
    responses(
        (status = 200, description = "Completed; the instance after it ran on", body = InstanceAnswer),
        (status = 400, description = "`not_waiting`, `task_not_found`, `invalid_payload`, `invalid_path`, `invalid_json`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`process_instance_suspended`: the task still waits; complete it after the instance is resumed", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:update:<model>` (and may read the instance)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_instance_not_found`: no such instance, or one the caller may not see; `process_model_version_not_found` when the version it ran on was deleted", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request_timeout`: the body did not arrive in time", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn complete_task(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(InstanceId, TaskGuid)>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let (instance_id, task_guid) = path.into_inner();
    authorize(&principal, &state, instance_id, "update", None).await?;
    let mut body = body.into_inner();
    input::keep_floats(&mut body);
    input::check_json(&body, ErrorCode::InvalidPayload, "the task data")?;
    let Value::Object(data) = body else {
        return Err(ApiError::refused(
            ErrorCode::InvalidPayload,
            "the task data must be a JSON object",
        ));
    };
    let answer = services::instances::complete_task(
        &state.pool,
        &state.models,
        instance_id,
        task_guid,
        &data,
        &principal.subject,
    )
    .await?;
    super::json_answer(StatusCode::OK, InstanceAnswer::from(answer)).await
}
