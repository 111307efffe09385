//! api_keys: machine clients' keys, stored as SHA-256 hashes.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

/// A key as listings show it: never the token or its hash.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApiKeyRow {
    pub name: String,
    pub prefix: String,
    pub scopes: String,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str =
    "name, prefix, scopes, created_by, created_at, expires_at, revoked_at, last_used_at";

pub struct NewApiKey<'a> {
    pub name: &'a str,
    pub key_hash: &'a str,
    pub prefix: &'a str,
    pub scopes: &'a str,
    pub created_by: Option<&'a str>,
    pub expires_in_days: Option<u32>,
}

/// `None` when an active key already has this name.
pub async fn insert(
    conn: &mut PgConnection,
    key: &NewApiKey<'_>,
) -> sqlx::Result<Option<ApiKeyRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO api_keys (name, key_hash, prefix, scopes, created_by, expires_at) \
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(days => $6)) \
         ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING {COLUMNS}"
    )))
    .bind(key.name)
    .bind(key.key_hash)
    .bind(key.prefix)
    .bind(key.scopes)
    .bind(key.created_by)
    .bind(key.expires_in_days.map(|d| d as i32))
    .fetch_optional(conn)
    .await
}

/// Active keys first (newest first), then revoked ones.
pub async fn list(pool: &PgPool) -> sqlx::Result<Vec<ApiKeyRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM api_keys \
         ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC"
    )))
    .fetch_all(pool)
    .await
}

/// Revokes the active key of this name; `None` when there is none.
pub async fn revoke(pool: &PgPool, name: &str) -> sqlx::Result<Option<ApiKeyRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL \
         RETURNING {COLUMNS}"
    )))
    .bind(name)
    .fetch_optional(pool)
    .await
}

/// The name and scopes of the usable key with this hash (not revoked, not expired), recording
/// its use when the last one recorded is a minute old or more: one round trip, and a write at
/// most once a minute per key.
pub async fn authenticate(pool: &PgPool, key_hash: &str) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as(
        "WITH k AS (SELECT id, name, scopes, last_used_at FROM api_keys \
             WHERE key_hash = $1 AND revoked_at IS NULL \
               AND (expires_at IS NULL OR expires_at > now())), \
         used AS (UPDATE api_keys SET last_used_at = now() FROM k \
             WHERE api_keys.id = k.id \
               AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')) \
         SELECT name, scopes FROM k",
    )
    .bind(key_hash)
    .fetch_optional(pool)
    .await
}
