//! Marks buffered messages `cancelled` once their time to live has passed. Correctness does
//! not depend on it (an expired message is never delivered: every lookup checks
//! `expires_at`); it makes the audit list and replays say so.
//!
//! It sleeps until the next expiry (or a wake-up when a message is buffered on this replica,
//! or [`MAX_SLEEP`] for messages buffered on another), and each sweep is an index range scan
//! bounded to [`SWEEP_BATCH`] rows. [`expire_due_once`] is one sweep, for tests to drive.

use crate::store;
use chrono::Utc;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// The longest sleep between sweeps (a message buffered by another replica).
pub const MAX_SLEEP: Duration = Duration::from_secs(5);
/// The shortest sleep between sweeps that found nothing more to do now.
pub const MIN_SLEEP: Duration = Duration::from_millis(50);
/// The most rows one sweep marks; a full batch is followed by another sweep at once.
pub const SWEEP_BATCH: i64 = 1_000;

/// What one sweep did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    pub expired: u64,
    /// When the next buffered message expires, if one is buffered.
    pub next_expiry: Option<chrono::DateTime<Utc>>,
}

pub async fn run(pool: PgPool, buffered: Arc<Notify>, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        let pause = match expire_due_once(&pool, Utc::now()).await {
            Ok(sweep) if sweep.expired as i64 >= SWEEP_BATCH => Duration::ZERO,
            // a deadline already past (it passed during the sweep, or its row was locked by
            // a delivery): look again shortly
            Ok(sweep) => sweep.next_expiry.map_or(MAX_SLEEP, |at| {
                (at - Utc::now())
                    .to_std()
                    .unwrap_or(MIN_SLEEP)
                    .clamp(MIN_SLEEP, MAX_SLEEP)
            }),
            Err(e) => {
                tracing::warn!(error = %e, "message expiry sweep failed");
                MAX_SLEEP
            }
        };
        if pause.is_zero() {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = buffered.notified() => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// One sweep: marks up to [`SWEEP_BATCH`] buffered messages expired as of `now` and says when
/// the next one is due.
///
/// It is the sweep the worker loop ([`run`]) repeats with the wall clock; tests spawn the server
/// with `run_workers = false` and call it directly, with the `now` they need, instead of waiting
/// for the loop.
pub async fn expire_due_once(pool: &PgPool, now: chrono::DateTime<Utc>) -> sqlx::Result<Sweep> {
    let mut conn = pool.acquire().await?;
    let expired = store::messages::expire_due(&mut conn, now, SWEEP_BATCH).await?;
    if expired > 0 {
        tracing::debug!(expired, "buffered messages expired");
    }
    let next_expiry = store::messages::next_expiry(&mut conn).await?;
    Ok(Sweep {
        expired,
        next_expiry,
    })
}
