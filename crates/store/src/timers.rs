//! timers, signal_waits, start_timers and signal_starts: what instances wait for besides
//! messages and people, and the timer and signal start events of models.

use crate::shards;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::time::Duration;
use workflow_types::{InstanceId, ModelId, TaskGuid};

/// Woken when a timer is written: a worker sleeping until a later timer looks again.
pub const TIMERS_CHANNEL: &str = "workflow_backend_timers";

/// Records a timer (the transaction holds the instance's lock) and wakes the timer workers
/// when the transaction commits.
pub async fn insert(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    element_id: &str,
    due_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    if shards::distributed() {
        sqlx::query(
            "INSERT INTO timers (process_instance_id, task_guid, element_id, due_at, shard_key) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT ON CONSTRAINT timers_task_guid_key DO UPDATE SET due_at = EXCLUDED.due_at, \
                 claimed_until = NULL",
        )
        .bind(instance_id)
        .bind(task_guid)
        .bind(element_id)
        .bind(due_at)
        .bind(shards::of_instance(instance_id))
        .execute(&mut *conn)
        .await?;
        return crate::notify(conn, TIMERS_CHANNEL).await;
    }
    sqlx::query(
        "WITH t AS (INSERT INTO timers (process_instance_id, task_guid, element_id, due_at, \
                                        shard_key) \
                    VALUES ($1, $2, $3, $4, $6) \
                    ON CONFLICT ON CONSTRAINT timers_task_guid_key DO UPDATE SET due_at = EXCLUDED.due_at, claimed_until = NULL \
                    RETURNING due_at) \
         SELECT pg_notify($5, '') FROM t",
    )
    .bind(instance_id)
    .bind(task_guid)
    .bind(element_id)
    .bind(due_at)
    .bind(TIMERS_CHANNEL)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn delete_for_task(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM timers WHERE task_guid = $1 AND shard_key = $2")
        .bind(task_guid)
        .bind(shards::of_instance(instance_id))
        .execute(conn)
        .await?;
    Ok(())
}

/// An instance that stopped early (error, terminated): its timers and signal waits go.
pub async fn delete_waits_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<()> {
    let shard = shards::of_instance(instance_id);
    sqlx::query("DELETE FROM timers WHERE process_instance_id = $1 AND shard_key = $2")
        .bind(instance_id)
        .bind(shard)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM signal_waits WHERE process_instance_id = $1 AND shard_key = $2")
        .bind(instance_id)
        .bind(shard)
        .execute(conn)
        .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueTimer {
    pub id: i64,
    pub process_instance_id: InstanceId,
    pub due_at: DateTime<Utc>,
}

/// Claims timers due at `now` (`FOR UPDATE SKIP LOCKED`): replicas take different ones; one
/// whose worker died is taken again after `lease`. The claim only spreads work (firing is
/// made exactly-once by [`take`]), so the caller's transaction may commit it without waiting
/// for the disk ([`claim_transaction`]). Bucket by bucket (Citus locks rows only in
/// single-shard statements), up to `limit` in all.
pub async fn claim_due(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
    lease: Duration,
) -> sqlx::Result<Vec<DueTimer>> {
    let mut claimed: Vec<DueTimer> = Vec::new();
    for shard in shards::all() {
        let room = limit - claimed.len() as i64;
        if room <= 0 {
            break;
        }
        let in_shard: Vec<DueTimer> = sqlx::query_as(
            "UPDATE timers SET claimed_until = $1 + make_interval(secs => $3) \
             WHERE id IN (SELECT id FROM timers WHERE due_at <= $1 AND NOT held \
                            AND shard_key = $4 \
                            AND (claimed_until IS NULL OR claimed_until < $1) \
                          ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
               AND shard_key = $4 \
             RETURNING id, process_instance_id, due_at",
        )
        .bind(now)
        .bind(room)
        .bind(lease.as_secs_f64())
        .bind(shard)
        .fetch_all(&mut *conn)
        .await?;
        claimed.extend(in_shard);
    }
    Ok(claimed)
}

/// A transaction for claims, committed without waiting for the WAL to reach the disk: a claim
/// lost in a crash only means a timer is claimed again.
pub async fn claim_transaction(
    pool: &PgPool,
) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET LOCAL synchronous_commit TO OFF")
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

/// Takes a timer (of `instance_id`) for firing (the transaction holds the instance's lock):
/// its task, or None when it is gone (fired by another worker, or cancelled by a step).
pub async fn take(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    timer_id: i64,
) -> sqlx::Result<Option<TaskGuid>> {
    sqlx::query_scalar("DELETE FROM timers WHERE id = $1 AND shard_key = $2 RETURNING task_guid")
        .bind(timer_id)
        .bind(shards::of_instance(instance_id))
        .fetch_optional(conn)
        .await
}

/// Holds (a suspended instance) or releases (resumed) an instance's timers; a released one due
/// meanwhile fires at once, and the workers are woken to look.
pub async fn hold_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    held: bool,
) -> sqlx::Result<()> {
    if shards::distributed() {
        let released = sqlx::query(
            "UPDATE timers SET held = $2, claimed_until = NULL \
             WHERE process_instance_id = $1 AND shard_key = $3 AND held <> $2",
        )
        .bind(instance_id)
        .bind(held)
        .bind(shards::of_instance(instance_id))
        .execute(&mut *conn)
        .await?;
        if !held && released.rows_affected() > 0 {
            crate::notify(conn, TIMERS_CHANNEL).await?;
        }
        return Ok(());
    }
    sqlx::query(
        "WITH t AS (UPDATE timers SET held = $2, claimed_until = NULL \
                    WHERE process_instance_id = $1 AND shard_key = $4 AND held <> $2 \
                    RETURNING id) \
         SELECT pg_notify($3, '') WHERE NOT $2 AND EXISTS (SELECT 1 FROM t)",
    )
    .bind(instance_id)
    .bind(held)
    .bind(TIMERS_CHANNEL)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// When the next timer or timer start is due (claimed ones included: a worker that dies
/// leaves them due).
pub async fn next_due(pool: &PgPool) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar(
        "SELECT least((SELECT min(due_at) FROM timers WHERE NOT held), \
                      (SELECT min(due_at) FROM start_timers))",
    )
    .fetch_one(pool)
    .await
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct PendingTimer {
    pub task_guid: TaskGuid,
    pub element_id: String,
    pub due_at: DateTime<Utc>,
}

/// An instance's pending timers, soonest first.
pub async fn of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<Vec<PendingTimer>> {
    sqlx::query_as(
        "SELECT task_guid, element_id, due_at FROM timers \
         WHERE process_instance_id = $1 AND shard_key = $2 ORDER BY due_at, id",
    )
    .bind(instance_id)
    .bind(shards::of_instance(instance_id))
    .fetch_all(conn)
    .await
}

pub async fn wait_for_signal(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    signal_name: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO signal_waits (task_guid, process_instance_id, signal_name, shard_key) \
         VALUES ($1, $2, $3, $4) ON CONFLICT ON CONSTRAINT signal_waits_pkey DO NOTHING",
    )
    .bind(task_guid)
    .bind(instance_id)
    .bind(signal_name)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn cancel_signal_wait(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM signal_waits WHERE task_guid = $1 AND shard_key = $2")
        .bind(task_guid)
        .bind(shards::of_instance(instance_id))
        .execute(conn)
        .await?;
    Ok(())
}

/// Instances (other than `except`) with a task waiting for the signal, in id order.
pub async fn instances_waiting_for_signal(
    conn: &mut PgConnection,
    signal_name: &str,
    except: Option<InstanceId>,
) -> sqlx::Result<Vec<InstanceId>> {
    sqlx::query_scalar(
        "SELECT DISTINCT process_instance_id FROM signal_waits \
         WHERE signal_name = $1 AND process_instance_id IS DISTINCT FROM $2 \
         ORDER BY process_instance_id",
    )
    .bind(signal_name)
    .bind(except)
    .fetch_all(conn)
    .await
}

/// Takes the instance's waits for the signal (the transaction holds its lock): whether any
/// was there. None left means another delivery of this signal reached it first.
pub async fn take_signal_waits(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    signal_name: &str,
) -> sqlx::Result<bool> {
    let taken = sqlx::query(
        "DELETE FROM signal_waits \
             WHERE process_instance_id = $1 AND signal_name = $2 AND shard_key = $3",
    )
    .bind(instance_id)
    .bind(signal_name)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(taken.rows_affected() > 0)
}

/// A timer start event's schedule as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StartTimer {
    pub process_model_identifier: ModelId,
    pub start_event_id: String,
    pub process_id: String,
    pub expression: String,
    pub due_at: DateTime<Utc>,
    pub interval_ms: i64,
    pub remaining: Option<i32>,
}

pub async fn start_timers_of(
    conn: &mut PgConnection,
    identifier: &ModelId,
) -> sqlx::Result<Vec<StartTimer>> {
    sqlx::query_as(
        "SELECT process_model_identifier, start_event_id, process_id, expression, due_at, \
                interval_ms, remaining \
         FROM start_timers WHERE process_model_identifier = $1 ORDER BY start_event_id",
    )
    .bind(identifier)
    .fetch_all(conn)
    .await
}

/// Replaces a model's timer start schedule (the caller kept the rows it wants unchanged in
/// `timers`) and signal starts, and wakes the timer workers at commit.
pub async fn replace_starts(
    conn: &mut PgConnection,
    identifier: &ModelId,
    timers: &[StartTimer],
    signals: &[(String, String, String)],
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM start_timers WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    for timer in timers {
        sqlx::query(
            "INSERT INTO start_timers (process_model_identifier, start_event_id, process_id, \
                                       expression, due_at, interval_ms, remaining) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(identifier)
        .bind(&timer.start_event_id)
        .bind(&timer.process_id)
        .bind(&timer.expression)
        .bind(timer.due_at)
        .bind(timer.interval_ms)
        .bind(timer.remaining)
        .execute(&mut *conn)
        .await?;
    }
    if !timers.is_empty() {
        sqlx::query("SELECT pg_notify($1, '')")
            .bind(TIMERS_CHANNEL)
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query("DELETE FROM signal_starts WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    for (signal_name, process_id, start_event_id) in signals {
        sqlx::query(
            "INSERT INTO signal_starts (signal_name, process_model_identifier, process_id, start_event_id) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(signal_name)
        .bind(identifier)
        .bind(process_id)
        .bind(start_event_id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// (model, process id, start event id) of every signal start of this signal, in model order.
pub async fn signal_starts_for(
    conn: &mut PgConnection,
    signal_name: &str,
) -> sqlx::Result<Vec<(ModelId, String, String)>> {
    sqlx::query_as(
        "SELECT process_model_identifier, process_id, start_event_id FROM signal_starts \
         WHERE signal_name = $1 ORDER BY process_model_identifier, start_event_id",
    )
    .bind(signal_name)
    .fetch_all(conn)
    .await
}

/// Claims due timer start events, as [`claim_due`] does for instance timers.
pub async fn claim_due_starts(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
    lease: Duration,
) -> sqlx::Result<Vec<(ModelId, String)>> {
    sqlx::query_as(
        "UPDATE start_timers SET claimed_until = $1 + make_interval(secs => $3) \
         WHERE (process_model_identifier, start_event_id) IN \
               (SELECT process_model_identifier, start_event_id FROM start_timers \
                WHERE due_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1) \
                ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING process_model_identifier, start_event_id",
    )
    .bind(now)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(conn)
    .await
}

/// Locks a timer start for firing: None when it is gone or no longer due at `now` (another
/// worker fired this occurrence, or a new version replaced it).
pub async fn lock_due_start(
    conn: &mut PgConnection,
    identifier: &ModelId,
    start_event_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<Option<StartTimer>> {
    sqlx::query_as(
        "SELECT process_model_identifier, start_event_id, process_id, expression, due_at, \
                interval_ms, remaining \
         FROM start_timers WHERE process_model_identifier = $1 AND start_event_id = $2 \
           AND due_at <= $3 FOR UPDATE",
    )
    .bind(identifier)
    .bind(start_event_id)
    .bind(now)
    .fetch_optional(conn)
    .await
}

/// Moves a fired timer start to its next occurrence, or deletes it after its last.
pub async fn advance_start(
    conn: &mut PgConnection,
    identifier: &ModelId,
    start_event_id: &str,
    next: Option<(DateTime<Utc>, Option<i32>)>,
) -> sqlx::Result<()> {
    match next {
        Some((due_at, remaining)) => {
            sqlx::query(
                "UPDATE start_timers SET due_at = $3, remaining = $4, claimed_until = NULL \
                 WHERE process_model_identifier = $1 AND start_event_id = $2",
            )
            .bind(identifier)
            .bind(start_event_id)
            .bind(due_at)
            .bind(remaining)
            .execute(conn)
            .await?;
        }
        None => {
            sqlx::query(
                "DELETE FROM start_timers WHERE process_model_identifier = $1 AND start_event_id = $2",
            )
            .bind(identifier)
            .bind(start_event_id)
            .execute(conn)
            .await?;
        }
    }
    Ok(())
}
