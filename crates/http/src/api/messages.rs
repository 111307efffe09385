//! POST /v1.0/messages/{modified_message_name}, GET /v1.0/messages, GET /v1.0/messages/{id}.

use super::auth::Principal;
use super::display;
use super::error::{ApiError, Problem};
use super::process_instances::InstanceAnswer;
use crate::ids::InstanceId;
use crate::services::messages::{self as stored, SendAnswer, SendRequest};
use crate::services::ErrorCode;
use crate::services::{self, input};
use crate::telemetry::traces::{self, KeyValue};
use crate::App;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SendQuery {
    /// Buffering window when nothing waits for the message yet: 0 (default) to 300 seconds.
    /// Above 0, `message_instance_uuid` is required.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 300)]
    time_to_live_in_seconds: Option<String>,
    /// Idempotency key (canonical hyphenated UUID): a retry with the same key returns the
    /// stored outcome and never delivers twice.
    #[param(
        pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    message_instance_uuid: Option<String>,
    /// Accepted for compatibility with the reference; delivery is always synchronous.
    #[allow(dead_code)]
    execution_mode: Option<String>,
}

/// Buffered: nothing waits yet; the message waits until `expires_at` (on replay, once
/// expired: status `cancelled`, `failure_reason` `expired`).
#[derive(Serialize, ToSchema)]
pub struct BufferedAnswer {
    message_instance: MessageInstance,
}

/// `send` or `receive`.
#[derive(Serialize, ToSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    Send,
    Receive,
}

/// A message's stored status: `ready` (a send buffered, or a receive waiting), `running` (a
/// send being routed), `completed` (correlated or started an instance), `failed`, `cancelled`
/// (expired, or its wait ended without it), `not_accepted` (refused), `suspended` (a receive
/// of a suspended instance: it takes no message until the instance is resumed).
#[derive(Serialize, ToSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Ready,
    Running,
    Completed,
    Failed,
    Cancelled,
    NotAccepted,
    Suspended,
}

/// What the messages list labels a message with. A send: `accepted` (taken, delivery in
/// progress), `buffered` (waiting for a receiver until `expires_at`), `completed` (correlated
/// or started an instance), `rejected` (not accepted, failed, or expired). A receive:
/// `waiting` (also while its instance is suspended), `completed`, `cancelled`.
#[derive(Serialize, ToSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    Accepted,
    Buffered,
    Completed,
    Rejected,
    Waiting,
    Cancelled,
}

/// Why a send was not taken.
#[derive(Serialize, ToSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    NoReceiver,
    CorrelationMismatch,
    Expired,
}

// The wire's enums are the OpenAPI schemas; the stored ones carry the labels. Each mapping is
// exhaustive, so a new stored value cannot reach the wire without a wire form.
impl From<stored::MessageType> for MessageType {
    fn from(stored: stored::MessageType) -> Self {
        match stored {
            stored::MessageType::Send => MessageType::Send,
            stored::MessageType::Receive => MessageType::Receive,
        }
    }
}

impl From<stored::MessageStatus> for MessageStatus {
    fn from(stored: stored::MessageStatus) -> Self {
        match stored {
            stored::MessageStatus::Ready => MessageStatus::Ready,
            stored::MessageStatus::Running => MessageStatus::Running,
            stored::MessageStatus::Completed => MessageStatus::Completed,
            stored::MessageStatus::Failed => MessageStatus::Failed,
            stored::MessageStatus::Cancelled => MessageStatus::Cancelled,
            stored::MessageStatus::NotAccepted => MessageStatus::NotAccepted,
            stored::MessageStatus::Suspended => MessageStatus::Suspended,
        }
    }
}

impl From<stored::MessageState> for MessageState {
    fn from(stored: stored::MessageState) -> Self {
        match stored {
            stored::MessageState::Accepted => MessageState::Accepted,
            stored::MessageState::Buffered => MessageState::Buffered,
            stored::MessageState::Completed => MessageState::Completed,
            stored::MessageState::Rejected => MessageState::Rejected,
            stored::MessageState::Waiting => MessageState::Waiting,
            stored::MessageState::Cancelled => MessageState::Cancelled,
        }
    }
}

impl From<stored::FailureReason> for FailureReason {
    fn from(stored: stored::FailureReason) -> Self {
        match stored {
            stored::FailureReason::NoReceiver => FailureReason::NoReceiver,
            stored::FailureReason::CorrelationMismatch => FailureReason::CorrelationMismatch,
            stored::FailureReason::Expired => FailureReason::Expired,
        }
    }
}

/// What lists and the full message share.
#[derive(Serialize, ToSchema)]
pub struct MessageFields {
    id: i64,
    name: String,
    message_type: MessageType,
    status: MessageStatus,
    state: MessageState,
    /// The correlation values, canonical JSON (`{}`: none).
    correlation_key: String,
    /// A send: the instance it started or was delivered to (an engine-thrown one: its
    /// sender); a receive: the waiting instance.
    process_instance_id: Option<i64>,
    process_model_identifier: Option<String>,
    /// The task that threw or waits for it.
    #[schema(value_type = Option<String>, format = Uuid)]
    task_guid: Option<uuid::Uuid>,
    /// The sender's idempotency key.
    #[schema(value_type = Option<String>, format = Uuid)]
    message_instance_uuid: Option<uuid::Uuid>,
    /// A buffered send: when it stops waiting.
    expires_at: Option<DateTime<Utc>>,
    expires_at_in_seconds: Option<i64>,
    /// The receive a send completed, or the send a receive got.
    counterpart_id: Option<i64>,
    /// Why it was not taken, in words.
    failure_cause: Option<String>,
    failure_reason: Option<FailureReason>,
    /// Who sent it (a token's `sub`).
    created_by: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    created_at_in_seconds: i64,
    updated_at_in_seconds: i64,
}

/// A message instance with its payload and correlation values.
#[derive(Serialize, ToSchema)]
pub struct MessageInstance {
    #[serde(flatten)]
    #[schema(inline)]
    fields: MessageFields,
    /// A send's payload (a receive has none).
    #[schema(value_type = Option<Object>)]
    payload: Option<Value>,
    /// The correlation values, by correlation property.
    #[schema(value_type = Object)]
    correlation_keys: Value,
}

/// A message instance as lists show it: no payload or correlation values.
#[derive(Serialize, ToSchema)]
pub struct MessageSummary {
    #[serde(flatten)]
    #[schema(inline)]
    fields: MessageFields,
    /// `correlation_key` or `failure_cause` was cut to 1,000 characters.
    truncated: bool,
}

fn fields_of(row: &services::messages::Message) -> MessageFields {
    MessageFields {
        id: row.id.0,
        name: row.name.clone(),
        message_type: row.message_type.into(),
        status: row.status.into(),
        state: stored::MessageState::of(row.message_type, row.status).into(),
        correlation_key: row.correlation_key.clone(),
        process_instance_id: row.process_instance_id.map(|id| id.0),
        process_model_identifier: row
            .process_model_identifier
            .as_ref()
            .map(ToString::to_string),
        task_guid: row.task_guid.map(|guid| guid.0),
        message_instance_uuid: row.message_instance_uuid,
        expires_at: row.expires_at,
        expires_at_in_seconds: row.expires_at.map(|t| t.timestamp()),
        counterpart_id: row.counterpart_id.map(|id| id.0),
        failure_cause: row.failure_cause.clone(),
        failure_reason: row.failure_reason.map(FailureReason::from),
        created_by: row.created_by.clone(),
        created_at: row.created_at,
        updated_at: row.updated_at,
        created_at_in_seconds: row.created_at.timestamp(),
        updated_at_in_seconds: row.updated_at.timestamp(),
    }
}

impl From<&services::messages::Message> for MessageInstance {
    fn from(row: &services::messages::Message) -> MessageInstance {
        let mut payload = row.payload.clone();
        if let Some(payload) = &mut payload {
            display::untag(payload);
        }
        MessageInstance {
            fields: fields_of(row),
            payload,
            correlation_keys: row.correlation_keys.clone(),
        }
    }
}

/// `{results, pagination}`
#[derive(Serialize, ToSchema)]
pub struct MessageList {
    results: Vec<MessageSummary>,
    pagination: super::display::PaginationAnswer,
}

/// A JSON object.
#[derive(ToSchema)]
#[schema(value_type = Object)]
pub struct Object(#[allow(dead_code)] Value);

/// Send a BPMN message.
///
/// Delivered to the oldest instance waiting for it with matching correlation values (200),
/// else starts the model whose Message Start Event has this name (200), else is buffered
/// when `time_to_live_in_seconds` > 0 (202), else is refused (400 `message_not_accepted`,
/// kept for audit with its failure cause). A busy receiver is waited for, not refused. A
/// payload must give a value for every correlation property the message has (else 400
/// `correlation_value_not_computable`): a message is never correlated on a missing value.
#[utoipa::path(
    post,
    path = "/v1.0/messages/{modified_message_name}",
    tag = "messages",
    params(
        ("modified_message_name" = String, Path, max_length = 255, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$", description = "The message name (URL-encoded; at most 255 bytes, no control characters); a process-group prefix `group:sub:` is allowed and ignored"),
        SendQuery,
    ),
    request_body(content = Object, description = "The payload: a JSON object", content_type = "application/json", example = json!({"order_id": "A1", "amount": 12})),
    responses(
        (status = 200, description = "Delivered to a waiting instance or started one", body = InstanceAnswer),
        (status = 202, description = "Buffered (or, on replay, buffered and since expired: status `cancelled`)", body = BufferedAnswer),
        (status = 400, description = "`message_not_accepted` (with `reason`: `no_receiver` when nothing waits for the name and no model starts with it, `correlation_mismatch` when instances wait for it but none with this message's `correlation_values`, which the problem carries; when a live instance has this message's correlation values but does not wait for it yet, the problem names it in `process_instance_id` and its `detail` suggests `time_to_live_in_seconds`; the message is kept for audit with `failure_reason`, `expired` for a buffered one whose time ran out), `correlation_value_not_computable` (the payload gives no value for a correlation property of the message: its retrieval expression raised, for a missing key, or gave null; `correlation_properties: [{correlation_property, expression, error}]`; nothing is started, delivered, buffered or kept), `invalid_payload` (not an object, a NUL character, nested deeper than 64 levels, a number that cannot be stored), `invalid_message_name`, `invalid_time_to_live`, `message_instance_uuid_required`, `invalid_message_instance_uuid`, `invalid_json`, `invalid_path`, `invalid_query`, `process_instance_cannot_start`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `messages:send:<name>`, the name with `%` and whitespace percent-encoded (`messages:send` grants every name)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`message_instance_uuid_conflict`: the uuid was used with another name or payload", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request_timeout`: the body did not arrive in time", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`: not application/json", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`; nothing was done)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn send_message(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
    query: web::Query<SendQuery>,
    payload: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let name = services::messages::message_name(&path).to_string();
    input::check_text(
        &name,
        ErrorCode::InvalidMessageName,
        "the message name",
        input::MAX_NAME_BYTES,
    )?;
    principal.require(&format!("messages:send:{}", super::auth::scope_part(&name)))?;
    traces::annotate_current(|| vec![KeyValue::new("workflow.message.name", name.clone())]);
    let (ttl, uuid) = services::messages::validate_query(
        query.time_to_live_in_seconds.as_deref(),
        query.message_instance_uuid.as_deref(),
    )?;
    let mut payload = payload.into_inner();
    input::keep_floats(&mut payload);
    input::check_json(&payload, ErrorCode::InvalidPayload, "the message payload")?;
    let request = SendRequest {
        name,
        payload,
        time_to_live_seconds: ttl,
        message_instance_uuid: uuid,
        sent_by: principal.subject.clone(),
    };
    // the answers hold the instance's data (it grows with every step) or the whole payload:
    // a large one is serialised off the async workers
    match services::messages::send_grouped(&state.sends, &state.pool, &state.models, request)
        .await?
    {
        SendAnswer::Instance(outcome) => {
            traces::annotate_current(|| {
                vec![
                    KeyValue::new("workflow.instance.id", outcome.id.0),
                    KeyValue::new(
                        "workflow.process_model",
                        outcome.process_model_identifier.to_string(),
                    ),
                ]
            });
            super::json_answer(StatusCode::OK, InstanceAnswer::from(*outcome)).await
        }
        SendAnswer::Buffered(message) => {
            // the expiry sweeper may be asleep until a later deadline
            state.message_buffered.notify_one();
            let answer = BufferedAnswer {
                message_instance: MessageInstance::from(message.as_ref()),
            };
            super::json_answer(StatusCode::ACCEPTED, answer).await
        }
    }
}

/// The values of a message's `status`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessageListQuery {
    process_instance_id: Option<i64>,
    /// A message name (an empty value is no filter)
    #[param(max_length = 255, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$")]
    name: Option<String>,
    /// `ready`, `running`, `completed`, `failed`, `cancelled`, `not_accepted`, `suspended`
    #[param(value_type = Option<MessageStatus>)]
    status: Option<String>,
    /// A state label: `accepted`, `buffered`, `completed`, `rejected` (sends), `waiting`,
    /// `completed`, `cancelled` (receives)
    #[param(value_type = Option<MessageState>)]
    state: Option<String>,
    /// `send` or `receive`
    #[param(value_type = Option<MessageType>)]
    message_type: Option<String>,
    /// `property=value`: messages with this correlation value (`order_id=A-17`; a number or
    /// boolean also matches as such)
    #[param(max_length = 1000, example = "order_id=A-17")]
    correlation: Option<String>,
    /// A JSON object: messages whose payload contains it (`{"paid": true}`)
    #[param(max_length = 4000, example = json!("{\"paid\": true}"))]
    payload: Option<String>,
    /// 1 (default) to the page that starts at row 100,000 (100001 with `per_page=1`, 201
    /// with `per_page=500`)
    #[param(minimum = 1, maximum = 100001)]
    page: Option<i64>,
    /// 1 to 500 (default 10)
    #[param(minimum = 1, maximum = 500)]
    per_page: Option<i64>,
}

/// List message instances, newest first (audit): a summary of each (no payload or correlation
/// values; `correlation_key` and `failure_cause` cut to 1,000 characters, with `truncated`
/// saying so). `GET /v1.0/messages/{id}` shows one message in full.
#[utoipa::path(
    get,
    path = "/v1.0/messages",
    tag = "messages",
    params(MessageListQuery),
    responses(
        (status = 200, description = "Message instances", body = MessageList),
        (status = 400, description = "`invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:*` or `admin`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_messages(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<MessageListQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require("instances:read:*")?;
    let status = input::choice(super::filter(&query.status), "status")?;
    let message_type = input::choice(super::filter(&query.message_type), "message_type")?;
    let name = super::filter(&query.name);
    let message_state = input::choice(super::filter(&query.state), "state")?;
    if let Some(name) = name {
        input::check_text(name, ErrorCode::InvalidQuery, "name", input::MAX_NAME_BYTES)?;
    }
    let page = services::Page::new(query.page, query.per_page)?;
    let correlation = super::filter(&query.correlation)
        .map(super::search::correlation)
        .transpose()?;
    let payload = super::filter(&query.payload)
        .map(|text| super::search::json_object(text, "payload"))
        .transpose()?;
    let filter = services::messages::MessageFilter {
        process_instance_id: query.process_instance_id.map(InstanceId),
        name,
        status,
        message_type,
        state: message_state,
        correlation,
        payload: payload.as_ref(),
    };
    let page = services::messages::list(&state.pool, &filter, page).await?;
    Ok(HttpResponse::Ok().json(MessageList {
        results: page
            .results
            .iter()
            .map(|summary| MessageSummary {
                fields: fields_of(&summary.message),
                truncated: summary.truncated,
            })
            .collect(),
        pagination: page.pagination.into(),
    }))
}

/// Show one message instance.
#[utoipa::path(
    get,
    path = "/v1.0/message-instances/{message_instance_id}",
    tag = "messages",
    params(("message_instance_id" = i64, Path, description = "Message instance id")),
    responses(
        (status = 200, description = "The message instance", body = MessageInstance),
        (status = 400, description = "`invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:*` or `admin`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`message_instance_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_message(
    principal: Principal,
    state: web::Data<App>,
    id: web::Path<services::messages::MessageId>,
) -> Result<HttpResponse, ApiError> {
    principal.require("instances:read:*")?;
    let message = services::messages::find(&state.pool, id.into_inner()).await?;
    super::json_off_thread(StatusCode::OK, MessageInstance::from(&message)).await
}
