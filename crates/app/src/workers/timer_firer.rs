//! Fires due timers (any number of replicas). It sleeps until the next timer is due, or until
//! a step writes a timer (Postgres `NOTIFY` on [`TIMERS_CHANNEL`], so a timer written by any
//! replica wakes every one), or [`MAX_SLEEP`] if notifications are unavailable; timers that came
//! due while the service was down fire on start. [`fire_due_once`] is one round, for tests to
//! drive with the `now` they need.

use crate::services::timers::{self, FireRound};
use crate::store::timers::{next_due, TIMERS_CHANNEL};
use crate::App;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The longest sleep: a bound on how late a timer fires if a notification is lost.
pub const MAX_SLEEP: Duration = Duration::from_secs(5);
/// Timers one round takes; a full round is followed by another at once.
pub const BATCH: i64 = 100;

pub async fn run(state: Arc<App>, mut shutdown: watch::Receiver<bool>) {
    let mut listener = super::listen(&state, TIMERS_CHANNEL, "timer worker").await;
    let mut listened_at = std::time::Instant::now();
    loop {
        if *shutdown.borrow() {
            return;
        }
        super::relisten(
            &state,
            &mut listener,
            &mut listened_at,
            TIMERS_CHANNEL,
            "timer worker",
        )
        .await;
        let round = fire_due_once(&state, state.models.clock().now()).await;
        if round.claimed as i64 >= BATCH {
            continue;
        }
        let pause = match next_due(&state.pool).await {
            Ok(Some(at)) => (at - Utc::now()).to_std().unwrap_or(Duration::ZERO),
            Ok(None) => MAX_SLEEP,
            Err(e) => {
                tracing::warn!(error = %e, "timer worker: cannot read the next due timer");
                MAX_SLEEP
            }
        }
        .min(MAX_SLEEP);
        if pause.is_zero() {
            // due but claimed by another replica (or failed): look again after a short while
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            woken = super::wake(&mut listener, "timer worker") => {
                if !woken {
                    listener = None;
                }
            }
            _ = shutdown.changed() => {}
        }
    }
}

/// One round: fires the timers due at `now` (up to a batch), each in its own transaction.
///
/// It is the round the worker loop ([`run`]) repeats with the wall clock; tests spawn the
/// server with `run_workers = false` and call it with a `now` past the timers they wait for.
pub async fn fire_due_once(state: &Arc<App>, now: DateTime<Utc>) -> FireRound {
    match timers::fire_due(
        &state.pool,
        &state.models,
        state.traces.as_deref(),
        now,
        BATCH,
    )
    .await
    {
        Ok(round) => round,
        Err(e) => {
            tracing::warn!(error = %e, "timer worker: cannot claim due timers");
            FireRound::default()
        }
    }
}
