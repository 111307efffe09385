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
    /// The database answers; what in its upkeep needs an operator, in words (none when
    /// nothing does).
    Up { warnings: Vec<String> },
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
    let cause = match tokio::time::timeout(READINESS_TIMEOUT, store::autovacuum(pool)).await {
        Ok(Ok(autovacuum)) => {
            return Readiness::Up {
                warnings: upkeep_warnings(&autovacuum),
            }
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {READINESS_TIMEOUT:?}"),
    };
    tracing::warn!(cause, "readiness: the database does not answer");
    Readiness::Unavailable(cause)
}

/// What an operator must hear about the database's upkeep. Without autovacuum nothing is
/// analysed or vacuumed: plans stay those made for empty tables and dead rows pile up, so
/// the service slows as its tables grow.
fn upkeep_warnings(autovacuum: &store::Autovacuum) -> Vec<String> {
    let mut warnings = Vec::new();
    if !autovacuum.runs {
        warnings.push(
            "autovacuum is off on the database (or track_counts is): nothing is analysed or \
             vacuumed, so the service slows as its tables grow; turn it on, or run VACUUM \
             ANALYZE regularly"
                .to_string(),
        );
    }
    if !autovacuum.off_for.is_empty() {
        warnings.push(format!(
            "autovacuum is turned off for the tables {}: they are not analysed or vacuumed",
            autovacuum.off_for.join(", ")
        ));
    }
    warnings
}

/// Logs [`upkeep_warnings`] once, at start (a database that does not answer is reported by
/// what needs it).
pub async fn warn_about_upkeep(pool: &PgPool) {
    if let Ok(autovacuum) = store::autovacuum(pool).await {
        for warning in upkeep_warnings(&autovacuum) {
            tracing::warn!("{warning}");
        }
    }
}
