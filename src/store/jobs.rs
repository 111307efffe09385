//! jobs: the outbox for connector calls (filled by the service-task work).

use sqlx::PgConnection;
use uuid::Uuid;

pub const CONNECTOR_CALL: &str = "connector_call";

/// Records a connector call for a task (one per task: a retry moves it, not copies it).
pub async fn enqueue_connector_call(
    conn: &mut PgConnection,
    instance_id: i64,
    task_guid: Uuid,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO jobs (kind, process_instance_id, task_guid) VALUES ($1, $2, $3) \
         ON CONFLICT (task_guid, kind) DO UPDATE SET run_at = now(), locked_until = NULL",
    )
    .bind(CONNECTOR_CALL)
    .bind(instance_id)
    .bind(task_guid)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn cancel_for_task(conn: &mut PgConnection, task_guid: Uuid) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE task_guid = $1")
        .bind(task_guid)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn cancel_for_instance(conn: &mut PgConnection, instance_id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM jobs WHERE process_instance_id = $1")
        .bind(instance_id)
        .execute(conn)
        .await?;
    Ok(())
}
