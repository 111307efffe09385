//! One operator's command on many instances: each instance is commanded as its own endpoint
//! would (`POST /v1.0/process-instances/{id}/retry`...), in its own transaction, and answered
//! apart, so that one refusal neither stops nor undoes the others.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use super::process_instances::{authorize, InstanceStatus};
use crate::services::instances::{InstanceId, InstanceOutcome};
use crate::services::lifecycle::{self, Command};
use crate::services::{self, input, ErrorCode};
use crate::App;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Instances one call may command.
pub const MAX_INSTANCES: usize = 500;

/// The command, as the single-instance endpoint of the same name runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BulkAction {
    Retry,
    Terminate,
    Suspend,
    Resume,
    Migrate,
}

/// What to do to which instances.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    pub action: BulkAction,
    /// 1 to 500 instance ids (a repeated id is commanded once).
    pub process_instance_ids: Vec<i64>,
    /// `migrate` and `retry`: the version to move to (`migrate`'s default: the model's
    /// current version; `retry`'s: stay on the instance's version).
    pub target_version: Option<String>,
}

/// Whether the command was carried out on an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BulkOutcome {
    /// Carried out (or there already: suspending a suspended instance).
    Done,
    /// Refused: `error_code` and `detail` say why, as the single-instance endpoint would.
    Refused,
}

/// The answer for one instance.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkResult {
    process_instance_id: i64,
    outcome: BulkOutcome,
    /// The instance's status after the command (when done).
    status: Option<InstanceStatus>,
    error_code: Option<String>,
    detail: Option<String>,
}

/// Each instance's answer, in the order asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkAnswer {
    action: BulkAction,
    results: Vec<BulkResult>,
    done: usize,
    refused: usize,
}

/// Retry, terminate, suspend, resume or migrate many instances in one call. Each instance is
/// commanded as its own endpoint would command it, in its own transaction, with the same
/// rules and scopes (`instances:update:<model>`; an instance the caller may not read is
/// `process_instance_not_found`), and answered apart: `done` with its status, or `refused`
/// with the `error_code` its endpoint would have answered. A repeated call changes nothing
/// more (a suspended instance stays suspended; a retried one that runs on is no longer in
/// error: `process_instance_not_in_error`).
#[utoipa::path(
    post,
    path = "/v1.0/bulk/process-instances",
    tag = "process instances",
    request_body(content = BulkRequest, content_type = "application/json", example = json!({"action": "suspend", "process_instance_ids": [41, 42, 43]})),
    responses(
        (status = 200, description = "Each instance's outcome", body = BulkAnswer),
        (status = 400, description = "`invalid_json` (no ids, more than 500, an unknown action, `target_version` with another action)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn bulk(
    principal: Principal,
    state: web::Data<App>,
    request: web::Json<BulkRequest>,
) -> Result<HttpResponse, ApiError> {
    let request = request.into_inner();
    let ids = distinct_ids(&request.process_instance_ids)?;
    if let Some(version) = &request.target_version {
        if !matches!(request.action, BulkAction::Retry | BulkAction::Migrate) {
            return Err(ApiError::refused(
                ErrorCode::InvalidJson,
                "target_version goes only with `retry` or `migrate`",
            ));
        }
        input::check_text(version, ErrorCode::InvalidJson, "target_version", 128)?;
    }
    let mut results = Vec::with_capacity(ids.len());
    for id in ids {
        let outcome = command(&principal, &state, id, &request).await;
        let result = match outcome {
            Ok(outcome) => BulkResult {
                process_instance_id: id.0,
                outcome: BulkOutcome::Done,
                status: Some(outcome.status.into()),
                error_code: None,
                detail: None,
            },
            Err(refusal) => BulkResult {
                process_instance_id: id.0,
                outcome: BulkOutcome::Refused,
                status: None,
                error_code: Some(refusal.error_code().to_string()),
                detail: Some(refusal.detail().to_string()),
            },
        };
        results.push(result);
    }
    let done = results
        .iter()
        .filter(|r| r.outcome == BulkOutcome::Done)
        .count();
    Ok(HttpResponse::Ok().json(BulkAnswer {
        action: request.action,
        refused: results.len() - done,
        done,
        results,
    }))
}

/// The ids in the order given, each once; 400 without any or with more than
/// [`MAX_INSTANCES`].
fn distinct_ids(ids: &[i64]) -> Result<Vec<InstanceId>, ApiError> {
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<InstanceId> = ids
        .iter()
        .filter(|id| seen.insert(**id))
        .map(|id| InstanceId(*id))
        .collect();
    if ids.is_empty() || ids.len() > MAX_INSTANCES {
        return Err(ApiError::refused(
            ErrorCode::InvalidJson,
            format!(
                "process_instance_ids must hold 1 to {MAX_INSTANCES} ids, got {}",
                ids.len()
            ),
        ));
    }
    Ok(ids)
}

/// One instance commanded as its endpoint would.
async fn command(
    principal: &Principal,
    state: &App,
    id: InstanceId,
    request: &BulkRequest,
) -> Result<InstanceOutcome, ApiError> {
    authorize(principal, state, id, "update", None).await?;
    let subject = &principal.subject;
    let (pool, models) = (&state.pool, &state.models);
    let target = request.target_version.as_deref();
    let outcome = match request.action {
        BulkAction::Migrate => {
            services::instances::migrate(pool, models, id, target)
                .await?
                .outcome
        }
        BulkAction::Retry => match target {
            Some(target) => lifecycle::retry_on_version(pool, models, id, target, subject).await?,
            None => lifecycle::run(pool, models, id, Command::Retry, subject).await?,
        },
        BulkAction::Terminate => {
            lifecycle::run(pool, models, id, Command::Terminate, subject).await?
        }
        BulkAction::Suspend => lifecycle::run(pool, models, id, Command::Suspend, subject).await?,
        BulkAction::Resume => lifecycle::run(pool, models, id, Command::Resume, subject).await?,
    };
    Ok(outcome)
}
