//! Due timers fire, each in its own transaction: lock the instance, take the timer, step. A
//! replica firing a timer and a step cancelling it (a message won the race, the activity
//! completed) serialise on the instance's lock, and whichever comes second finds the timer
//! gone: a timer fires exactly once, and never after its element was left.

use super::{retry_transaction, ModelCache, Result, UnitOfWork};
use crate::store::{self, timers::DueTimer};
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use std::time::Duration;

/// A claimed timer whose worker died is taken again after this.
pub const LEASE: Duration = Duration::from_secs(30);

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FireRound {
    /// Due timers taken by this round.
    pub claimed: usize,
    /// Of those, the ones that stepped their instance (the others were gone: fired by another
    /// replica, or cancelled by a step meanwhile).
    pub fired: usize,
    /// Failed to fire (logged); they are due again when their lease runs out.
    pub failed: usize,
}

/// Fires up to `limit` timers due at `now`, soonest first.
pub async fn fire_due(
    pool: &PgPool,
    cache: &ModelCache,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<FireRound> {
    let due = store::timers::claim_due(pool, now, limit, LEASE).await?;
    let mut round = FireRound {
        claimed: due.len(),
        ..FireRound::default()
    };
    for timer in &due {
        match retry_transaction!(fire(pool, cache, timer)) {
            Ok(true) => round.fired += 1,
            Ok(false) => {}
            Err(e) => {
                round.failed += 1;
                tracing::error!(timer = timer.id, instance = timer.process_instance_id, error = %e, "a due timer could not fire; it is tried again when its lease runs out");
            }
        }
    }
    Ok(round)
}

async fn fire(pool: &PgPool, cache: &ModelCache, timer: &DueTimer) -> Result<bool> {
    let mut unit = UnitOfWork::begin(pool, cache).await?;
    let fired = unit.fire_timer(timer.process_instance_id, timer.id).await?;
    unit.commit().await?;
    if fired {
        let late_ms = (Utc::now() - timer.due_at).num_milliseconds();
        tracing::debug!(
            timer = timer.id,
            instance = timer.process_instance_id,
            late_ms,
            "timer fired"
        );
    }
    Ok(fired)
}
