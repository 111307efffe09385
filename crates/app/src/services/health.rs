//! Readiness: whether this replica can serve requests, as its database lets it.

use std::time::Duration;

use sqlx::PgPool;

use crate::store;
use crate::store::primary::Primary;

/// How long the database may take to answer before the replica counts as not ready.
const READINESS_TIMEOUT: Duration = Duration::from_secs(3);

/// What the database lets this replica do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The database answers.
    Up,
    /// Every connection is open and in use: the database answers, the service is only busy.
    /// (Waiting for a free connection would report saturation as an outage.)
    Busy,
    /// No host takes writes, or the database does not answer; why, in words.
    Unavailable(String),
}

pub async fn readiness(pool: &PgPool, primary: Option<&Primary>) -> Readiness {
    // with several hosts, a pooled connection may still reach one that no longer takes writes
    if primary.is_some_and(|primary| !primary.is_writable()) {
        tracing::warn!("readiness: no database host takes writes");
        return Readiness::Unavailable(
            "no database host takes writes (a failover is under way)".into(),
        );
    }
    if pool.num_idle() == 0 && pool.size() >= pool.options().get_max_connections() {
        return Readiness::Busy;
    }
    let cause = match tokio::time::timeout(READINESS_TIMEOUT, store::ping(pool)).await {
        Ok(Ok(())) => return Readiness::Up,
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {READINESS_TIMEOUT:?}"),
    };
    tracing::warn!(cause, "readiness: the database does not answer");
    Readiness::Unavailable(cause)
}
