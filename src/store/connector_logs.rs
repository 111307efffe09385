//! connector_logs: the `wf__logs` lines connector proxies return.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub async fn insert(
    conn: &mut PgConnection,
    instance_id: i64,
    task_guid: Uuid,
    lines: &[String],
) -> sqlx::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO connector_logs (process_instance_id, task_guid, line) \
         SELECT $1, $2, line FROM UNNEST($3::text[]) AS line",
    )
    .bind(instance_id)
    .bind(task_guid)
    .bind(lines)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LogLine {
    pub id: i64,
    pub task_guid: Uuid,
    pub line: String,
    pub created_at: DateTime<Utc>,
}

/// An instance's lines, oldest first.
pub async fn of_instance(pool: &PgPool, instance_id: i64) -> sqlx::Result<Vec<LogLine>> {
    sqlx::query_as(
        "SELECT id, task_guid, line, created_at FROM connector_logs \
         WHERE process_instance_id = $1 ORDER BY id",
    )
    .bind(instance_id)
    .fetch_all(pool)
    .await
}
