//! connector_logs: the `wf__logs` lines connector proxies return.

use crate::shards;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use workflow_types::{InstanceId, TaskGuid};

pub async fn insert(
    conn: &mut PgConnection,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    lines: &[String],
) -> sqlx::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO connector_logs (process_instance_id, task_guid, line, shard_key) \
         SELECT $1, $2, line, $4 FROM UNNEST($3::text[]) AS line",
    )
    .bind(instance_id)
    .bind(task_guid)
    .bind(lines)
    .bind(shards::of_instance(instance_id))
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LogLine {
    pub id: i64,
    pub task_guid: TaskGuid,
    pub line: String,
    pub created_at: DateTime<Utc>,
}

/// A page of an instance's lines, oldest first.
pub async fn of_instance(
    pool: &PgPool,
    instance_id: InstanceId,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<LogLine>> {
    sqlx::query_as(
        "SELECT id, task_guid, line, created_at FROM connector_logs \
         WHERE process_instance_id = $1 AND shard_key = $4 ORDER BY id LIMIT $2 OFFSET $3",
    )
    .bind(instance_id)
    .bind(limit)
    .bind(offset)
    .bind(shards::of_instance(instance_id))
    .fetch_all(pool)
    .await
}

/// How many lines an instance has, counted up to `up_to`.
pub async fn count_of_instance(
    pool: &PgPool,
    instance_id: InstanceId,
    up_to: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM connector_logs \
         WHERE process_instance_id = $1 AND shard_key = $3 LIMIT $2) AS counted",
    )
    .bind(instance_id)
    .bind(up_to)
    .bind(shards::of_instance(instance_id))
    .fetch_one(pool)
    .await
}
