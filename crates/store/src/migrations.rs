//! The migration history sqlx keeps (`_sqlx_migrations`), where the service must touch it.

use sqlx::PgPool;

/// Replaces the stored checksum of migration `version` by `current` where it is `released`.
/// Nothing to do on a new database (no history table yet) or one already moved.
pub async fn move_checksum(
    pool: &PgPool,
    version: i64,
    released: &[u8],
    current: &[u8],
) -> sqlx::Result<()> {
    let history: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
            .fetch_one(pool)
            .await?;
    if history.is_none() {
        return Ok(());
    }
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $3 WHERE version = $1 AND checksum = $2")
        .bind(version)
        .bind(released)
        .bind(current)
        .execute(pool)
        .await?;
    Ok(())
}
