//! jobs: the outbox for connector calls (filled by the service-task work).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::time::Duration;
use workflow_types::{InstanceId, TaskGuid};

pub const CONNECTOR_CALL: &str = "connector_call";

/// Notified when a connector call is recorded (at commit): dispatchers of every replica wake.
pub const JOBS_CHANNEL: &str = "workflow_backend_jobs";

/// Records a connector call for a task, due at `run_at` (now when `None`), and wakes the
/// dispatchers when the transaction commits. One job per task: a retry moves it, not copies it.
/// `traceparent`: the trace the call continues, when the step that scheduled it is traced.
pub async fn enqueue_connector_call(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    run_at: Option<DateTime<Utc>>,
    traceparent: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "WITH j AS (INSERT INTO jobs (kind, process_instance_id, task_guid, run_at, traceparent) \
                    VALUES ($1, $2, $3, COALESCE($4, now()), $6) \
                    ON CONFLICT (task_guid, kind) DO UPDATE SET run_at = EXCLUDED.run_at, \
                    locked_until = NULL, attempts = jobs.attempts + 1, leases = 0, \
                    traceparent = EXCLUDED.traceparent \
                    RETURNING 1) \
         SELECT pg_notify($5, '') FROM j",
    )
    .bind(CONNECTOR_CALL)
    .bind(instance_id)
    .bind(task_guid)
    .bind(run_at)
    .bind(JOBS_CHANNEL)
    .bind(traceparent)
    .execute(conn)
    .await?;
    Ok(())
}

/// When the next job that is not running or held comes due (a retry waiting out its backoff,
/// a lease running out); `None` when there is none.
pub async fn next_due(pool: &PgPool) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar(
        "SELECT min(greatest(run_at, coalesce(locked_until, run_at))) FROM jobs \
         WHERE kind = $1 AND NOT held",
    )
    .bind(CONNECTOR_CALL)
    .fetch_one(pool)
    .await
}

/// How many jobs are due and wait for a dispatcher (not running, not held), counted up to
/// `up_to`: the backlog.
pub async fn count_waiting(pool: &PgPool, up_to: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE kind = $1 AND NOT held \
             AND run_at <= now() AND (locked_until IS NULL OR locked_until < now()) \
             LIMIT $2) AS due",
    )
    .bind(CONNECTOR_CALL)
    .bind(up_to)
    .fetch_one(pool)
    .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Job {
    pub id: i64,
    pub process_instance_id: InstanceId,
    pub task_guid: TaskGuid,
    /// Times the job has been leased since it was scheduled, this lease included: above 1, an
    /// earlier dispatcher took it and never recorded an answer.
    pub leases: i32,
    /// The trace the call continues (W3C `traceparent`), when its step was traced.
    pub traceparent: Option<String>,
}

/// Leases due connector calls (`FOR UPDATE SKIP LOCKED`): replicas never take the same one;
/// a job whose worker died is taken again when its lease runs out.
pub async fn claim_due(pool: &PgPool, limit: i64, lease: Duration) -> sqlx::Result<Vec<Job>> {
    sqlx::query_as(
        "UPDATE jobs SET locked_until = now() + make_interval(secs => $3), leases = leases + 1 \
         WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND run_at <= now() AND NOT held \
                        AND (locked_until IS NULL OR locked_until < now()) \
                      ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING id, process_instance_id, task_guid, leases, traceparent",
    )
    .bind(CONNECTOR_CALL)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(pool)
    .await
}

pub async fn cancel_for_task(conn: &mut PgConnection, task_guid: TaskGuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE task_guid = $1")
        .bind(task_guid)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn cancel_for_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE process_instance_id = $1")
        .bind(instance_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Holds (a suspended instance) or releases (resumed) an instance's connector calls. A call
/// released after its time is made at once; a held one that a dispatcher had already leased
/// is given back by [`requeue`] instead of being applied.
pub async fn hold_of_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    held: bool,
) -> sqlx::Result<()> {
    // released calls wake the dispatchers, as new ones do
    sqlx::query(
        "WITH j AS (UPDATE jobs SET held = $2 WHERE process_instance_id = $1 AND held <> $2 \
                    RETURNING 1) \
         SELECT pg_notify($3, '') WHERE NOT $2 AND EXISTS (SELECT 1 FROM j)",
    )
    .bind(instance_id)
    .bind(held)
    .bind(JOBS_CHANNEL)
    .execute(conn)
    .await?;
    Ok(())
}

/// A leased call of a suspended instance goes back to wait for the resume, to be made then
/// (its lease does not count: nothing was lost).
pub async fn requeue(conn: &mut PgConnection, task_guid: TaskGuid) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET locked_until = NULL, leases = 0 WHERE task_guid = $1")
        .bind(task_guid)
        .execute(conn)
        .await?;
    Ok(())
}

/// Gives a leased job back at once (its run panicked): the lease still counts.
pub async fn release(pool: &PgPool, job_id: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET locked_until = NULL WHERE id = $1")
        .bind(job_id)
        .execute(pool)
        .await?;
    Ok(())
}
