//! process_instances and tasks.

use crate::shards::{self, NewInstanceId};
use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use serde_json::Value;
use sqlx::{types::Json, PgConnection};
use std::collections::HashMap;
use workflow_types::{
    task_state, InstanceId, InstanceStatus, MessageId, ModelId, TaskGuid, TaskState,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InstanceRow {
    pub id: InstanceId,
    pub process_model_identifier: ModelId,
    pub process_id: String,
    pub status: InstanceStatus,
    pub data: Json<Value>,
    pub correlations: Json<Value>,
    pub internal: Json<Value>,
    pub error: Option<Json<Value>>,
    /// The version of its model the instance steps against (`process_model_versions`).
    pub model_version: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An instance row locked for this transaction.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LockedInstance {
    #[sqlx(flatten)]
    pub row: InstanceRow,
    /// The engine's live tasks (a JSON array of task rows), current as of the lock.
    pub live_tasks: Json<Value>,
    /// The model versions of the processes it called from other models.
    pub callees: Json<Value>,
    /// Tasks whose connector call its proxy accepted (202) since the instance was last
    /// written: recorded on their jobs alone ([`crate::jobs::record_acceptance`]), for the
    /// engine's state to catch up with.
    pub accepted_calls: Vec<uuid::Uuid>,
}

/// The select-list item of a locked instance's accepted calls (`$instance`: the instance's
/// row, `$shard`: the parameter holding its key; a key taken from the row itself would not let
/// Citus route the statement to one shard).
macro_rules! accepted_calls_of {
    ($instance:literal, $shard:literal) => {
        concat!(
            "ARRAY(SELECT task_guid FROM jobs WHERE process_instance_id = ",
            $instance,
            ".id AND shard_key = ",
            $shard,
            " AND accepted_at IS NOT NULL) AS accepted_calls"
        )
    };
}
pub(crate) use accepted_calls_of;

/// The select list of a [`LockedInstance`] of `process_instances pi`, whose key is `$shard`.
macro_rules! locked_instance_columns {
    ($shard:literal) => {
        concat!(
            "id, process_model_identifier, process_id, status, data, correlations, \
             internal, error, model_version, created_at, updated_at, live_tasks, callees, ",
            accepted_calls_of!("pi", $shard)
        )
    };
}

/// An instance as a unit of work loads it, by its id (`$1`) and shard key (`$2`).
macro_rules! instance_by_id {
    () => {
        concat!(
            "SELECT ",
            locked_instance_columns!("$2"),
            " FROM process_instances pi WHERE id = $1 AND shard_key = $2"
        )
    };
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskRow {
    pub guid: TaskGuid,
    pub element_id: String,
    pub element_type: String,
    pub name: Option<String>,
    pub state: TaskState,
    pub scope: Option<TaskGuid>,
    pub data: Option<Json<Value>>,
    pub retries_attempted: i32,
    pub retry_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The process its element belongs to (NULL for tasks written before it was recorded).
    pub process_id: Option<String>,
}

/// Inserts an instance (`running`) of the current version of its model, of `process_id` or
/// else the version's primary process, reading the model in the same statement; `None` when
/// there is no such model. Its id is made as `placement` says (see [`shards::new_instance`]).
///
/// Take the model's instances lock (`models::lock_instances_of`) in a statement before this
/// one: its snapshot is taken when it starts, so a lock taken within it would leave it reading
/// a model deleted meanwhile (an instance has no foreign key to its model to refuse it:
/// finished ones outlive it).
pub async fn insert_of_current_version(
    conn: &mut PgConnection,
    process_model_identifier: &ModelId,
    process_id: Option<&str>,
    started_by: Option<&str>,
    placement: NewInstanceId,
) -> sqlx::Result<Option<InstanceRow>> {
    sqlx::query_as(
        "INSERT INTO process_instances (id, shard_key, process_model_identifier, model_version, \
             process_id, status, started_by) \
         SELECT nextval('process_instances_id_seq') * $5 + $6, $7, identifier, version_sha, \
             COALESCE($2, primary_process_id), $3, $4 \
         FROM process_models WHERE identifier = $1 \
         RETURNING id, process_model_identifier, process_id, status, \
         data, correlations, internal, error, model_version, created_at, updated_at",
    )
    .bind(process_model_identifier)
    .bind(process_id)
    .bind(InstanceStatus::Running)
    .bind(started_by)
    .bind(placement.scale)
    .bind(placement.offset)
    .bind(placement.key)
    .fetch_optional(conn)
    .await
}

/// Who started an instance (None: no token subject started it).
pub async fn started_by(conn: &mut PgConnection, id: InstanceId) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT started_by FROM process_instances WHERE id = $1 AND shard_key = $2")
        .bind(id)
        .bind(shards::of_instance(id))
        .fetch_optional(conn)
        .await
        .map(Option::flatten)
}

/// The model versions of the processes the instance calls from other models.
pub async fn set_callees(
    conn: &mut PgConnection,
    id: InstanceId,
    callees: &Value,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE process_instances SET callees = $2 WHERE id = $1 AND shard_key = $3")
        .bind(id)
        .bind(Json(callees))
        .bind(shards::of_instance(id))
        .execute(conn)
        .await
        .map(|_| ())
}

/// `SELECT ... FOR NO KEY UPDATE`: every step of an instance holds its row lock. (Not `FOR
/// UPDATE`: rows that only reference the instance, a proxy's log line, are written meanwhile
/// without waiting for the step, as their foreign keys need only a key share.)
pub async fn lock(conn: &mut PgConnection, id: InstanceId) -> sqlx::Result<Option<LockedInstance>> {
    sqlx::query_as(concat!(instance_by_id!(), " FOR NO KEY UPDATE"))
        .bind(id)
        .bind(shards::of_instance(id))
        .fetch_optional(conn)
        .await
}

/// [`lock`] of several instances in one statement, in the order of `ids` (a batch locks its
/// instances in one order: ascending ids); those that do not exist are left out. Each is one
/// primary-key probe whatever the statistics: a locking subquery is never flattened into a join.
/// Plain PostgreSQL only (Citus locks rows only in single-shard statements).
pub async fn lock_all(
    conn: &mut PgConnection,
    ids: &[InstanceId],
) -> sqlx::Result<Vec<LockedInstance>> {
    let keys: Vec<shards::ShardKey> = ids.iter().map(|id| shards::of_instance(*id)).collect();
    sqlx::query_as(LOCK_ALL)
        .bind(ids)
        .bind(keys)
        .fetch_all(conn)
        .await
}

/// The statement of [`lock_all`].
pub const LOCK_ALL: &str = concat!(
    "SELECT l.* FROM unnest($1::bigint[], $2::integer[]) WITH ORDINALITY AS k(id, shard_key, n) \
     CROSS JOIN LATERAL (SELECT ",
    locked_instance_columns!("k.shard_key"),
    " FROM process_instances pi WHERE pi.id = k.id AND pi.shard_key = k.shard_key \
     FOR NO KEY UPDATE) l ORDER BY k.n"
);

/// [`lock`] without the lock, for a unit of work that only reads the instance: its last
/// committed state, as any other transaction sees it.
pub async fn read(conn: &mut PgConnection, id: InstanceId) -> sqlx::Result<Option<LockedInstance>> {
    sqlx::query_as(instance_by_id!())
        .bind(id)
        .bind(shards::of_instance(id))
        .fetch_optional(conn)
        .await
}

pub async fn find(conn: &mut PgConnection, id: InstanceId) -> sqlx::Result<Option<InstanceRow>> {
    sqlx::query_as(
        "SELECT id, process_model_identifier, process_id, status, data, correlations, internal, \
         error, model_version, created_at, updated_at FROM process_instances \
         WHERE id = $1 AND shard_key = $2",
    )
    .bind(id)
    .bind(shards::of_instance(id))
    .fetch_optional(conn)
    .await
}

/// An instance to write back: its row's fields and its changed tasks.
#[derive(serde::Serialize)]
pub struct InstanceUpdate<'a> {
    pub id: InstanceId,
    /// Its rows' key ([`shards::of_instance`]).
    pub shard_key: shards::ShardKey,
    pub status: InstanceStatus,
    pub data: &'a Value,
    pub correlations: &'a Value,
    pub internal: &'a Value,
    pub error: Option<&'a Value>,
    /// Tasks to insert or update: a JSON array of objects with the columns of `tasks`
    /// (guid, element_id, element_type, name, state, scope, data, process_id).
    /// (Serialised already: the caller does it off the async threads.)
    pub tasks: &'a RawValue,
    /// The live tasks after the step, in the same form.
    pub live_tasks: &'a RawValue,
    /// Set for an instance whose row is not stored yet: it is inserted, not updated.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub new: Option<NewInstance<'a>>,
}

/// What an instance's row holds besides its state, for an instance written for the first time
/// by [`update_all`]. Its model must still be at `model_version` (read with the message
/// catalog, not in this transaction): else nothing is written and the statement fails with
/// [`crate::CATALOG_CHANGED`], for its transaction to run again with the catalog read afresh.
#[derive(serde::Serialize)]
pub struct NewInstance<'a> {
    pub process_model_identifier: &'a ModelId,
    pub model_version: &'a str,
    pub process_id: &'a str,
    pub started_by: Option<&'a str>,
}

/// Writes back instances and their changed tasks (inserting the rows of new ones, before
/// anything that refers to them), writes the jobs of the leased `calls`, deletes the connector
/// jobs of `done_jobs` (tasks, with their instances, whose calls are no longer due) and stores
/// the `sends` routed meanwhile, and, on plain PostgreSQL, inserts the `receives` left waiting
/// and looks in the buffer for them, all in one round trip (the statements below). An
/// instance that is not there is an error.
pub async fn update_all(
    conn: &mut PgConnection,
    updates: &[InstanceUpdate<'_>],
    done_jobs: &[(InstanceId, TaskGuid)],
    sends: &[crate::messages::RoutedSend],
    calls: &[&crate::jobs::LeasedCall],
    receives: &[crate::messages::NewReceive],
) -> sqlx::Result<Written> {
    let (done_keys, done_jobs): (Vec<shards::ShardKey>, Vec<uuid::Uuid>) = done_jobs
        .iter()
        .map(|(instance, task)| (shards::of_instance(*instance), task.0))
        .unzip();
    let statement = if shards::distributed() {
        if !receives.is_empty() {
            // (a unit of work on Citus writes each receive as it comes)
            return Err(sqlx::Error::Protocol(
                "receives written with instances on Citus".into(),
            ));
        }
        WRITE_INSTANCES_BY_ROW
    } else if receives.is_empty() {
        WRITE_INSTANCES_TOGETHER
    } else {
        WRITE_INSTANCES_TOGETHER_AND_WAIT
    };
    let mut query = sqlx::query_as(statement)
        .bind(Json(updates))
        .bind(done_jobs)
        .bind(done_keys)
        .bind(Json(sends))
        .bind(Json(calls));
    if !receives.is_empty() {
        query = query.bind(Json(receives));
    }
    let rows: Vec<WrittenRow> = query.fetch_all(conn).await?;
    let mut job_of_task: HashMap<uuid::Uuid, i64> = HashMap::new();
    let mut written_at: HashMap<i64, DateTime<Utc>> = HashMap::new();
    let mut maybe_buffered = Vec::new();
    for WrittenRow {
        written_id: id,
        written_at: at,
        call_task: task,
        receive_n,
    } in rows
    {
        match (task, at, receive_n) {
            (Some(task), _, _) => {
                job_of_task.insert(task, id);
            }
            (None, Some(at), _) => {
                written_at.insert(id, at);
            }
            (None, None, Some(n)) if n >= 1 && (n as usize) <= receives.len() => {
                maybe_buffered.push((n as usize - 1, MessageId(id)));
            }
            (None, None, _) => return Err(sqlx::Error::RowNotFound),
        }
    }
    // every call's job and every instance written, each once
    let job_ids: Option<Vec<i64>> = (calls.iter())
        .map(|call| job_of_task.get(&call.task_guid.0).copied())
        .collect();
    let updated_at: Option<Vec<DateTime<Utc>>> = (updates.iter())
        .map(|u| written_at.get(&u.id.0).copied())
        .collect();
    match (job_ids, updated_at) {
        (Some(job_ids), Some(updated_at))
            if job_of_task.len() == calls.len() && written_at.len() == updates.len() =>
        {
            Ok(Written {
                updated_at,
                job_ids,
                maybe_buffered,
            })
        }
        _ => Err(sqlx::Error::RowNotFound),
    }
}

/// What [`update_all`] wrote: each instance's new `updated_at` (a new one's `created_at` too)
/// and each leased call's job id, in the order given; and the receives written that may have a
/// buffered send to claim (their place among those given, and their id).
pub struct Written {
    pub updated_at: Vec<DateTime<Utc>>,
    pub job_ids: Vec<i64>,
    pub maybe_buffered: Vec<(usize, MessageId)>,
}

/// A row of the write-back's statements: an instance written (its id and time), a call's job
/// (its id and task), or a receive written that may have a buffered send (its id and place).
#[derive(sqlx::FromRow)]
struct WrittenRow {
    written_id: i64,
    written_at: Option<DateTime<Utc>>,
    call_task: Option<uuid::Uuid>,
    receive_n: Option<i32>,
}

/// The write-back's statements: [`update_all`]'s parameters, its rows (an instance written, a
/// call's job, or a receive written that may have a buffered send: `receive_n`, its place in
/// `$6`). On Citus a statement per row, each routed to its shard by its parameters; on plain
/// PostgreSQL a statement per kind of row, and the new receives with their look in the buffer
/// (`workflow_wait_for_messages`) when there are any. Those come first (the branches of a
/// `UNION ALL` run in order): their names' locks are taken before the instances' writes, and
/// their ids are drawn before the sends', as when each receive was written as it came (the
/// messages list by id). They need no other order: a receive has no foreign key to its
/// instance.
const WRITE_INSTANCES_BY_ROW: &str =
    "SELECT written_id, written_at, call_task, NULL::integer AS receive_n \
     FROM workflow_write_instances($1, $2, $3, $4, $5)";
const WRITE_INSTANCES_TOGETHER: &str =
    "SELECT written_id, written_at, call_task, NULL::integer AS receive_n \
     FROM workflow_write_instances_together($1, $2, $3, $4, $5)";
const WRITE_INSTANCES_TOGETHER_AND_WAIT: &str =
    "SELECT receive_id AS written_id, NULL::timestamptz AS written_at, NULL::uuid AS call_task, \
         receive_n FROM workflow_wait_for_messages($6) \
     UNION ALL \
     SELECT written_id, written_at, call_task, NULL \
     FROM workflow_write_instances_together($1, $2, $3, $4, $5)";

pub async fn all_tasks(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<Vec<TaskRow>> {
    sqlx::query_as(
        "SELECT guid, element_id, element_type, name, state, scope, data, retries_attempted, \
         retry_at, created_at, updated_at, process_id FROM tasks \
         WHERE process_instance_id = $1 AND shard_key = $2 ORDER BY seq",
    )
    .bind(instance_id)
    .bind(shards::of_instance(instance_id))
    .fetch_all(conn)
    .await
}

/// The newest task of an instance at `element_id` that failed (ERROR).
pub async fn last_failed_task(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    element_id: &str,
) -> sqlx::Result<Option<TaskRow>> {
    sqlx::query_as(concat!(
        "SELECT guid, element_id, element_type, name, state, scope, data, retries_attempted, \
         retry_at, created_at, updated_at, process_id FROM tasks \
         WHERE process_instance_id = $1 AND shard_key = $3 AND element_id = $2 AND state = '",
        task_state!(Error),
        "' ORDER BY seq DESC LIMIT 1"
    ))
    .bind(instance_id)
    .bind(element_id)
    .bind(shards::of_instance(instance_id))
    .fetch_optional(conn)
    .await
}

pub async fn task(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    guid: TaskGuid,
) -> sqlx::Result<Option<TaskRow>> {
    sqlx::query_as(
        "SELECT guid, element_id, element_type, name, state, scope, data, retries_attempted, \
         retry_at, created_at, updated_at, process_id FROM tasks \
         WHERE process_instance_id = $1 AND guid = $2 AND shard_key = $3",
    )
    .bind(instance_id)
    .bind(guid)
    .bind(shards::of_instance(instance_id))
    .fetch_optional(conn)
    .await
}

/// Which instances a list shows; `None` (or nothing) is no filter.
#[derive(Debug, Clone, Copy, Default)]
pub struct InstanceSearch<'a> {
    pub process_model_identifier: Option<&'a ModelId>,
    pub status: Option<InstanceStatus>,
    /// Instances whose correlation values contain one of these objects (`{"order_id":
    /// "17"}`, `{"order_id": 17}`): by `process_instances_correlations`.
    pub correlations: &'a [Value],
    /// Instances whose data contains this object: by `process_instances_data`.
    pub data: Option<&'a Value>,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
}

impl InstanceSearch<'_> {
    /// `WHERE` with only the filters that are set: a condition written for an absent value
    /// (`$1 IS NULL OR ...`) would keep a generic plan from the containment indexes.
    fn push_where(&self, sql: &mut sqlx::QueryBuilder<sqlx::Postgres>) {
        sql.push(" WHERE true");
        if let Some(model) = self.process_model_identifier {
            sql.push(" AND process_model_identifier = ")
                .push_bind(model.clone());
        }
        if let Some(status) = self.status {
            sql.push(" AND status = ").push_bind(status);
        }
        if !self.correlations.is_empty() {
            sql.push(" AND (");
            for (i, wanted) in self.correlations.iter().enumerate() {
                if i > 0 {
                    sql.push(" OR ");
                }
                sql.push("correlations @> ").push_bind(Json(wanted.clone()));
            }
            sql.push(")");
        }
        if let Some(data) = self.data {
            sql.push(" AND data @> ").push_bind(Json(data.clone()));
        }
        if let Some(after) = self.created_after {
            sql.push(" AND created_at >= ").push_bind(after);
        }
        if let Some(before) = self.created_before {
            sql.push(" AND created_at < ").push_bind(before);
        }
    }
}

/// `limit` instances from `offset`, newest first, without their data.
pub async fn list(
    conn: &mut PgConnection,
    search: &InstanceSearch<'_>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<InstanceRow>> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT id, process_model_identifier, process_id, status, '{}'::jsonb AS data, \
         '{}'::jsonb AS correlations, '{}'::jsonb AS internal, error, model_version, created_at, \
         updated_at FROM process_instances",
    );
    search.push_where(&mut sql);
    sql.push(" ORDER BY id DESC LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    sql.build_query_as().fetch_all(conn).await
}

/// How many instances [`list`] would show with the same filters, counted up to `up_to` (the
/// total of a huge table is not worth reading it whole on every page).
pub async fn count(
    conn: &mut PgConnection,
    search: &InstanceSearch<'_>,
    up_to: i64,
) -> sqlx::Result<i64> {
    let mut sql = sqlx::QueryBuilder::new("SELECT count(*) FROM (SELECT 1 FROM process_instances");
    search.push_where(&mut sql);
    sql.push(" LIMIT ").push_bind(up_to).push(") AS counted");
    sql.build_query_scalar().fetch_one(conn).await
}

/// How often a service task (of `instance_id`) has had its call retried.
pub async fn retries_attempted(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<i32> {
    Ok(
        sqlx::query_scalar(
            "SELECT retries_attempted FROM tasks WHERE guid = $1 AND shard_key = $2",
        )
        .bind(task_guid)
        .bind(shards::of_instance(instance_id))
        .fetch_optional(conn)
        .await?
        .unwrap_or(0),
    )
}

/// Counts a retry of a service task due after `delay` (the caller puts the task back to
/// READY with the instance); returns when it is due.
pub async fn schedule_retry(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    delay: std::time::Duration,
) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar(
        "UPDATE tasks SET retries_attempted = retries_attempted + 1, \
         retry_at = now() + make_interval(secs => $2), updated_at = now() \
         WHERE guid = $1 AND shard_key = $3 RETURNING retry_at",
    )
    .bind(task_guid)
    .bind(delay.as_secs_f64())
    .bind(shards::of_instance(instance_id))
    .fetch_one(conn)
    .await
}

/// The model an instance runs, if the instance exists.
pub async fn model_of(pool: &sqlx::PgPool, id: InstanceId) -> sqlx::Result<Option<ModelId>> {
    sqlx::query_scalar(
        "SELECT process_model_identifier FROM process_instances WHERE id = $1 AND shard_key = $2",
    )
    .bind(id)
    .bind(shards::of_instance(id))
    .fetch_optional(pool)
    .await
}

/// Moves an instance to another version of its model (the caller holds its lock and has
/// checked that the version can carry its live tasks).
pub async fn set_model_version(
    conn: &mut PgConnection,
    id: InstanceId,
    model_version: &str,
) -> sqlx::Result<DateTime<Utc>> {
    sqlx::query_scalar(
        "UPDATE process_instances SET model_version = $2, updated_at = now() \
         WHERE id = $1 AND shard_key = $3 RETURNING updated_at",
    )
    .bind(id)
    .bind(model_version)
    .bind(shards::of_instance(id))
    .fetch_one(conn)
    .await
}
