//! POST /v1.0/messages: validation, idempotency by uuid, correlation, buffering, audit.

use super::group_commit::{Batchable, GroupCommit};
use super::unit_of_work::{Committed, OutgoingMessage, RetrievalFailure, Routed, Unmatched};
use super::{instances, retry_transaction, Error, ModelCache, Page, Result, UnitOfWork};
use crate::correlation::{canonical_key, CorrelationValues};
pub use crate::ids::MessageId;
use crate::ids::ModelId;
use crate::ids::{InstanceId, TaskGuid};
use crate::services::ErrorCode;
use crate::store::{self, messages::MessageRow, messages::NewMessage};
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use sqlx::PgPool;
use std::sync::Arc;
use uuid::Uuid;

/// The longest a message may wait for a receiver (the reference's bound).
pub const MAX_TIME_TO_LIVE_SECONDS: i64 = 300;

#[derive(Debug, Clone)]
pub struct SendRequest {
    pub name: String,
    pub payload: Value,
    pub time_to_live_seconds: i64,
    pub message_instance_uuid: Option<Uuid>,
    pub sent_by: String,
}

/// A message's outcome as the API answers it.
#[derive(Debug, Clone)]
pub enum SendAnswer {
    /// Delivered to, or started, a process instance: the instance after it ran on.
    Instance(Box<super::unit_of_work::InstanceOutcome>),
    /// Buffered (or buffered and since expired): the stored message.
    Buffered(Box<Message>),
}

/// `modified_message_name` with its process-group prefix removed (`group:sub:name` -> `name`).
pub fn message_name(modified: &str) -> &str {
    modified.rsplit(':').next().unwrap_or(modified)
}

/// Checks the query parameters in the reference's order: TTL range, uuid required with a
/// TTL, uuid format. Returns the TTL and the uuid (lower-cased by parsing).
pub fn validate_query(ttl: Option<&str>, uuid: Option<&str>) -> Result<(i64, Option<Uuid>)> {
    let ttl = match ttl {
        None | Some("") => 0,
        Some(text) => text.trim().parse::<i64>().map_err(|_| {
            Error::refused(
                ErrorCode::InvalidTimeToLive,
                format!("time_to_live_in_seconds must be an integer from 0 to {MAX_TIME_TO_LIVE_SECONDS}, got '{text}'"),
            )
        })?,
    };
    if !(0..=MAX_TIME_TO_LIVE_SECONDS).contains(&ttl) {
        return Err(Error::refused(
            ErrorCode::InvalidTimeToLive,
            format!(
                "time_to_live_in_seconds must be from 0 to {MAX_TIME_TO_LIVE_SECONDS}, got {ttl}"
            ),
        ));
    }
    let uuid = uuid.filter(|u| !u.is_empty());
    if ttl > 0 && uuid.is_none() {
        return Err(Error::refused(
            ErrorCode::MessageInstanceUuidRequired,
            "message_instance_uuid is required when time_to_live_in_seconds is greater than 0",
        ));
    }
    let uuid = match uuid {
        None => None,
        Some(text) => Some(parse_canonical_uuid(text).ok_or_else(|| {
            Error::refused(
                ErrorCode::InvalidMessageInstanceUuid,
                format!("message_instance_uuid must be a hyphenated UUID, got '{text}'"),
            )
        })?),
    };
    Ok((ttl, uuid))
}

/// Only the canonical 8-4-4-4-12 form; `Uuid::parse_str` also takes braces, URNs and no hyphens.
fn parse_canonical_uuid(text: &str) -> Option<Uuid> {
    let hyphens_at = [8, 13, 18, 23];
    let well_formed = text.len() == 36
        && text.char_indices().all(|(i, c)| {
            if hyphens_at.contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    well_formed.then(|| Uuid::parse_str(text).ok()).flatten()
}

pub async fn send(pool: &PgPool, cache: &ModelCache, request: &SendRequest) -> Result<SendAnswer> {
    if !request.payload.is_object() {
        return Err(Error::refused(
            ErrorCode::InvalidPayload,
            "the message payload must be a JSON object",
        ));
    }
    retry_transaction!(send_once(pool, cache, request))
}

/// Sends a message, committed with the sends that arrive with it (group commit) unless it has
/// a uuid (its idempotency claim and replay are its own transaction's); the same outcomes as
/// [`send`].
pub async fn send_grouped(
    sends: &Arc<GroupCommit<SendRequest>>,
    pool: &PgPool,
    cache: &ModelCache,
    request: SendRequest,
) -> Result<SendAnswer> {
    if request.message_instance_uuid.is_some() || !request.payload.is_object() {
        return send(pool, cache, &request).await;
    }
    sends.run_grouped(request).await
}

impl Batchable for SendRequest {
    type Part = Sent;
    type Answer = SendAnswer;

    fn alone<'a>(
        &'a self,
        pool: &'a PgPool,
        cache: &'a ModelCache,
    ) -> BoxFuture<'a, Result<SendAnswer>> {
        Box::pin(send(pool, cache, self))
    }

    fn within<'a, 'c: 'a>(&'a self, uow: &'a mut UnitOfWork<'c>) -> BoxFuture<'a, Result<Sent>> {
        Box::pin(route_and_record(uow, self, None))
    }

    fn answer(sent: Sent, committed: &Committed) -> Result<SendAnswer> {
        sent.answer(committed)
    }

    /// The batch's correlation lookups, in one statement.
    fn ahead<'a, 'c: 'a>(
        batch: Vec<&'a SendRequest>,
        uow: &'a mut UnitOfWork<'c>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let sends: Vec<(&str, &Value)> = (batch.iter())
                .map(|request| (request.name.as_str(), &request.payload))
                .collect();
            uow.look_up_ahead(&sends).await
        })
    }
}

async fn send_once(pool: &PgPool, cache: &ModelCache, request: &SendRequest) -> Result<SendAnswer> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    // With a uuid, the row is claimed first: a concurrent request with the same uuid waits
    // here for this transaction, then answers from what it stored. Without one, the message
    // is stored once, when its route is known.
    let claimed = match request.message_instance_uuid {
        None => None,
        Some(uuid) => match claim_uuid(&mut uow, request, uuid).await? {
            Some(id) => Some(id),
            None => return replay(uow, request, uuid).await,
        },
    };
    let sent = route_and_record(&mut uow, request, claimed).await?;
    let committed = uow.commit().await?;
    sent.answer(&committed)
}

/// A send's part of a unit of work, before the commit: where it went, and its row.
pub struct Sent {
    routed: Routed,
    /// The row as stored, for a buffered message (its answer).
    buffered: Option<MessageRow>,
    values: CorrelationValues,
    /// Its row's id; `None` for one a receive or an instance took, stored at the commit.
    send_id: Option<MessageId>,
}

impl Sent {
    /// The send's answer once its unit of work has committed.
    fn answer(self, committed: &Committed) -> Result<SendAnswer> {
        send_answer(
            committed,
            self.routed,
            self.buffered,
            &self.values,
            self.send_id,
        )
    }
}

/// Computes a send's correlation values, routes it, runs the steps it causes and stores it
/// (in the row `claimed` for its uuid, if any), in `uow`, as the request's sender.
async fn route_and_record(
    uow: &mut UnitOfWork<'_>,
    request: &SendRequest,
    claimed: Option<MessageId>,
) -> Result<Sent> {
    uow.act_as(&request.sent_by);
    let (values, failures) = uow
        .correlation_values(&request.name, &request.payload)
        .await?;
    if let Some(refusal) = not_computable(&request.name, &failures) {
        return Err(refusal);
    }
    // its row goes in the bucket of its uuid or values; an instance it starts, in the bucket
    // of its values (where later messages with them look), else with its row
    let canonical = canonical_key(&values);
    let bucket = store::shards::bucket_of_message(&canonical, request.message_instance_uuid);
    let instance_bucket = store::shards::bucket_of_values(&canonical).or(bucket);
    let unmatched = if request.time_to_live_seconds > 0 {
        Unmatched::Buffer
    } else {
        Unmatched::Reject
    };
    let routed = uow
        .route_send(
            &request.name,
            &request.payload,
            &values,
            instance_bucket,
            unmatched,
        )
        .await?;
    uow.run_queued().await?;
    let ttl = (request.time_to_live_seconds > 0).then_some(request.time_to_live_seconds);
    let sent = OutgoingMessage {
        id: claimed,
        bucket,
        name: &request.name,
        payload: &request.payload,
        sender: None,
        created_by: Some(&request.sent_by),
    };
    let send_id = uow.record_send(&sent, &values, &routed, ttl).await?;
    // a buffered message answers with its row as stored (no instance stepped)
    let buffered = match (&routed, send_id) {
        (Routed::Buffered, Some(id)) => uow.message(id).await?,
        _ => None,
    };
    Ok(Sent {
        routed,
        buffered,
        values,
        send_id,
    })
}

/// Stores a send's row under its uuid (`running` until its route is known); `None` when a
/// message with that uuid is already stored.
async fn claim_uuid(
    uow: &mut UnitOfWork<'_>,
    request: &SendRequest,
    uuid: Uuid,
) -> Result<Option<MessageId>> {
    uow.claim_message_uuid(&NewMessage {
        shard_key: store::shards::of_bucket(store::shards::bucket_of_uuid(uuid)),
        name: &request.name,
        message_type: store::messages::MessageType::Send,
        status: store::messages::MessageStatus::Running,
        payload: Some(&request.payload),
        correlation_keys: &json!({}),
        correlation_key: "{}",
        process_instance_id: None,
        task_guid: None,
        message_instance_uuid: Some(uuid),
        ttl_seconds: None,
        created_by: Some(&request.sent_by),
    })
    .await
}

/// What a committed send answers: the instance it delivered to or started, the buffered
/// row, or the refusal of a send nothing took.
fn send_answer(
    committed: &Committed,
    routed: Routed,
    buffered: Option<MessageRow>,
    values: &CorrelationValues,
    send_id: Option<MessageId>,
) -> Result<SendAnswer> {
    let answer = match &routed {
        Routed::Delivered { instance_id, .. } | Routed::Started { instance_id } => committed
            .answer(*instance_id)
            .map(|outcome| SendAnswer::Instance(Box::new(outcome))),
        Routed::Buffered => buffered.map(|row| SendAnswer::Buffered(Box::new(row.into()))),
        Routed::NotAccepted { .. } => None,
    };
    match (routed, answer) {
        (
            Routed::NotAccepted {
                cause,
                reason,
                early_for,
            },
            _,
        ) => Err(not_accepted(
            cause,
            Some(FailureReason::from(reason)),
            &json!(values),
            send_id,
            early_for,
        )),
        (_, Some(answer)) => Ok(answer),
        (routed, None) => Err(Error::Internal(anyhow::anyhow!(
            "a message routed {routed:?} lost its answer"
        ))),
    }
}

/// The refusal of a send no receiver took: the cause in words, and as a code (`reason`); on a
/// correlation mismatch, the values computed from this message's own payload (never another
/// instance's data); the instance it came too early for, if one has its values.
fn not_accepted(
    cause: String,
    reason: Option<FailureReason>,
    values: &Value,
    message_id: Option<MessageId>,
    early_for: Option<InstanceId>,
) -> Error {
    let label = reason.map(FailureReason::as_str);
    let mut extra = json!({ "message_instance_id": message_id, "reason": label });
    if reason == Some(FailureReason::CorrelationMismatch) {
        extra["correlation_values"] = values.clone();
    }
    if let Some(id) = early_for {
        extra["process_instance_id"] = json!(id);
    }
    Error::refused(ErrorCode::MessageNotAccepted, cause).with_extra(extra)
}

/// The refusal of a message whose payload gives no value for one of its correlation
/// properties (as SpiffWorkflow, where a retrieval expression that raises is an error): a
/// message is never correlated on a missing value, so it neither starts an instance without
/// one nor completes one waiting for any. Buffering follows the same rule.
fn not_computable(name: &str, failures: &[RetrievalFailure]) -> Option<Error> {
    let first = failures.first()?;
    let listed: Vec<Value> = failures
        .iter()
        .map(|f| json!({"correlation_property": f.property_id, "expression": f.expression, "error": f.error}))
        .collect();
    Some(
        Error::refused(
            ErrorCode::CorrelationValueNotComputable,
            format!(
                "the payload of message '{name}' gives no value for correlation property '{}': \
                 its retrieval expression `{}` failed: {}",
                first.property_id, first.expression, first.error
            ),
        )
        .with_extra(json!({ "correlation_properties": listed })),
    )
}

/// Answers a repeated uuid from the stored message's current state; never delivers again.
/// The answer waits until that state is on the synchronous standbys: the first delivery may be
/// visible on this primary only (it restarted from a crash during the delivery's commit), and
/// acknowledging it then would lose it in a failover.
async fn replay(mut uow: UnitOfWork<'_>, request: &SendRequest, uuid: Uuid) -> Result<SendAnswer> {
    let (row, same_payload) = uow
        .message_by_uuid(uuid, &request.payload)
        .await?
        .ok_or_else(|| anyhow::anyhow!("message {uuid} conflicted but cannot be found"))?;
    let instance = match (row.status, row.process_instance_id) {
        (MessageStatus::Completed, Some(instance_id)) => uow.stored_instance(instance_id).await?,
        _ => None,
    };
    uow.commit_once_replicated().await?;
    if row.name != request.name || !same_payload {
        return Err(Error::refused(
            ErrorCode::MessageInstanceUuidConflict,
            format!(
                "message_instance_uuid {uuid} was already used for message '{}' with another {}",
                row.name,
                if row.name != request.name {
                    "name"
                } else {
                    "payload"
                }
            ),
        ));
    }
    match (row.status, row.process_instance_id) {
        (MessageStatus::Completed, Some(_)) => instance
            .map(|row| SendAnswer::Instance(Box::new(instances::outcome_of_row(row))))
            .ok_or_else(|| {
                Error::Internal(anyhow::anyhow!(
                    "message {} points at a missing instance",
                    row.id
                ))
            }),
        (MessageStatus::NotAccepted, _) => Err(not_accepted(
            row.failure_cause.clone().unwrap_or_default(),
            row.failure_reason,
            &row.correlation_keys.0,
            Some(row.id),
            None,
        )),
        _ => Ok(SendAnswer::Buffered(Box::new(row.into()))),
    }
}

/// A message instance: a send or a receive, as stored.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: MessageId,
    pub name: String,
    pub message_type: MessageType,
    pub status: MessageStatus,
    /// A send's payload (None for a receive, and in lists).
    pub payload: Option<Value>,
    /// A send's correlation values, or what a receive expects.
    pub correlation_keys: Value,
    pub correlation_key: String,
    /// The instance that sent or waits for it, or that a send reached.
    pub process_instance_id: Option<InstanceId>,
    pub process_model_identifier: Option<ModelId>,
    pub task_guid: Option<TaskGuid>,
    pub message_instance_uuid: Option<Uuid>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The receive a send completed, or the send a receive took.
    pub counterpart_id: Option<MessageId>,
    pub failure_cause: Option<String>,
    pub failure_reason: Option<FailureReason>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<MessageRow> for Message {
    fn from(row: MessageRow) -> Message {
        Message {
            id: row.id,
            name: row.name,
            message_type: row.message_type,
            status: row.status,
            payload: row.payload.map(|payload| payload.0),
            correlation_keys: row.correlation_keys.0,
            correlation_key: row.correlation_key,
            process_instance_id: row.process_instance_id,
            process_model_identifier: row.process_model_identifier,
            task_guid: row.task_guid,
            message_instance_uuid: row.message_instance_uuid,
            expires_at: row.expires_at,
            counterpart_id: row.counterpart_id,
            failure_cause: row.failure_cause,
            failure_reason: row.failure_reason,
            created_by: row.created_by,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A message as lists show it: without its payload and correlation values, with
/// `correlation_key` and `failure_cause` cut (`truncated` says so).
#[derive(Debug, Clone)]
pub struct MessageSummary {
    pub message: Message,
    pub truncated: bool,
}

pub async fn find(pool: &PgPool, id: MessageId) -> Result<Message> {
    let mut conn = pool.acquire().await?;
    store::messages::find(&mut conn, id)
        .await?
        .map(Message::from)
        .ok_or_else(|| {
            Error::refused(
                ErrorCode::MessageInstanceNotFound,
                format!("message instance {id} does not exist"),
            )
        })
}

/// One page of a list of messages.
pub struct MessagePage {
    pub results: Vec<MessageSummary>,
    pub pagination: super::Pagination,
}

/// Which messages a list shows; `None` is no filter.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageFilter<'a> {
    pub process_instance_id: Option<InstanceId>,
    pub name: Option<&'a str>,
    pub status: Option<MessageStatus>,
    pub message_type: Option<MessageType>,
    pub state: Option<MessageState>,
    /// A correlation value of the message, as [`super::instances::InstanceFilter`] takes it.
    pub correlation: Option<(&'a str, &'a str)>,
    /// An object the message's payload contains.
    pub payload: Option<&'a Value>,
}

/// A message's type, status, state label and failure reason, each label written once.
pub use workflow_types::{FailureReason, MessageState, MessageStatus, MessageType};

/// One page of message summaries, newest first.
pub async fn list(pool: &PgPool, filter: &MessageFilter<'_>, page: Page) -> Result<MessagePage> {
    let correlations = filter
        .correlation
        .map(|(property, value)| super::instances::correlation_values(property, value));
    let filter = store::messages::ListFilter {
        process_instance_id: filter.process_instance_id,
        name: filter.name,
        status: filter.status,
        message_type: filter.message_type,
        state: filter.state,
        correlations: correlations.as_deref(),
        payload: filter.payload,
    };
    let mut conn = pool.acquire().await?;
    let rows = store::messages::list(&mut conn, &filter, page.limit(), page.offset()).await?;
    let total = store::messages::count(&mut conn, &filter, page.count_up_to()).await?;
    Ok(MessagePage {
        pagination: page.pagination_of(total, rows.len()),
        results: rows
            .into_iter()
            .map(|summary| MessageSummary {
                message: summary.row.into(),
                truncated: summary.truncated,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<(i64, Option<Uuid>)>) -> &'static str {
        match result {
            Err(Error::Client { code, .. }) => code.as_str(),
            Ok(_) => "ok",
            Err(_) => "other",
        }
    }

    const UUID: &str = "0b5bd9b0-3d4a-4f4b-9d0f-6a2b3c4d5e6f";

    #[test]
    fn query_validation_follows_the_reference_order() {
        assert_eq!(code(validate_query(None, None)), "ok");
        assert_eq!(code(validate_query(Some("0"), None)), "ok");
        assert_eq!(
            code(validate_query(Some("-1"), None)),
            "invalid_time_to_live"
        );
        assert_eq!(
            code(validate_query(Some("301"), Some("nope"))),
            "invalid_time_to_live"
        );
        assert_eq!(
            code(validate_query(Some("ten"), None)),
            "invalid_time_to_live"
        );
        assert_eq!(
            code(validate_query(Some("300"), None)),
            "message_instance_uuid_required"
        );
        assert_eq!(
            code(validate_query(Some("30"), Some("nope"))),
            "invalid_message_instance_uuid"
        );
        assert_eq!(
            code(validate_query(None, Some("nope"))),
            "invalid_message_instance_uuid"
        );
        assert_eq!(code(validate_query(Some("30"), Some(UUID))), "ok");
    }

    #[test]
    fn only_canonical_uuids_are_accepted() {
        assert!(parse_canonical_uuid(UUID).is_some());
        assert!(parse_canonical_uuid(&UUID.to_uppercase()).is_some());
        assert!(parse_canonical_uuid(&UUID.replace('-', "")).is_none());
        assert!(parse_canonical_uuid(&format!("{{{UUID}}}")).is_none());
        assert!(parse_canonical_uuid(&format!("urn:uuid:{UUID}")).is_none());
    }

    #[test]
    fn group_prefix_is_dropped_from_the_message_name() {
        assert_eq!(message_name("Approval Result"), "Approval Result");
        assert_eq!(message_name("finance:invoices:paid"), "paid");
    }
}
