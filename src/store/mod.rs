//! sqlx queries, one module per table group. Functions take a connection so the caller
//! decides the transaction; nothing here knows HTTP.

pub mod connector_logs;
pub mod instances;
pub mod jobs;
pub mod messages;
pub mod models;

/// Makes the (just begun) transaction read from one snapshot: reads that belong together.
pub async fn read_only_snapshot(conn: &mut sqlx::PgConnection) -> sqlx::Result<()> {
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(conn)
        .await?;
    Ok(())
}

/// A SQLSTATE for which the whole transaction may simply be run again.
pub fn is_retryable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            // serialization_failure, deadlock_detected
            Some("40001") | Some("40P01")
        ),
        _ => false,
    }
}

/// `LIMIT/OFFSET` from 1-based page numbers, bounded.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub page: i64,
    pub per_page: i64,
}

impl Page {
    pub const MAX_PER_PAGE: i64 = 500;

    pub fn new(page: Option<i64>, per_page: Option<i64>) -> Page {
        Page {
            page: page.unwrap_or(1).max(1),
            per_page: per_page.unwrap_or(10).clamp(1, Self::MAX_PER_PAGE),
        }
    }

    pub fn offset(&self) -> i64 {
        (self.page - 1) * self.per_page
    }

    pub fn pagination(&self, total: i64, count: usize) -> serde_json::Value {
        serde_json::json!({
            "count": count,
            "total": total,
            "pages": (total + self.per_page - 1) / self.per_page,
        })
    }
}
