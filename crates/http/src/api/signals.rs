//! POST /v1.0/signals/{signal_name}: a signal from outside, with an optional payload.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use crate::services::ErrorCode;
use crate::services::{self, input};
use crate::App;
use actix_web::{web, HttpResponse};
use serde_json::Value;
use utoipa::ToSchema;

/// Which instances caught the signal.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SignalAnswer {
    /// The signal's name, as sent.
    signal_name: String,
    /// Ids of the instances that had a task waiting for the signal and caught it (each once),
    /// ascending.
    delivered_to: Vec<i64>,
    /// Ids of the instances it started (one per model with a signal start event of this
    /// name, on the model's current version), ascending.
    started: Vec<i64>,
}

/// Send a BPMN signal.
///
/// Every instance with a signal catch event, signal boundary event or signal event
/// subprocess of this name waiting catches it (a boundary interrupts its activity unless it is
/// non-interrupting), and every model with a signal start event of this name starts an
/// instance, in one transaction with the steps that follow. A signal that nothing waits for is
/// not kept (200 with `delivered_to: []`). The optional body is the signal's payload (any JSON
/// value; no body or `null`: none): a catching event whose `bpmn:signal` names a
/// `spiffworkflow:variableName` stores it there in its task data (null when there is none),
/// as SpiffWorkflow stores a payload a throw event's `spiffworkflow:payloadExpression` gave.
#[utoipa::path(
    post,
    path = "/v1.0/signals/{signal_name}",
    tag = "signals",
    params(("signal_name" = String, Path, max_length = 255, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$", description = "The signal name (`name` of the `bpmn:signal`), URL-encoded")),
    request_body(content = Option<Value>, description = "Optional payload: any JSON value (`null` or no body: none)", content_type = "application/json", example = json!({"closing_date": "2026-11-30"})),
    responses(
        (status = 200, description = "The instances the signal reached", body = SignalAnswer),
        (status = 400, description = "`invalid_signal_name`, `invalid_path`, `invalid_json`, `invalid_payload` (a NUL character, nested deeper than 64 levels, a number that cannot be stored)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `signals:send:<name>`, the name with `%` and whitespace percent-encoded (`signals:send` grants every name)", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request_timeout`: the body did not arrive in time", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn send_signal(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let name = path.into_inner();
    input::check_text(
        &name,
        ErrorCode::InvalidSignalName,
        "the signal name",
        input::MAX_NAME_BYTES,
    )?;
    principal.require(&format!("signals:send:{}", super::auth::scope_part(&name)))?;
    let payload = super::process_instances::optional_json(&body)?.unwrap_or(Value::Null);
    input::check_json(&payload, ErrorCode::InvalidPayload, "the signal payload")?;
    let answer = services::signals::send(
        &state.pool,
        &state.models,
        &name,
        &payload,
        &principal.subject,
    )
    .await?;
    Ok(HttpResponse::Ok().json(answer))
}
