//! Use cases that join the store and the pure engine: one Postgres transaction each.
//! Nothing here knows HTTP; `api` maps [`Error`] to responses.

mod clock;
pub mod input;
pub mod instances;
pub mod messages;
pub mod model_cache;
pub mod models;
pub mod service_tasks;
mod unit_of_work;

pub use model_cache::ModelCache;
pub use unit_of_work::UnitOfWork;

use serde_json::Value;

/// How a use case failed. Client errors carry the HTTP status and the `error_code` that
/// clients of the reference implementation read; the rest are internal.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{detail}")]
    Client {
        status: u16,
        code: &'static str,
        detail: String,
        extra: Option<Value>,
    },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("{0}")]
    Internal(#[from] anyhow::Error),
}

impl Error {
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Error {
        Error::Client {
            status: 400,
            code,
            detail: detail.into(),
            extra: None,
        }
    }

    pub fn not_found(code: &'static str, detail: impl Into<String>) -> Error {
        Error::Client {
            status: 404,
            code,
            detail: detail.into(),
            extra: None,
        }
    }

    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Error {
        Error::Client {
            status: 409,
            code,
            detail: detail.into(),
            extra: None,
        }
    }

    /// Adds members to the problem body (merged into it by the API layer).
    pub fn with_extra(self, value: Value) -> Error {
        match self {
            Error::Client {
                status,
                code,
                detail,
                ..
            } => Error::Client {
                status,
                code,
                detail,
                extra: Some(value),
            },
            other => other,
        }
    }

    /// The database could not be reached or was saturated: nothing was done.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Database(e) if crate::store::is_unavailable(e))
    }

    /// A deadlock or serialization failure: the transaction may be run again as a whole.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Database(e) if crate::store::is_retryable(e))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

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
