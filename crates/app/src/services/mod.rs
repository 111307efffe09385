//! Use cases that join the store and the pure engine: one Postgres transaction each.
//! Nothing here knows HTTP; `api` maps [`Error`] to responses.

pub mod api_keys;
pub mod clock;
pub mod data_stores;
pub mod decisions;
pub mod error_code;
pub mod group_commit;
pub mod health;
pub mod input;
pub mod instances;
pub mod lifecycle;
pub mod message_catalog;
pub mod messages;
pub mod model_cache;
pub mod models;
pub mod secrets;
pub mod service_tasks;
pub mod signals;
pub mod stats;
pub mod timers;
mod unit_of_work;

pub use model_cache::{ModelCache, ScriptSite};
pub use unit_of_work::UnitOfWork;

pub use error_code::{ErrorCode, Refusal};
use serde_json::Value;

/// How a use case failed. A refusal carries its `error_code` (which says what kind of
/// refusal it is: the API gives it its HTTP status) and what went wrong; the rest are
/// internal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{detail}")]
    Client {
        code: ErrorCode,
        detail: String,
        extra: Option<Value>,
    },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// No script worker could run a step's Python in time: nothing was done.
    #[error("scripts unavailable: {0}")]
    ScriptsUnavailable(String),
    #[error("{0}")]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// The request is refused with `code`, saying why.
    pub fn refused(code: ErrorCode, detail: impl Into<String>) -> Error {
        Error::Client {
            code,
            detail: detail.into(),
            extra: None,
        }
    }

    /// Adds members to the problem body (merged into it by the API layer).
    pub fn with_extra(self, value: Value) -> Error {
        match self {
            Error::Client { code, detail, .. } => Error::Client {
                code,
                detail,
                extra: Some(value),
            },
            other => other,
        }
    }

    /// The database could not be reached or was saturated: nothing was done.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Database(e) => crate::store::is_unavailable(e),
            Error::ScriptsUnavailable(_) => true,
            _ => false,
        }
    }

    /// A lock waited on too long, a deadlock or a serialization failure: the transaction was
    /// rolled back, whether the statement that failed was a write or its commit.
    pub fn is_lock_conflict(&self) -> bool {
        matches!(self, Error::Database(e) if crate::store::is_lock_conflict(e))
    }

    /// A deadlock or serialization failure: the transaction may be run again as a whole.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Database(e) if crate::store::is_retryable(e))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Which page of a list a use case reads: 1-based page numbers, validated by [`Page::new`]
/// (the only way to make one), so every list is bounded.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    page: i64,
    per_page: i64,
}

impl Page {
    pub const MAX_PER_PAGE: i64 = 500;
    /// Rows a list may skip: deeper pages are refused (OFFSET reads every row it skips), and
    /// totals are counted up to this many rows.
    pub const MAX_ROWS: i64 = 100_000;

    /// `page` from 1 (default 1), `per_page` from 1 to [`Page::MAX_PER_PAGE`] (default 10),
    /// and the page must start within the first [`Page::MAX_ROWS`] rows; otherwise 400
    /// `invalid_query` saying what is wrong.
    pub fn new(page: Option<i64>, per_page: Option<i64>) -> Result<Page> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(10);
        if !(1..=Self::MAX_PER_PAGE).contains(&per_page) {
            return Err(Error::refused(
                ErrorCode::InvalidQuery,
                format!(
                    "per_page must be from 1 to {}, got {per_page}",
                    Self::MAX_PER_PAGE
                ),
            ));
        }
        let last_page = Self::MAX_ROWS / per_page + 1;
        if !(1..=last_page).contains(&page) {
            return Err(Error::refused(
                ErrorCode::InvalidQuery,
                format!(
                    "page must be from 1 to {last_page} with per_page={per_page} (lists show \
                     the first {} rows; narrow them with filters), got {page}",
                    Self::MAX_ROWS
                ),
            ));
        }
        Ok(Page { page, per_page })
    }

    /// Rows to read (`LIMIT`).
    fn limit(&self) -> i64 {
        self.per_page
    }

    /// Rows to skip (`OFFSET`).
    fn offset(&self) -> i64 {
        (self.page - 1) * self.per_page
    }

    /// How far the store counts a list's total: one past the rows a list may show, so
    /// `total_exact` can tell, without reading a huge table whole on every page.
    fn count_up_to(&self) -> i64 {
        Self::MAX_ROWS + 1
    }

    /// Where a page of `count` rows stands among `total` (counted up to [`Page::MAX_ROWS`] + 1).
    fn pagination_of(&self, total: i64, count: usize) -> Pagination {
        Pagination {
            count,
            total,
            total_exact: total <= Self::MAX_ROWS,
            pages: (total + self.per_page - 1) / self.per_page,
        }
    }
}

/// Where a page of a list stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pagination {
    /// Rows on this page.
    pub count: usize,
    /// Rows in the list, counted up to [`Page::MAX_ROWS`] + 1.
    pub total: i64,
    /// Whether `total` is the real number.
    pub total_exact: bool,
    pub pages: i64,
}

/// How often a use case is re-run after a deadlock before giving up.
pub const MAX_ATTEMPTS: usize = 8;

/// Runs a transactional use case again while it fails with a retryable database error.
macro_rules! retry_transaction {
    ($body:expr) => {{
        let mut attempt = 0;
        loop {
            attempt += 1;
            match $body.await {
                Err(e) if e.is_retryable() && attempt < $crate::services::MAX_ATTEMPTS => {
                    tracing::debug!(attempt, "transaction conflict, running it again");
                    continue;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use retry_transaction;

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
        assert!(matches!(
            Page::new(Some(0), None),
            Err(super::Error::Client {
                code: super::ErrorCode::InvalidQuery,
                ..
            })
        ));
    }

    #[test]
    fn a_total_past_the_counted_rows_is_not_exact() {
        let page = Page::new(Some(1), Some(10)).unwrap();
        assert_eq!(page.pagination_of(25, 10).pages, 3);
        assert!(page.pagination_of(25, 10).total_exact);
        assert!(!page.pagination_of(Page::MAX_ROWS + 1, 10).total_exact);
    }
}
