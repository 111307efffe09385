//! secrets: named values scripts read with `get_secret(name)`. Every listing reads names and
//! times only ([`SecretRow`]); values are read by [`all_values`] alone, for the script runtime.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// A secret without its value: what listings and answers show.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SecretRow {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A secret with its value. `Debug` does not show the value.
#[derive(Clone, sqlx::FromRow)]
pub struct SecretValueRow {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for SecretValueRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretValueRow")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// Serialises the writers that create or replace one secret, for the transaction.
pub async fn lock_name(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('secret:' || $1, 0))")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}

/// Creates a secret (the caller holds [`lock_name`] and knows there is none of this name).
pub async fn insert(conn: &mut PgConnection, name: &str, value: &str) -> sqlx::Result<SecretRow> {
    sqlx::query_as(
        "INSERT INTO secrets (name, value) VALUES ($1, $2) RETURNING name, created_at, updated_at",
    )
    .bind(name)
    .bind(value)
    .fetch_one(conn)
    .await
}

/// Replaces the value of an existing secret (`None` when there is none of this name).
pub async fn replace(
    conn: &mut PgConnection,
    name: &str,
    value: &str,
) -> sqlx::Result<Option<SecretRow>> {
    sqlx::query_as(
        "UPDATE secrets SET value = $2, updated_at = now() WHERE name = $1 \
         RETURNING name, created_at, updated_at",
    )
    .bind(name)
    .bind(value)
    .fetch_optional(conn)
    .await
}

/// Deletes a secret; `false` when there was none of this name.
pub async fn delete(conn: &mut PgConnection, name: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM secrets WHERE name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Names and times, by name.
pub async fn list(
    conn: &mut PgConnection,
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<SecretRow>> {
    sqlx::query_as(
        "SELECT name, created_at, updated_at FROM secrets ORDER BY name LIMIT $1 OFFSET $2",
    )
    .bind(limit)
    .bind(offset)
    .fetch_all(conn)
    .await
}

/// How many secrets there are, counted up to `up_to`.
pub async fn count(conn: &mut PgConnection, up_to: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM (SELECT 1 FROM secrets LIMIT $1) AS counted")
        .bind(up_to)
        .fetch_one(conn)
        .await
}

/// Every secret with its value, by name (for the script runtime only).
pub async fn all_values(conn: &mut PgConnection) -> sqlx::Result<Vec<SecretValueRow>> {
    sqlx::query_as("SELECT name, value FROM secrets ORDER BY name")
        .fetch_all(conn)
        .await
}
