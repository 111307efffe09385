//! jobs: the outbox for connector calls (filled by the service-task work).

use crate::shards;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::time::Duration;
use workflow_types::{task_state, InstanceId, TaskGuid};

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
    upsert_call(conn, instance_id, task_guid, run_at, traceparent, None).await?;
    Ok(())
}

/// Records a connector call due now already leased for `lease` by the caller (the replica whose
/// step scheduled it makes it after its commit, without a claim): no dispatcher is woken, and
/// another replica takes it only if the lease runs out. The job as [`claim_due`] would give it.
pub async fn enqueue_leased_call(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    traceparent: Option<&str>,
    lease: Duration,
) -> sqlx::Result<Job> {
    upsert_call(conn, instance_id, task_guid, None, traceparent, Some(lease)).await
}

/// A connector call due now, leased for `lease_seconds` by the replica whose unit of work
/// records it, written with that unit's instances ([`crate::instances::update_all`]) as
/// [`enqueue_leased_call`] writes it alone.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LeasedCall {
    pub process_instance_id: InstanceId,
    pub task_guid: TaskGuid,
    pub traceparent: Option<String>,
    pub lease_seconds: f64,
    pub shard_key: shards::ShardKey,
}

impl LeasedCall {
    pub fn new(
        instance_id: InstanceId,
        task_guid: TaskGuid,
        traceparent: Option<&str>,
        lease: Duration,
    ) -> LeasedCall {
        LeasedCall {
            process_instance_id: instance_id,
            task_guid,
            traceparent: traceparent.map(str::to_string),
            lease_seconds: lease.as_secs_f64(),
            shard_key: shards::of_instance(instance_id),
        }
    }

    /// Its job once written as row `id` (its first lease).
    pub fn job(&self, id: i64) -> Job {
        Job {
            id,
            process_instance_id: self.process_instance_id,
            task_guid: self.task_guid,
            leases: 1,
            traceparent: self.traceparent.clone(),
        }
    }
}

/// [`upsert_call`] on Citus, without the announcement ($1 kind, $2 instance, $3 task, $4 run
/// at, $5 traceparent, $6 lease, $7 key).
const UPSERT_CALL: &str = "INSERT INTO jobs (kind, process_instance_id, task_guid, run_at, \
         traceparent, locked_until, leases, shard_key) \
     VALUES ($1, $2, $3, COALESCE($4, now()), $5, now() + make_interval(secs => $6), \
             CASE WHEN $6::float8 IS NULL THEN 0 ELSE 1 END, $7) \
     ON CONFLICT ON CONSTRAINT jobs_one_per_task DO UPDATE SET run_at = EXCLUDED.run_at, \
         locked_until = EXCLUDED.locked_until, attempts = jobs.attempts + 1, \
         leases = EXCLUDED.leases, accepted_at = NULL, traceparent = EXCLUDED.traceparent \
     RETURNING id, process_instance_id, task_guid, leases, traceparent";

/// The job row of a task's connector call, inserted or moved (a retry), unleased (and
/// announced on [`JOBS_CHANNEL`]) or leased (`leases` 1, as a claim leaves it).
async fn upsert_call(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    run_at: Option<DateTime<Utc>>,
    traceparent: Option<&str>,
    lease: Option<Duration>,
) -> sqlx::Result<Job> {
    if shards::distributed() {
        let job = sqlx::query_as(UPSERT_CALL)
            .bind(CONNECTOR_CALL)
            .bind(instance_id)
            .bind(task_guid)
            .bind(run_at)
            .bind(traceparent)
            .bind(lease.map(|lease| lease.as_secs_f64()))
            .bind(shards::of_instance(instance_id))
            .fetch_one(&mut *conn)
            .await?;
        if lease.is_none() {
            crate::notify(conn, JOBS_CHANNEL).await?;
        }
        return Ok(job);
    }
    sqlx::query_as(
        "WITH j AS (INSERT INTO jobs (kind, process_instance_id, task_guid, run_at, traceparent, \
                                      locked_until, leases, shard_key) \
                    VALUES ($1, $2, $3, COALESCE($4, now()), $6, \
                            now() + make_interval(secs => $7), \
                            CASE WHEN $7::float8 IS NULL THEN 0 ELSE 1 END, $8) \
                    ON CONFLICT ON CONSTRAINT jobs_one_per_task DO UPDATE SET run_at = EXCLUDED.run_at, \
                    locked_until = EXCLUDED.locked_until, attempts = jobs.attempts + 1, \
                    leases = EXCLUDED.leases, accepted_at = NULL, \
                    traceparent = EXCLUDED.traceparent \
                    RETURNING id, process_instance_id, task_guid, leases, traceparent) \
         SELECT id, process_instance_id, task_guid, leases, traceparent, \
                (SELECT count(*) FROM (SELECT pg_notify($5, '') WHERE $7::float8 IS NULL) n) \
                  AS announced \
         FROM j",
    )
    .bind(CONNECTOR_CALL)
    .bind(instance_id)
    .bind(task_guid)
    .bind(run_at)
    .bind(JOBS_CHANNEL)
    .bind(traceparent)
    .bind(lease.map(|lease| lease.as_secs_f64()))
    .bind(shards::of_instance(instance_id))
    .fetch_one(conn)
    .await
}

/// When the next job that is not running or held comes due (a retry waiting out its backoff,
/// a lease running out); `None` when there is none.
pub async fn next_due(pool: &PgPool) -> sqlx::Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar(
        "SELECT min(greatest(run_at, coalesce(locked_until, run_at))) FROM jobs \
         WHERE kind = $1 AND NOT held AND accepted_at IS NULL",
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
             AND accepted_at IS NULL AND run_at <= now() \
             AND (locked_until IS NULL OR locked_until < now()) LIMIT $2) AS due",
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
/// a job whose worker died is taken again when its lease runs out. Bucket by bucket (Citus
/// locks rows only in single-shard statements), up to `limit` in all.
pub async fn claim_due(pool: &PgPool, limit: i64, lease: Duration) -> sqlx::Result<Vec<Job>> {
    let mut claimed: Vec<Job> = Vec::new();
    for shard in shards::all() {
        let room = limit - claimed.len() as i64;
        if room <= 0 {
            break;
        }
        let in_shard: Vec<Job> = sqlx::query_as(
            "UPDATE jobs SET locked_until = now() + make_interval(secs => $3), \
                 leases = leases + 1 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND run_at <= now() AND NOT held \
                            AND accepted_at IS NULL AND shard_key = $4 \
                            AND (locked_until IS NULL OR locked_until < now()) \
                          ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
               AND shard_key = $4 \
             RETURNING id, process_instance_id, task_guid, leases, traceparent",
        )
        .bind(CONNECTOR_CALL)
        .bind(room)
        .bind(lease.as_secs_f64())
        .bind(shard)
        .fetch_all(pool)
        .await?;
        claimed.extend(in_shard);
    }
    Ok(claimed)
}

/// What recording a proxy's 202 on its job found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acceptance {
    /// The job is marked accepted (never due again) and its task's row says STARTED.
    Recorded,
    /// The job is gone: its task's callback came first, or the task ended.
    Gone,
    /// The job is there but held (its instance suspended) or re-scheduled: the caller applies
    /// the answer with the instance locked instead.
    NotRecorded,
}

/// [`record_acceptance`]'s statement ($1 the job, $2 its instance, $3 its task, $4 the
/// 202's log lines, $5 the shard key). It takes the job's row, then the task's: the order of
/// the write-back (`workflow_write_instances` writes jobs before tasks), so that a callback
/// that comes meanwhile waits for it rather than deadlocking with it.
pub const RECORD_ACCEPTANCE: &str = concat!(
    "WITH j AS (UPDATE jobs SET accepted_at = now(), locked_until = NULL \
                    WHERE id = $1 AND task_guid = $3 AND shard_key = $5 AND NOT held \
                      AND accepted_at IS NULL AND locked_until IS NOT NULL \
                    RETURNING task_guid), \
              t AS (UPDATE tasks SET state = '",
    task_state!(Started),
    // the task by its key, not joined to the job: a join's generic plan, made while the
    // tables were empty, scanned every task
    "', updated_at = now() WHERE tasks.guid = $3 AND tasks.shard_key = $5 \
                    AND EXISTS (SELECT 1 FROM j) AND tasks.state = '",
    task_state!(Ready),
    "' RETURNING 1), \
              gone AS (SELECT NOT EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND shard_key = $5) \
                       AS gone), \
              l AS (INSERT INTO connector_logs (process_instance_id, task_guid, line, shard_key) \
                    SELECT $2, $3, line, $5 FROM unnest($4::text[]) AS line \
                    WHERE (EXISTS (SELECT 1 FROM j) OR (SELECT gone FROM gone)) \
                      AND EXISTS (SELECT 1 FROM process_instances \
                                  WHERE id = $2 AND shard_key = $5) \
                    RETURNING 1) \
         SELECT EXISTS (SELECT 1 FROM j), (SELECT gone FROM gone)"
);

/// Records a proxy's 202 for a leased job in one statement, without locking its instance:
/// the job stays (for the callback, or the task's end, to remove) but is never due again, the
/// task's row says STARTED, and the proxy's log lines are kept (unless the caller is to apply
/// the answer with the instance, which keeps them then). The instance's state follows when it
/// is next loaded (`accepted_calls` of [`crate::instances::LockedInstance`]).
pub async fn record_acceptance(
    pool: &PgPool,
    job_id: i64,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    logs: &[String],
) -> sqlx::Result<Acceptance> {
    let (recorded, gone): (bool, bool) = sqlx::query_as(RECORD_ACCEPTANCE)
        .bind(job_id)
        .bind(instance_id)
        .bind(task_guid)
        .bind(logs)
        .bind(shards::of_instance(instance_id))
        .fetch_one(pool)
        .await?;
    Ok(match (recorded, gone) {
        (true, _) => Acceptance::Recorded,
        (false, true) => Acceptance::Gone,
        (false, false) => Acceptance::NotRecorded,
    })
}

pub async fn cancel_for_task(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE task_guid = $1 AND shard_key = $2")
        .bind(task_guid)
        .bind(shards::of_instance(instance_id))
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn cancel_for_instance(
    conn: &mut PgConnection,
    instance_id: InstanceId,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE process_instance_id = $1 AND shard_key = $2")
        .bind(instance_id)
        .bind(shards::of_instance(instance_id))
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
    if shards::distributed() {
        let released = sqlx::query(
            "UPDATE jobs SET held = $2 \
             WHERE process_instance_id = $1 AND shard_key = $3 AND held <> $2",
        )
        .bind(instance_id)
        .bind(held)
        .bind(shards::of_instance(instance_id))
        .execute(&mut *conn)
        .await?;
        if !held && released.rows_affected() > 0 {
            crate::notify(conn, JOBS_CHANNEL).await?;
        }
        return Ok(());
    }
    sqlx::query(
        "WITH j AS (UPDATE jobs SET held = $2 \
                    WHERE process_instance_id = $1 AND shard_key = $4 AND held <> $2 \
                    RETURNING 1) \
         SELECT pg_notify($3, '') WHERE NOT $2 AND EXISTS (SELECT 1 FROM j)",
    )
    .bind(instance_id)
    .bind(held)
    .bind(JOBS_CHANNEL)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// A leased call of a suspended instance goes back to wait for the resume, to be made then
/// (its lease does not count: nothing was lost).
pub async fn requeue(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET locked_until = NULL, leases = 0 WHERE task_guid = $1 AND shard_key = $2",
    )
    .bind(task_guid)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives back a job leased at its insert that its replica's dispatcher could not take (it was
/// stopping): due again at once, announced, its lease not counted (no call was made).
pub async fn give_back(pool: &PgPool, job: &Job) -> sqlx::Result<()> {
    if shards::distributed() {
        let mut tx = pool.begin().await?;
        let given = sqlx::query(
            "UPDATE jobs SET locked_until = NULL, leases = greatest(leases - 1, 0) \
             WHERE id = $1 AND shard_key = $2 AND accepted_at IS NULL",
        )
        .bind(job.id)
        .bind(shards::of_instance(job.process_instance_id))
        .execute(&mut *tx)
        .await?;
        if given.rows_affected() > 0 {
            crate::notify(&mut tx, JOBS_CHANNEL).await?;
        }
        return tx.commit().await;
    }
    sqlx::query(
        "WITH j AS (UPDATE jobs SET locked_until = NULL, leases = greatest(leases - 1, 0) \
                    WHERE id = $1 AND shard_key = $3 AND accepted_at IS NULL RETURNING 1) \
         SELECT pg_notify($2, '') FROM j",
    )
    .bind(job.id)
    .bind(JOBS_CHANNEL)
    .bind(shards::of_instance(job.process_instance_id))
    .execute(pool)
    .await?;
    Ok(())
}

/// Gives a leased job back at once (its run panicked): the lease still counts.
pub async fn release(pool: &PgPool, job: &Job) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET locked_until = NULL WHERE id = $1 AND shard_key = $2")
        .bind(job.id)
        .bind(shards::of_instance(job.process_instance_id))
        .execute(pool)
        .await?;
    Ok(())
}
