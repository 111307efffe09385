//! message_instances: sends (API or engine) and receives (waiting catch elements).

use super::instances::{accepted_calls_of, LockedInstance};
use super::models::model_instances_lock;
use super::shards::{self, ShardKey};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{types::Json, FromRow, PgConnection, Row};
use uuid::Uuid;
use workflow_types::{
    failure_reason, instance_status, message_status, message_type, InstanceId, MessageId, ModelId,
    TaskGuid,
};

/// A message's type, status, state label and failure reason: the enums every layer uses.
pub use workflow_types::{FailureReason, MessageState, MessageStatus, MessageType};

/// [`MessageState::of`] in SQL, over `m`: written from the rule, not beside it.
pub(crate) fn state_sql() -> String {
    let mut sql = String::from("CASE");
    for state in MessageState::ALL {
        let pairs: Vec<String> = MessageType::ALL
            .iter()
            .flat_map(|t| MessageStatus::ALL.iter().map(move |s| (*t, *s)))
            .filter(|(t, s)| MessageState::of(*t, *s) == *state)
            .map(|(t, s)| format!("('{t}', '{s}')"))
            .collect();
        sql.push_str(&format!(
            " WHEN (m.message_type, m.status) IN ({}) THEN '{state}'",
            pairs.join(", ")
        ));
    }
    sql.push_str(" END");
    sql
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MessageRow {
    pub id: MessageId,
    pub name: String,
    pub message_type: MessageType,
    pub status: MessageStatus,
    pub payload: Option<Json<Value>>,
    pub correlation_keys: Json<Value>,
    pub correlation_key: String,
    pub process_instance_id: Option<InstanceId>,
    pub process_model_identifier: Option<ModelId>,
    pub task_guid: Option<TaskGuid>,
    pub message_instance_uuid: Option<Uuid>,
    pub expires_at: Option<DateTime<Utc>>,
    pub counterpart_id: Option<MessageId>,
    pub failure_cause: Option<String>,
    pub failure_reason: Option<FailureReason>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub struct NewMessage<'a> {
    /// The bucket's key its row lives in (see `shards`).
    pub shard_key: ShardKey,
    pub name: &'a str,
    pub message_type: MessageType,
    pub status: MessageStatus,
    pub payload: Option<&'a Value>,
    pub correlation_keys: &'a Value,
    pub correlation_key: &'a str,
    pub process_instance_id: Option<InstanceId>,
    pub task_guid: Option<TaskGuid>,
    pub message_instance_uuid: Option<Uuid>,
    pub ttl_seconds: Option<i64>,
    pub created_by: Option<&'a str>,
}

/// Inserts a message. With a uuid that is already taken it returns `None` (after waiting for
/// the transaction that took it to finish, as `ON CONFLICT` does).
pub async fn insert(
    conn: &mut PgConnection,
    m: &NewMessage<'_>,
) -> sqlx::Result<Option<MessageId>> {
    sqlx::query_scalar(
        "INSERT INTO message_instances (name, message_type, status, payload, correlation_keys, \
         correlation_key, process_instance_id, task_guid, message_instance_uuid, expires_at, \
         created_by, shard_key) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 CASE WHEN $10::bigint IS NULL THEN NULL \
                      ELSE statement_timestamp() + make_interval(secs => $10::bigint) END, $11, $12) \
         ON CONFLICT ON CONSTRAINT message_instances_message_instance_uuid_key DO NOTHING RETURNING id",
    )
    .bind(m.name)
    .bind(m.message_type)
    .bind(m.status)
    .bind(m.payload.map(Json))
    .bind(Json(m.correlation_keys))
    .bind(m.correlation_key)
    .bind(m.process_instance_id)
    .bind(m.task_guid)
    .bind(m.message_instance_uuid)
    .bind(m.ttl_seconds)
    .bind(m.created_by)
    .bind(m.shard_key)
    .fetch_optional(conn)
    .await
}

/// Where a sent message went, to be stored.
pub struct SendRecord<'a> {
    /// The row claimed up front for an idempotency key; `None` inserts the message now.
    pub id: Option<MessageId>,
    /// The bucket's key its row lives in (the claimed row's, if claimed).
    pub shard_key: ShardKey,
    pub name: &'a str,
    pub payload: &'a Value,
    pub status: MessageStatus,
    pub correlation_keys: &'a Value,
    pub correlation_key: &'a str,
    /// The sender (engine-thrown), else the instance it started or was delivered to.
    pub process_instance_id: Option<InstanceId>,
    pub task_guid: Option<TaskGuid>,
    /// The receive it completed, and that receive's instance: both rows then point at each
    /// other.
    pub receive: Option<(MessageId, InstanceId)>,
    pub failure_cause: Option<&'a str>,
    pub failure_reason: Option<FailureReason>,
    pub ttl_seconds: Option<i64>,
    pub created_by: Option<&'a str>,
    /// A buffered send's lookup keys (see [`claim_buffered_send`]), each written in its own
    /// bucket; empty otherwise.
    pub buffer_keys: &'a [String],
}

/// A send routed to a waiting receive or to a new instance, written with its unit of work's
/// instances ([`crate::instances::update_all`]): its row, and the receive it completed (which
/// then points at it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoutedSend {
    /// The bucket's key its row lives in.
    pub shard_key: ShardKey,
    pub name: String,
    pub message_type: MessageType,
    pub status: MessageStatus,
    pub payload: Value,
    pub correlation_keys: Value,
    pub correlation_key: String,
    /// The sender (engine-thrown), else the instance it started or was delivered to.
    pub process_instance_id: Option<InstanceId>,
    pub task_guid: Option<TaskGuid>,
    /// The receive it completed, and that receive's key.
    pub receive_id: Option<MessageId>,
    pub receive_shard_key: Option<ShardKey>,
    pub created_by: Option<String>,
}

impl From<&SendRecord<'_>> for RoutedSend {
    fn from(r: &SendRecord<'_>) -> RoutedSend {
        RoutedSend {
            shard_key: r.shard_key,
            name: r.name.to_string(),
            message_type: MessageType::Send,
            status: r.status,
            payload: r.payload.clone(),
            correlation_keys: r.correlation_keys.clone(),
            correlation_key: r.correlation_key.to_string(),
            process_instance_id: r.process_instance_id,
            task_guid: r.task_guid,
            receive_id: r.receive.map(|(receive, _)| receive),
            receive_shard_key: r.receive.map(|(_, instance)| shards::of_instance(instance)),
            created_by: r.created_by.map(str::to_string),
        }
    }
}

/// A receive a unit of work leaves waiting, written with its instances
/// ([`crate::instances::update_all`], plain PostgreSQL): the names' locks, its row and the
/// look in the buffer in that one statement, as [`insert_waiting_receive`] and the claim's
/// probe would write and look in two.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NewReceive {
    pub name: String,
    pub correlation_keys: Value,
    /// The canonical text of `correlation_keys`: the buffer is probed by it.
    pub correlation_key: String,
    pub process_instance_id: InstanceId,
    pub task_guid: TaskGuid,
    pub shard_key: ShardKey,
}

/// Stores a routed send, and completes the receive it went to (each pointing at the
/// other), in one statement. Returns its id.
pub async fn record_send(conn: &mut PgConnection, r: &SendRecord<'_>) -> sqlx::Result<MessageId> {
    let query = match r.id {
        None => sqlx::query_scalar(
            concat!("WITH sent AS ( \
                 INSERT INTO message_instances (name, message_type, status, payload, \
                     correlation_keys, correlation_key, process_instance_id, task_guid, \
                     counterpart_id, failure_cause, expires_at, created_by, failure_reason, \
                     shard_key) \
                 VALUES ($1, '", message_type!(Send), "', $2, $3, $4, $5, $6, $7, $8, $10, \
                     CASE WHEN $9::bigint IS NULL THEN NULL \
                          ELSE statement_timestamp() + make_interval(secs => $9::bigint) END, $11, $14, \
                     $15) \
                 RETURNING id), \
             receive AS (UPDATE message_instances SET status = '", message_status!(Completed), "', \
                 counterpart_id = (SELECT id FROM sent), updated_at = now() \
                 WHERE id = $8 AND shard_key = $16), \
             keys AS (INSERT INTO buffered_send_keys (name, correlation_key, send_id, shard_key, \
                     send_shard_key) \
                 SELECT $1, k.key, (SELECT id FROM sent), k.shard, $15 \
                 FROM unnest($13::text[], $17::int[]) AS k(key, shard)) \
             SELECT id FROM sent"),
        ),
        Some(_) => sqlx::query_scalar(
            concat!("WITH sent AS ( \
                 UPDATE message_instances SET status = $2, payload = $3, correlation_keys = $4, \
                     correlation_key = $5, process_instance_id = COALESCE(process_instance_id, $6), \
                     task_guid = COALESCE(task_guid, $7), counterpart_id = $8, failure_cause = $10, \
                     failure_reason = $14, \
                     expires_at = CASE WHEN $9::bigint IS NULL THEN NULL \
                          ELSE statement_timestamp() + make_interval(secs => $9::bigint) END, \
                     created_by = COALESCE(created_by, $11), updated_at = now() \
                 WHERE id = $12 AND name = $1 AND shard_key = $15 RETURNING id), \
             receive AS (UPDATE message_instances SET status = '", message_status!(Completed), "', \
                 counterpart_id = (SELECT id FROM sent), updated_at = now() \
                 WHERE id = $8 AND shard_key = $16), \
             keys AS (INSERT INTO buffered_send_keys (name, correlation_key, send_id, shard_key, \
                     send_shard_key) \
                 SELECT $1, k.key, (SELECT id FROM sent), k.shard, $15 \
                 FROM unnest($13::text[], $17::int[]) AS k(key, shard)) \
             SELECT id FROM sent"),
        ),
    };
    query
        .bind(r.name)
        .bind(r.status)
        .bind(Json(r.payload))
        .bind(Json(r.correlation_keys))
        .bind(r.correlation_key)
        .bind(r.process_instance_id)
        .bind(r.task_guid)
        .bind(r.receive.map(|(receive, _)| receive))
        .bind(r.ttl_seconds)
        .bind(r.failure_cause)
        .bind(r.created_by)
        .bind(r.id.map_or(0, |id| id.0))
        .bind(r.buffer_keys)
        .bind(r.failure_reason)
        .bind(r.shard_key)
        .bind(r.receive.map(|(_, instance)| shards::of_instance(instance)))
        .bind(
            r.buffer_keys
                .iter()
                .map(|key| shards::of_value(key))
                .collect::<Vec<_>>(),
        )
        .fetch_one(conn)
        .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WaitingReceive {
    pub id: MessageId,
    pub process_instance_id: InstanceId,
    pub task_guid: TaskGuid,
}

/// The oldest waiting receive with its instance locked (`$1` name, `$2` keys, `$3` excluded
/// ids, `$5` the bucket's key it looks in), without the checks of
/// [`LOCK_OLDEST_WAITING_RECEIVE`].
///
/// The instance is locked in a lateral subquery after the receive is chosen, not joined:
/// a prepared statement's generic plan is made once per connection, and made while
/// `process_instances` has no statistics yet (a new database) a join became a hash join over
/// a scan of every instance, kept for the connection's life (issue 16: one correlation in
/// ten took 4 ms on 2,000 instances). A locking subquery is never flattened into a join, so
/// the instance is always one primary-key probe.
macro_rules! oldest_waiting_receive {
    () => {
        oldest_waiting_receive!("$1", "unnest($2::text[]) AS k(key)", "true")
    };
    // `$name` the name's expression, `$keys` the keys' rows (`k.key`), `$of_it` which of them
    ($name:literal, $keys:literal, $of_it:literal) => {
        concat!(
            "SELECT r.id AS receive_id, r.task_guid AS receive_task_guid, \
                     pi.id, pi.process_model_identifier, pi.process_id, pi.status, pi.data, \
                     pi.correlations, pi.internal, pi.error, pi.model_version, pi.created_at, \
                     pi.updated_at, pi.live_tasks, pi.callees, ",
            accepted_calls_of!("pi", "$5"),
            " FROM (SELECT m.id, m.process_instance_id, m.task_guid \
                     FROM ",
            $keys,
            " CROSS JOIN LATERAL (SELECT id, process_instance_id, task_guid \
                         FROM message_instances \
                         WHERE name = ",
            $name,
            " AND message_type = '",
            message_type!(Receive),
            "' AND status = '",
            message_status!(Ready),
            "' \
                           AND correlation_key = k.key AND id <> ALL($3) AND shard_key = $5 \
                         ORDER BY id LIMIT 1) m \
                     WHERE ",
            $of_it,
            " ORDER BY m.id LIMIT 1) r \
                 CROSS JOIN LATERAL (SELECT * FROM process_instances \
                     WHERE id = r.process_instance_id AND shard_key = $5 FOR NO KEY UPDATE) pi"
        )
    };
}

/// The checks of a lookup (`$4` the message catalog's version the caller computed the keys
/// at, or null; `$6` a model whose instances lock it takes shared first, or null).
///
/// Both are one-time filters (no column in them): run once, before anything is read,
/// whether a receive is found or not. So a send that would start a model when no receive takes
/// it holds the model's lock from this statement on (a statement fewer).
macro_rules! lookup_checks {
    () => {
        concat!(
            " WHERE ($4::bigint IS NULL \
                    OR workflow_catalog_is($4, (SELECT version FROM message_catalog_version))) \
               AND ($6::text IS NULL \
                    OR (SELECT true FROM (SELECT pg_advisory_xact_lock_shared(",
            model_instances_lock!("$6"),
            ")) l))"
        )
    };
}

/// The statement of [`lock_oldest_waiting_receive`] (`$1` name, `$2` keys, `$3` excluded ids,
/// `$4` the message catalog's version the caller computed the keys at, or null, `$5` the
/// bucket's key it looks in, `$6` a model whose instances lock it takes shared first, or
/// null): no row when no receive waits.
pub const LOCK_OLDEST_WAITING_RECEIVE: &str = concat!(oldest_waiting_receive!(), lookup_checks!());

/// [`LOCK_OLDEST_WAITING_RECEIVE`] for a send that starts a model when no receive takes it:
/// always one row, which also holds the next instance id, so that the instance the send
/// may start has its id without a statement of its own (and its row is written once, with its
/// first step: `workflow_write_instances`). The id is spent when a receive takes the send
/// instead: ids have gaps, as a rolled-back start leaves.
pub const LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID: &str = concat!(
    "SELECT f.*, n.next_instance_id \
     FROM (SELECT nextval('process_instances_id_seq') AS next_instance_id) n \
     LEFT JOIN LATERAL (",
    oldest_waiting_receive!(),
    ") f ON true",
    lookup_checks!()
);

/// The lookups of several sends in one statement ([`lock_oldest_waiting_receives`]): for each
/// send (`q.i`, its name `q.name`, whether it draws an instance id `q.draws`), its keys
/// (`$2` the send of each, `$7` the key), `$3` excluded ids, `$4` and `$5` as in
/// [`LOCK_OLDEST_WAITING_RECEIVE`], and `$6` the models whose instances lock it takes shared
/// first (sorted, so that every statement takes them in one order). One row per send, in order;
/// the instances are locked in that order.
const LOCK_OLDEST_WAITING_RECEIVES: &str = concat!(
    // (the id drawn in the select list, once per send: drawn in a lateral subquery of the
    // send's row, a plan could memoize it for sends alike, one id for all)
    "SELECT q.i, CASE WHEN q.draws THEN nextval('process_instances_id_seq') END \
                 AS next_instance_id, f.* \
     FROM unnest($1::text[], $8::bool[]) WITH ORDINALITY AS q(name, draws, i) \
     LEFT JOIN LATERAL (",
    oldest_waiting_receive!(
        "q.name",
        "unnest($2::bigint[], $7::text[]) AS k(i, key)",
        "k.i = q.i"
    ),
    ") f ON true \
     WHERE ($4::bigint IS NULL \
            OR workflow_catalog_is($4, (SELECT version FROM message_catalog_version))) \
       AND (SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(",
    model_instances_lock!("l.model"),
    ") FROM unnest($6::text[]) AS l(model)) l) >= 0 \
     ORDER BY q.i"
);

/// One send's lookup among several ([`lock_oldest_waiting_receives`]).
pub struct SendLookup<'a> {
    pub name: &'a str,
    pub keys: &'a [String],
    /// Whether it draws the id of the instance the send may start.
    pub draw_id: bool,
}

/// [`lock_oldest_waiting_receive`] for several sends in one statement (plain PostgreSQL: one
/// bucket, `shard`), each as if it were looked up alone: a receive two of them would both take
/// is found for each (the caller looks again for the second). `lock_models` (the models those
/// that may start one start) are locked shared first.
pub async fn lock_oldest_waiting_receives(
    conn: &mut PgConnection,
    sends: &[SendLookup<'_>],
    excluded: &[MessageId],
    catalog_version: Option<i64>,
    shard: ShardKey,
    lock_models: &[&ModelId],
) -> sqlx::Result<Vec<Lookup>> {
    let names: Vec<&str> = sends.iter().map(|s| s.name).collect();
    let draws: Vec<bool> = sends.iter().map(|s| s.draw_id).collect();
    let (of_send, keys): (Vec<i64>, Vec<&str>) = (sends.iter().zip(1..))
        .flat_map(|(s, i)| s.keys.iter().map(move |key| (i, key.as_str())))
        .unzip();
    let mut models: Vec<&str> = lock_models.iter().map(|m| m.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let rows = sqlx::query(LOCK_OLDEST_WAITING_RECEIVES)
        .bind(names)
        .bind(of_send)
        .bind(excluded)
        .bind(catalog_version)
        .bind(shard)
        .bind(models)
        .bind(keys)
        .bind(draws)
        .fetch_all(conn)
        .await?;
    rows.iter().map(|row| Lookup::from_row(row, true)).collect()
}

/// What a lookup found: the oldest waiting receive with its instance locked, if any, and the
/// next instance id when the lookup was for a send that may start a model.
pub struct Lookup {
    pub found: Option<(WaitingReceive, LockedInstance)>,
    pub next_instance_id: Option<InstanceId>,
}

impl Lookup {
    /// A lookup's row (`drew`: whether it has the `next_instance_id` column).
    fn from_row(row: &sqlx::postgres::PgRow, drew: bool) -> sqlx::Result<Lookup> {
        let next_instance_id: Option<InstanceId> = match drew {
            true => row.try_get("next_instance_id")?,
            false => None,
        };
        let receive_id: Option<MessageId> = row.try_get("receive_id")?;
        let found = match receive_id {
            Some(id) => {
                let instance = LockedInstance::from_row(row)?;
                let receive = WaitingReceive {
                    id,
                    process_instance_id: instance.row.id,
                    task_guid: row.try_get("receive_task_guid")?,
                };
                Some((receive, instance))
            }
            None => None,
        };
        Ok(Lookup {
            found,
            next_instance_id,
        })
    }
}

/// What a lookup prepares for the start its send makes when no receive takes it.
#[derive(Debug, Clone, Copy, Default)]
pub struct StartPrepared<'a> {
    /// The model whose instances lock it takes (shared), if not held already.
    pub lock_model: Option<&'a ModelId>,
    /// Whether it draws the new instance's id.
    pub draw_id: bool,
}

/// The oldest waiting receive stored under one of `keys` (one index probe per key) in the
/// bucket of `shard`, other than `excluded`, with its instance row locked (`FOR NO KEY UPDATE`, as
/// [`super::instances::lock`] does, waiting for a step in another transaction to commit). The
/// instance row is current once locked; the receive row was read before the wait, so the
/// caller checks that the instance's task still waits. With `start.draw_id`, also the next
/// instance id ([`LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID`]; plain PostgreSQL only: a new instance's
/// id on Citus is made where its bucket is known).
pub async fn lock_oldest_waiting_receive(
    conn: &mut PgConnection,
    name: &str,
    keys: &[String],
    excluded: &[MessageId],
    catalog_version: Option<i64>,
    shard: ShardKey,
    start: StartPrepared<'_>,
) -> sqlx::Result<Lookup> {
    let StartPrepared {
        lock_model,
        draw_id,
    } = start;
    let statement = match draw_id {
        true => LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID,
        false => LOCK_OLDEST_WAITING_RECEIVE,
    };
    let row = sqlx::query(statement)
        .bind(name)
        .bind(keys)
        .bind(excluded)
        .bind(catalog_version)
        .bind(shard)
        .bind(lock_model)
        .fetch_optional(conn)
        .await?;
    match row {
        Some(row) => Lookup::from_row(&row, draw_id),
        None => Ok(Lookup {
            found: None,
            next_instance_id: None,
        }),
    }
}

/// A route to a waiting receive in another bucket (Citus): the receive and its bucket's key.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct ReceiveRoute {
    pub receive_id: MessageId,
    pub receive_shard_key: ShardKey,
}

/// Citus: the routes in the bucket of `shard` to receives waiting under one of `keys` (but
/// `excluded`) in other buckets, oldest receive first (at most 10: each is tried in turn).
pub async fn receive_routes(
    conn: &mut PgConnection,
    name: &str,
    keys: &[String],
    excluded: &[MessageId],
    shard: ShardKey,
) -> sqlx::Result<Vec<ReceiveRoute>> {
    sqlx::query_as(
        "SELECT receive_id, receive_shard_key FROM receive_routes \
         WHERE shard_key = $4 AND name = $1 AND correlation_key = ANY($2) \
           AND receive_id <> ALL($3) ORDER BY receive_id LIMIT 10",
    )
    .bind(name)
    .bind(keys)
    .bind(excluded)
    .bind(shard)
    .fetch_all(conn)
    .await
}

/// Citus: drops a route whose receive no longer waits.
pub async fn drop_receive_route(
    conn: &mut PgConnection,
    name: &str,
    receive_id: MessageId,
    shard: ShardKey,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM receive_routes WHERE shard_key = $3 AND name = $1 AND receive_id = $2",
    )
    .bind(name)
    .bind(receive_id)
    .bind(shard)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BufferedSend {
    pub id: MessageId,
    pub payload: Option<Json<Value>>,
}

/// The claim of a buffered send around `$candidate`, the query choosing it ($1 name,
/// $2 expected key, $3 receive id, $4 instance id). Plain PostgreSQL's: on Citus, a buffered
/// send and its keys are in different buckets ([`claim_buffered_send_across`]).
macro_rules! claim_buffered_send {
    ($($candidate:tt)+) => {
        concat!(
            concat!("WITH claimed AS ( \
                 UPDATE message_instances SET status = '", message_status!(Completed), "', counterpart_id = $3, \
                     process_instance_id = COALESCE(process_instance_id, $4), updated_at = now() \
                 WHERE id = ("),
            $($candidate)+,
            concat!(") AND status = '", message_status!(Ready), "' \
                 RETURNING id, payload), \
             unkeyed AS (DELETE FROM buffered_send_keys \
                 WHERE send_id IN (SELECT id FROM claimed)) \
             SELECT id, payload FROM claimed")
        )
    };
}

/// [`claim_buffered_send`] for a receive that expects nothing: the oldest buffered send of the
/// name.
pub const CLAIM_ANY_BUFFERED_SEND: &str = claim_buffered_send!(concat!(
    "SELECT id FROM message_instances \
     WHERE name = $1 AND message_type = '",
    message_type!(Send),
    "' AND status = '",
    message_status!(Ready),
    "' \
       AND (expires_at IS NULL OR expires_at > statement_timestamp()) AND $2::text IS NOT NULL \
     ORDER BY id LIMIT 1 FOR UPDATE"
));

/// [`claim_buffered_send`] for a receive that expects values: the key's sends, oldest first,
/// each taken by a primary-key probe in a locking lateral subquery (never flattened into a
/// join), so no plan can scan the buffer, and with no `message_type` condition, so no partial
/// index over every buffered send is usable either (keys only ever name sends). A key whose
/// send was claimed or expired meanwhile is skipped for the next.
///
/// Not `id = ANY(ARRAY(keys))`: a generic plan made while `message_instances` had no
/// statistics (a new database, or autovacuum off) read that as a sequential scan of every
/// message, kept for the connection's life (issue 35).
pub const CLAIM_BUFFERED_SEND_BY_KEY: &str = claim_buffered_send!(concat!(
    "SELECT m.id FROM (SELECT send_id FROM buffered_send_keys \
                       WHERE name = $1 AND correlation_key = $2 \
                       ORDER BY send_id LIMIT 100) k \
     CROSS JOIN LATERAL (SELECT id FROM message_instances \
         WHERE id = k.send_id AND status = '",
    message_status!(Ready),
    "' \
           AND (expires_at IS NULL OR expires_at > statement_timestamp()) FOR UPDATE) m \
     ORDER BY k.send_id LIMIT 1"
));

/// Claims the oldest buffered, unexpired send of `name` whose values match `expected` (equal on
/// every expected property; the send may have more), marking it delivered to the receive
/// `receive_id` of `instance_id`, and drops its lookup keys. On plain PostgreSQL (one bucket);
/// on Citus, [`claim_buffered_send_across`].
///
/// Both ways in are btree probes whatever the buffer holds: with expected values, the send's
/// key `(name, canonical expected values)` in `buffered_send_keys` (written with the send for
/// every subset of its values); without, every send of the name matches and the oldest is the
/// first entry of the `(name, id)` index. The conditions are repeated on the locked row, so a
/// send claimed meanwhile by another transaction is skipped after the wait, not returned.
pub async fn claim_buffered_send(
    conn: &mut PgConnection,
    name: &str,
    expected_key: &str,
    receive_id: MessageId,
    instance_id: InstanceId,
) -> sqlx::Result<Option<BufferedSend>> {
    let sql = if expected_key == "{}" {
        CLAIM_ANY_BUFFERED_SEND
    } else {
        CLAIM_BUFFERED_SEND_BY_KEY
    };
    sqlx::query_as(sql)
        .bind(name)
        .bind(expected_key)
        .bind(receive_id)
        .bind(instance_id)
        .fetch_optional(conn)
        .await
}

/// Citus: [`claim_buffered_send`] where a key's send may be in another bucket than the key
/// (keys live in their own buckets, sends in their uuid's or values'): the key's bucket names
/// the sends, oldest first, and each is claimed in its own bucket until one is still buffered;
/// the keys of sends claimed or expired meanwhile are dropped as they are passed.
pub async fn claim_buffered_send_across(
    conn: &mut PgConnection,
    name: &str,
    expected_key: &str,
    receive_id: MessageId,
    instance_id: InstanceId,
) -> sqlx::Result<Option<BufferedSend>> {
    let key_shard = shards::of_value(expected_key);
    let candidates: Vec<(MessageId, ShardKey)> = sqlx::query_as(
        "SELECT send_id, send_shard_key FROM buffered_send_keys \
         WHERE shard_key = $3 AND name = $1 AND correlation_key = $2 \
         ORDER BY send_id LIMIT 100",
    )
    .bind(name)
    .bind(expected_key)
    .bind(key_shard)
    .fetch_all(&mut *conn)
    .await?;
    for (send_id, send_shard) in candidates {
        let claimed: Option<BufferedSend> = sqlx::query_as(concat!(
            "UPDATE message_instances SET status = '",
            message_status!(Completed),
            "', counterpart_id = $2, \
                 process_instance_id = COALESCE(process_instance_id, $3), updated_at = now() \
             WHERE id = $1 AND shard_key = $4 AND status = '",
            message_status!(Ready),
            "' AND (expires_at IS NULL OR expires_at > statement_timestamp()) \
             RETURNING id, payload"
        ))
        .bind(send_id)
        .bind(receive_id)
        .bind(instance_id)
        .bind(send_shard)
        .fetch_optional(&mut *conn)
        .await?;
        sqlx::query(
            "DELETE FROM buffered_send_keys WHERE shard_key = $3 AND name = $1 AND send_id = $2",
        )
        .bind(name)
        .bind(send_id)
        .bind(key_shard)
        .execute(&mut *conn)
        .await?;
        if claimed.is_some() {
            return Ok(claimed);
        }
    }
    Ok(None)
}

/// Points a receive (of `instance_id`) at the send that completed it.
pub async fn complete_receive(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    receive_id: MessageId,
    send_id: MessageId,
) -> sqlx::Result<()> {
    sqlx::query(concat!(
        "UPDATE message_instances SET status = '",
        message_status!(Completed),
        "', counterpart_id = $2, updated_at = now() \
         WHERE id = $1 AND shard_key = $3"
    ))
    .bind(receive_id)
    .bind(send_id)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// The correlation key of a receive (of `instance_id`) that still waits (None once it is
/// completed or cancelled).
pub async fn receive_key(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    receive_id: MessageId,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(concat!(
        "SELECT correlation_key FROM message_instances \
         WHERE id = $1 AND shard_key = $2 AND message_type = '",
        message_type!(Receive),
        "' AND status = '",
        message_status!(Ready),
        "'"
    ))
    .bind(receive_id)
    .bind(shards::of_instance(instance_id))
    .fetch_optional(conn)
    .await
}

pub async fn cancel_receives_of_task(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<()> {
    sqlx::query(concat!(
        "UPDATE message_instances SET status = '",
        message_status!(Cancelled),
        "', updated_at = now() \
         WHERE task_guid = $1 AND shard_key = $2 AND message_type = '",
        message_type!(Receive),
        "' AND status IN ('",
        message_status!(Ready),
        "', '",
        message_status!(Suspended),
        "')"
    ))
    .bind(task_guid)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// How many receives wait for this message name (for the refusal's explanation).
pub async fn count_waiting_receives(conn: &mut PgConnection, name: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar(concat!(
        "SELECT count(*) FROM message_instances \
         WHERE name = $1 AND message_type = '",
        message_type!(Receive),
        "' AND status = '",
        message_status!(Ready),
        "'"
    ))
    .bind(name)
    .fetch_one(conn)
    .await
}

/// The oldest live instance (and its status) of a model that declares correlation for this
/// message name, whose established correlation values include every one of `values` (not
/// empty): the instance a message with those values is for, though nothing of it waits.
pub async fn instance_with_values(
    conn: &mut PgConnection,
    name: &str,
    values: &serde_json::Value,
) -> sqlx::Result<Option<(InstanceId, String)>> {
    sqlx::query_as(concat!(
        "SELECT pi.id, pi.status FROM process_instances pi \
         WHERE pi.correlations @> $2 AND pi.status NOT IN ('",
        instance_status!(Complete),
        "', '",
        instance_status!(Terminated),
        "') \
           AND EXISTS (SELECT 1 FROM correlation_retrievals r WHERE r.message_name = $1 \
                       AND r.process_model_identifier = pi.process_model_identifier) \
         ORDER BY pi.id LIMIT 1"
    ))
    .bind(name)
    .bind(sqlx::types::Json(values))
    .fetch_optional(conn)
    .await
}

pub async fn cancel_receives_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<()> {
    sqlx::query(concat!(
        "UPDATE message_instances SET status = '",
        message_status!(Cancelled),
        "', updated_at = now() \
         WHERE process_instance_id = $1 AND shard_key = $2 AND message_type = '",
        message_type!(Receive),
        "' \
           AND status IN ('",
        message_status!(Ready),
        "', '",
        message_status!(Suspended),
        "')"
    ))
    .bind(instance_id)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// A suspended instance's waiting receives leave correlation (status `suspended`: the lookup
/// of waiting receives passes them by) until it is resumed.
pub async fn suspend_receives_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<()> {
    sqlx::query(concat!(
        "UPDATE message_instances SET status = '",
        message_status!(Suspended),
        "', updated_at = now() \
         WHERE process_instance_id = $1 AND shard_key = $2 AND message_type = '",
        message_type!(Receive),
        "' AND status = '",
        message_status!(Ready),
        "'"
    ))
    .bind(instance_id)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// A receive of a resumed instance, waiting again.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResumedReceive {
    pub id: MessageId,
    pub task_guid: TaskGuid,
    pub name: String,
    pub correlation_key: String,
}

/// A resumed instance's receives wait again; they are answered oldest first (each then looks
/// in the buffer for what arrived meanwhile).
pub async fn resume_receives_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<Vec<ResumedReceive>> {
    let resumed: Vec<ResumedReceive> = sqlx::query_as(concat!(
        "WITH resumed AS (UPDATE message_instances SET status = '",
        message_status!(Ready),
        "', updated_at = now() \
             WHERE process_instance_id = $1 AND shard_key = $2 AND message_type = '",
        message_type!(Receive),
        "' AND status = '",
        message_status!(Suspended),
        "' \
             RETURNING id, task_guid, name, correlation_key) \
         SELECT id, task_guid, name, correlation_key FROM resumed \
         WHERE task_guid IS NOT NULL ORDER BY id"
    ))
    .bind(instance_id)
    .bind(shards::of_instance(instance_id))
    .fetch_all(&mut *conn)
    .await?;
    // Citus: a suspended receive's route was dropped as stale by the first lookup that passed
    // it; it is found through one again
    for receive in &resumed {
        route_receive(
            conn,
            &receive.name,
            &receive.correlation_key,
            receive.id,
            instance_id,
        )
        .await?;
    }
    Ok(resumed)
}

/// Citus: a receive whose key is not in its instance's bucket gets a route in the key's bucket
/// ([`receive_routes`]); nothing to do otherwise (always, on plain PostgreSQL).
async fn route_receive(
    conn: &mut PgConnection,
    name: &str,
    key: &str,
    receive_id: MessageId,
    instance: InstanceId,
) -> sqlx::Result<()> {
    if shards::of_value(key) == shards::of_instance(instance) {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO receive_routes (shard_key, name, correlation_key, receive_id, \
             receive_shard_key) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT ON CONSTRAINT receive_routes_pkey DO NOTHING",
    )
    .bind(shards::of_value(key))
    .bind(name)
    .bind(key)
    .bind(receive_id)
    .bind(shards::of_instance(instance))
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a receive waiting for `name` with the `expected` values (`key` their canonical
/// text) for a task of an instance, after taking the name's lock shared (see [`lock_name`]):
/// one round trip. Look in the buffer in the next statement, not in this one: its snapshot was
/// taken before the lock was granted, and would miss a send buffered while it waited. On
/// Citus, a receive whose key is not in its instance's bucket is also given a route in the
/// key's bucket ([`receive_routes`]).
pub async fn insert_waiting_receive(
    conn: &mut PgConnection,
    name: &str,
    expected: &Value,
    key: &str,
    instance: InstanceId,
    task: TaskGuid,
) -> sqlx::Result<MessageId> {
    let receive_id = sqlx::query_scalar(concat!(
        "WITH locked AS (SELECT pg_advisory_xact_lock_shared(hashtextextended('message:' || $1, 0))) \
         INSERT INTO message_instances (name, message_type, status, correlation_keys, \
             correlation_key, process_instance_id, task_guid, shard_key) \
         SELECT $1, '",
        message_type!(Receive),
        "', '",
        message_status!(Ready),
        "', $2, $3, $4, $5, $6 FROM locked RETURNING id"
    ))
    .bind(name)
    .bind(Json(expected))
    .bind(key)
    .bind(instance)
    .bind(task)
    .bind(shards::of_instance(instance))
    .fetch_one(&mut *conn)
    .await?;
    route_receive(conn, name, key, receive_id, instance).await?;
    Ok(receive_id)
}

/// Serialises the two paths that can miss each other (docs/architecture.md, the buffered-message
/// race): a send about to be buffered takes the lock exclusively, a receive about to wait takes
/// it shared. Receives don't block each other; a buffering send sees every receive committed
/// before it.
pub async fn lock_name(conn: &mut PgConnection, name: &str, exclusive: bool) -> sqlx::Result<()> {
    let sql = if exclusive {
        "SELECT pg_advisory_xact_lock(hashtextextended('message:' || $1, 0))"
    } else {
        "SELECT pg_advisory_xact_lock_shared(hashtextextended('message:' || $1, 0))"
    };
    sqlx::query(sql).bind(name).execute(conn).await?;
    Ok(())
}

const MESSAGE_COLUMNS: &str = "m.id, m.name, m.message_type, m.status, m.payload, \
     m.correlation_keys, m.correlation_key, m.process_instance_id, \
     pi.process_model_identifier, m.task_guid, m.message_instance_uuid, m.expires_at, \
     m.counterpart_id, m.failure_cause, m.failure_reason, m.created_by, m.created_at, \
     m.updated_at";
const MESSAGE_FROM: &str = " FROM message_instances m LEFT JOIN process_instances pi \
     ON pi.id = m.process_instance_id AND pi.shard_key = m.shard_key";

pub async fn find(conn: &mut PgConnection, id: MessageId) -> sqlx::Result<Option<MessageRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {MESSAGE_COLUMNS}{MESSAGE_FROM} WHERE m.id = $1"
    )))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// [`find`] of a message whose bucket is known (on Citus, one shard is read, not all).
pub async fn find_in(
    conn: &mut PgConnection,
    id: MessageId,
    shard: ShardKey,
) -> sqlx::Result<Option<MessageRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {MESSAGE_COLUMNS}{MESSAGE_FROM} WHERE m.id = $1 AND m.shard_key = $2"
    )))
    .bind(id)
    .bind(shard)
    .fetch_optional(conn)
    .await
}

/// The stored message for an idempotency key, and whether `payload` equals its payload
/// (compared as jsonb, so key order and number spelling don't matter).
pub async fn find_by_uuid(
    conn: &mut PgConnection,
    uuid: Uuid,
    payload: &Value,
) -> sqlx::Result<Option<(MessageRow, bool)>> {
    #[derive(sqlx::FromRow)]
    struct Found {
        #[sqlx(flatten)]
        row: MessageRow,
        same_payload: bool,
    }
    let found: Option<Found> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {MESSAGE_COLUMNS}, (m.payload = $2) AS same_payload{MESSAGE_FROM} \
         WHERE m.message_instance_uuid = $1"
    )))
    .bind(uuid)
    .bind(Json(payload))
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|f| (f.row, f.same_payload)))
}

/// A message as lists show it: no payload or correlation values (`payload` is NULL,
/// `correlation_keys` empty), and the two texts that can be long (`correlation_key`,
/// `failure_cause`) cut to [`SUMMARY_TEXT_CHARS`] characters, so a page costs the same whatever
/// the messages hold.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MessageSummary {
    #[sqlx(flatten)]
    pub row: MessageRow,
    /// `correlation_key` or `failure_cause` was cut.
    pub truncated: bool,
}

pub const SUMMARY_TEXT_CHARS: i32 = 1000;

/// The messages a list shows: `$1` process instance, `$2` name, `$3` status, `$4` message
/// type, `$5` state label, `$6` correlation objects (one contained in the message's values),
/// `$7` an object its payload contains; each ignored when NULL.
fn list_where() -> &'static str {
    static WHERE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    WHERE.get_or_init(|| {
        format!(
            " WHERE ($1::bigint IS NULL OR m.process_instance_id = $1) \
             AND ($2::text IS NULL OR m.name = $2) AND ($3::text IS NULL OR m.status = $3) \
             AND ($4::text IS NULL OR m.message_type = $4) \
             AND ($5::text IS NULL OR ({}) = $5) \
             AND ($6::jsonb[] IS NULL OR m.correlation_keys @> ANY($6)) \
             AND ($7::jsonb IS NULL OR m.payload @> $7)",
            state_sql()
        )
    })
}

/// Which messages a list shows; `None` is no filter.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFilter<'a> {
    pub process_instance_id: Option<InstanceId>,
    pub name: Option<&'a str>,
    pub status: Option<MessageStatus>,
    pub message_type: Option<MessageType>,
    pub state: Option<MessageState>,
    /// Messages whose correlation values contain one of these objects.
    pub correlations: Option<&'a [Value]>,
    /// Messages whose payload contains this object.
    pub payload: Option<&'a Value>,
}

/// `limit` message summaries from `offset`, newest first; a `None` filter is no filter.
pub async fn list(
    conn: &mut PgConnection,
    filter: &ListFilter<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<MessageSummary>> {
    let list_where = list_where();
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT m.id, m.name, m.message_type, m.status, NULL::jsonb AS payload, \
             '{{}}'::jsonb AS correlation_keys, left(m.correlation_key, $10) AS correlation_key, \
             m.process_instance_id, pi.process_model_identifier, m.task_guid, \
             m.message_instance_uuid, m.expires_at, m.counterpart_id, \
             left(m.failure_cause, $10) AS failure_cause, m.failure_reason, \
             (length(m.correlation_key) > $10 OR coalesce(length(m.failure_cause), 0) > $10) \
                 AS truncated, \
             m.created_by, m.created_at, m.updated_at{MESSAGE_FROM}{list_where} \
         ORDER BY m.id DESC LIMIT $8 OFFSET $9"
    )))
    .bind(filter.process_instance_id)
    .bind(filter.name)
    .bind(filter.status)
    .bind(filter.message_type)
    .bind(filter.state)
    .bind(
        filter
            .correlations
            .map(|c| c.iter().map(Json).collect::<Vec<_>>()),
    )
    .bind(filter.payload.map(Json))
    .bind(limit)
    .bind(offset)
    .bind(SUMMARY_TEXT_CHARS)
    .fetch_all(conn)
    .await
}

/// How many messages [`list`] would show with the same filters, counted up to `up_to` (the
/// total of a huge table is not worth reading it whole on every page).
pub async fn count(
    conn: &mut PgConnection,
    filter: &ListFilter<'_>,
    up_to: i64,
) -> sqlx::Result<i64> {
    let list_where = list_where();
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM (SELECT 1 FROM message_instances m{list_where} LIMIT $8) AS counted"
    )))
    .bind(filter.process_instance_id)
    .bind(filter.name)
    .bind(filter.status)
    .bind(filter.message_type)
    .bind(filter.state)
    .bind(
        filter
            .correlations
            .map(|c| c.iter().map(Json).collect::<Vec<_>>()),
    )
    .bind(filter.payload.map(Json))
    .bind(up_to)
    .fetch_one(conn)
    .await
}

/// The sweep of [`expire_due`] in one bucket ($1 now, $2 limit, $3 the bucket's key). The rows to expire, and then their keys,
/// are taken as arrays of ids: as `IN (subquery)` joins, a generic plan (our sessions use them)
/// hashes them against a sequential scan of the whole table on every sweep.
pub const EXPIRE_DUE: &str = concat!(
    "WITH expired AS ( \
         UPDATE message_instances SET status = '",
    message_status!(Cancelled),
    "', failure_cause = 'expired', \
             failure_reason = '",
    failure_reason!(Expired),
    "', \
             updated_at = now() \
         WHERE id = ANY (ARRAY(SELECT id FROM message_instances \
                               WHERE status = '",
    message_status!(Ready),
    "' AND expires_at IS NOT NULL \
                                 AND expires_at <= $1 AND shard_key = $3 \
                               ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)) \
           AND shard_key = $3 AND status = '",
    message_status!(Ready),
    "' \
         RETURNING id), \
     unkeyed AS (DELETE FROM buffered_send_keys \
                 WHERE send_id = ANY (ARRAY(SELECT id FROM expired)) AND shard_key = $3) \
     SELECT count(*) FROM expired"
);

/// Marks up to `limit` buffered messages whose time to live had passed at `now`; returns how
/// many. Bucket by bucket (Citus locks rows only in single-shard statements). `now` is a parameter, so the expiry index bounds the scan (`statement_timestamp()` is
/// volatile and would make it a filter over every buffered row).
pub async fn expire_due(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<u64> {
    let mut expired = 0;
    for shard in shards::all() {
        if expired >= limit {
            break;
        }
        let in_shard: i64 = sqlx::query_scalar(EXPIRE_DUE)
            .bind(now)
            .bind(limit - expired)
            .bind(shard)
            .fetch_one(&mut *conn)
            .await?;
        expired += in_shard;
    }
    Ok(expired as u64)
}

/// When the next buffered message expires (the first entry of the expiry index).
pub async fn next_expiry(conn: &mut PgConnection) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar(concat!(
        "SELECT expires_at FROM message_instances \
         WHERE status = '",
        message_status!(Ready),
        "' AND expires_at IS NOT NULL ORDER BY expires_at LIMIT 1"
    ))
    .fetch_optional(conn)
    .await
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn every_label_reads_back_as_its_value() {
        for status in MessageStatus::ALL {
            assert_eq!(MessageStatus::parse(status.as_str()), Some(*status));
        }
        for state in MessageState::ALL {
            assert_eq!(MessageState::parse(state.as_str()), Some(*state));
        }
        assert_eq!(MessageStatus::parse("Ready"), None, "labels are exact");
    }

    #[test]
    fn the_state_of_each_type_and_status() {
        use MessageStatus::*;
        let expected = [
            (MessageType::Send, Running, "accepted"),
            (MessageType::Send, Ready, "buffered"),
            (MessageType::Send, Completed, "completed"),
            (MessageType::Send, NotAccepted, "rejected"),
            (MessageType::Send, Failed, "rejected"),
            (MessageType::Send, Cancelled, "rejected"),
            (MessageType::Receive, Ready, "waiting"),
            (MessageType::Receive, Suspended, "waiting"),
            (MessageType::Receive, Completed, "completed"),
            (MessageType::Receive, Cancelled, "cancelled"),
        ];
        for (message_type, status, state) in expected {
            assert_eq!(MessageState::of(message_type, status).as_str(), state);
        }
        // the SQL names every state once, each with the pairs the rule gives it
        let sql = state_sql();
        for state in MessageState::ALL {
            assert_eq!(sql.matches(&format!("THEN '{state}'")).count(), 1, "{sql}");
        }
        assert!(sql.contains("('send', 'ready')) THEN 'buffered'"), "{sql}");
    }
}
