//! Marks buffered messages `cancelled` once their time to live has passed. Correctness does
//! not depend on it (an expired message is never delivered: every lookup checks
//! `expires_at`); it makes the audit list and replays say so within a second.

use crate::store;
use sqlx::PgPool;
use std::time::Duration;
use tokio::sync::watch;

pub const SWEEP_INTERVAL: Duration = Duration::from_millis(250);

pub async fn run(pool: PgPool, mut shutdown: watch::Receiver<bool>) {
    let mut interval = tokio::time::interval(SWEEP_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        match pool.acquire().await {
            Ok(mut conn) => match store::messages::expire_due(&mut conn).await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(expired = n, "buffered messages expired"),
                Err(e) => tracing::warn!(error = %e, "message expiry sweep failed"),
            },
            Err(e) => tracing::warn!(error = %e, "message expiry sweep: no connection"),
        }
    }
}
