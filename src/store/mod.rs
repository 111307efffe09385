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

/// The database cannot be reached, is shutting down or refuses connections, or every pool
/// connection stayed busy: nothing was done, and the same request may succeed shortly.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => e.code().is_some_and(|code| {
            // 08: connection exception; 57P01-03: admin or crash shutdown, cannot connect now;
            // 53300: too many connections
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
        }),
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
    /// Rows a list may skip: deeper pages are refused (OFFSET reads every row it skips), and
    /// totals are counted up to this many rows.
    pub const MAX_ROWS: i64 = 100_000;

    /// `page` from 1 (default 1), `per_page` from 1 to [`Page::MAX_PER_PAGE`] (default 10),
    /// and the page must start within the first [`Page::MAX_ROWS`] rows; otherwise what is
    /// wrong, for a 400.
    pub fn new(page: Option<i64>, per_page: Option<i64>) -> Result<Page, String> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(10);
        if !(1..=Self::MAX_PER_PAGE).contains(&per_page) {
            return Err(format!(
                "per_page must be from 1 to {}, got {per_page}",
                Self::MAX_PER_PAGE
            ));
        }
        let last_page = Self::MAX_ROWS / per_page + 1;
        if !(1..=last_page).contains(&page) {
            return Err(format!(
                "page must be from 1 to {last_page} with per_page={per_page} (lists show the \
                 first {} rows; narrow them with filters), got {page}",
                Self::MAX_ROWS
            ));
        }
        Ok(Page { page, per_page })
    }

    pub fn offset(&self) -> i64 {
        (self.page - 1) * self.per_page
    }

    /// `{count, total, pages}`; `total` counts at most [`Page::MAX_ROWS`] + 1 rows, and
    /// `total_exact` says whether it is the real number.
    pub fn pagination(&self, total: i64, count: usize) -> serde_json::Value {
        serde_json::json!({
            "count": count,
            "total": total,
            "total_exact": total <= Self::MAX_ROWS,
            "pages": (total + self.per_page - 1) / self.per_page,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Page;

    #[test]
    fn pages_start_within_the_rows_a_list_shows() {
        assert!(Page::new(None, None).is_ok());
        assert!(Page::new(Some(201), Some(500)).is_ok());
        assert!(Page::new(Some(202), Some(500)).is_err());
        assert!(Page::new(Some(100_001), Some(1)).is_ok());
        assert!(Page::new(Some(i64::MAX), Some(100)).is_err());
        assert!(Page::new(Some(0), None).is_err());
        assert!(Page::new(Some(1), Some(501)).is_err());
        assert!(Page::new(Some(1), Some(0)).is_err());
    }

    #[test]
    fn a_total_past_the_counted_rows_is_not_exact() {
        let page = Page::new(Some(1), Some(10)).unwrap();
        assert_eq!(page.pagination(25, 10)["pages"], 3);
        assert_eq!(page.pagination(25, 10)["total_exact"], true);
        assert_eq!(
            page.pagination(Page::MAX_ROWS + 1, 10)["total_exact"],
            false
        );
    }
}
