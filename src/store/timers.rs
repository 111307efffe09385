//! timers and signal_waits: what instances wait for besides messages and people.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::time::Duration;
use uuid::Uuid;

/// Woken when a timer is written: a worker sleeping until a later timer looks again.
pub const TIMERS_CHANNEL: &str = "workflow_backend_timers";

/// Records a timer (the transaction holds the instance's lock) and wakes the timer workers
/// when the transaction commits.
pub async fn insert(
    conn: &mut PgConnection,
    instance_id: i64,
    task_guid: Uuid,
    element_id: &str,
    due_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "WITH t AS (INSERT INTO timers (process_instance_id, task_guid, element_id, due_at) \
                    VALUES ($1, $2, $3, $4) \
                    ON CONFLICT (task_guid) DO UPDATE SET due_at = EXCLUDED.due_at, claimed_until = NULL \
                    RETURNING due_at) \
         SELECT pg_notify($5, '') FROM t",
    )
    .bind(instance_id)
    .bind(task_guid)
    .bind(element_id)
    .bind(due_at)
    .bind(TIMERS_CHANNEL)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn delete_for_task(conn: &mut PgConnection, task_guid: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM timers WHERE task_guid = $1")
        .bind(task_guid)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn delete_for_instance(conn: &mut PgConnection, instance_id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM timers WHERE process_instance_id = $1")
        .bind(instance_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM signal_waits WHERE process_instance_id = $1")
        .bind(instance_id)
        .execute(conn)
        .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueTimer {
    pub id: i64,
    pub process_instance_id: i64,
    pub due_at: DateTime<Utc>,
}

/// Claims timers due at `now` (`FOR UPDATE SKIP LOCKED`, in its own short transaction):
/// replicas take different ones; one whose worker died is taken again after `lease`. The
/// claim only spreads work: firing is made exactly-once by [`take`].
pub async fn claim_due(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: i64,
    lease: Duration,
) -> sqlx::Result<Vec<DueTimer>> {
    sqlx::query_as(
        "UPDATE timers SET claimed_until = $1 + make_interval(secs => $3) \
         WHERE id IN (SELECT id FROM timers WHERE due_at <= $1 \
                        AND (claimed_until IS NULL OR claimed_until < $1) \
                      ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING id, process_instance_id, due_at",
    )
    .bind(now)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(pool)
    .await
}

/// Takes a timer for firing (the transaction holds its instance's lock): its task, or None
/// when it is gone (fired by another worker, or cancelled by a step).
pub async fn take(conn: &mut PgConnection, timer_id: i64) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar("DELETE FROM timers WHERE id = $1 RETURNING task_guid")
        .bind(timer_id)
        .fetch_optional(conn)
        .await
}

/// When the next timer is due (claimed ones included: a worker that dies leaves them due).
pub async fn next_due(pool: &PgPool) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar("SELECT min(due_at) FROM timers")
        .fetch_one(pool)
        .await
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct PendingTimer {
    pub task_guid: Uuid,
    pub element_id: String,
    pub due_at: DateTime<Utc>,
}

/// An instance's pending timers, soonest first.
pub async fn of_instance(
    conn: &mut PgConnection,
    instance_id: i64,
) -> sqlx::Result<Vec<PendingTimer>> {
    sqlx::query_as(
        "SELECT task_guid, element_id, due_at FROM timers WHERE process_instance_id = $1 \
         ORDER BY due_at, id",
    )
    .bind(instance_id)
    .fetch_all(conn)
    .await
}

pub async fn wait_for_signal(
    conn: &mut PgConnection,
    instance_id: i64,
    task_guid: Uuid,
    signal_name: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO signal_waits (task_guid, process_instance_id, signal_name) VALUES ($1, $2, $3) \
         ON CONFLICT (task_guid) DO NOTHING",
    )
    .bind(task_guid)
    .bind(instance_id)
    .bind(signal_name)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn cancel_signal_wait(conn: &mut PgConnection, task_guid: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM signal_waits WHERE task_guid = $1")
        .bind(task_guid)
        .execute(conn)
        .await?;
    Ok(())
}

/// Instances (other than `except`) with a task waiting for the signal, in id order.
pub async fn instances_waiting_for_signal(
    conn: &mut PgConnection,
    signal_name: &str,
    except: Option<i64>,
) -> sqlx::Result<Vec<i64>> {
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
    instance_id: i64,
    signal_name: &str,
) -> sqlx::Result<bool> {
    let taken =
        sqlx::query("DELETE FROM signal_waits WHERE process_instance_id = $1 AND signal_name = $2")
            .bind(instance_id)
            .bind(signal_name)
            .execute(conn)
            .await?;
    Ok(taken.rows_affected() > 0)
}
