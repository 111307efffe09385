//! Due timers fire, each in its own transaction: lock the instance, take the timer, step. A
//! replica firing a timer and a step cancelling it (a message won the race, the activity
//! completed) serialise on the instance's lock, and whichever comes second finds the timer
//! gone: a timer fires exactly once, and never after its element was left.

use super::{retry_transaction, ModelCache, Result, UnitOfWork};
use crate::engine::Cycle;
use crate::ids::InstanceId;
use crate::ids::ModelId;
use crate::store::{self, timers::DueTimer};
use crate::telemetry::traces::{KeyValue, SpanScope, Traces};
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use sqlx::PgPool;
use std::time::Duration;

/// A claimed timer whose worker died is taken again after this.
pub const LEASE: Duration = Duration::from_secs(30);
/// Timers of one round fired at the same time (each in its own transaction).
pub const CONCURRENCY: usize = 8;

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

/// Fires up to `limit` timers due at `now`, soonest first; each firing is a `timer fired` span
/// (the first of its trace) when traces are on.
pub async fn fire_due(
    pool: &PgPool,
    cache: &ModelCache,
    traces: Option<&Traces>,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<FireRound> {
    let mut claims = store::timers::claim_transaction(pool).await?;
    let due = store::timers::claim_due(&mut claims, now, limit, LEASE).await?;
    let starts = store::timers::claim_due_starts(&mut claims, now, limit, LEASE).await?;
    claims.commit().await?;
    let mut round = FireRound {
        claimed: due.len() + starts.len(),
        ..FireRound::default()
    };
    for (model, start_event_id) in &starts {
        let span = SpanScope::start(traces, None, "timer fired", || {
            vec![
                KeyValue::new("workflow.process_model", model.to_string()),
                KeyValue::new("workflow.start_event", start_event_id.clone()),
            ]
        });
        let started = span
            .around(async {
                retry_transaction!(fire_start(pool, cache, model, start_event_id, now))
            })
            .await;
        match span.record(started) {
            Ok(Some(_)) => round.fired += 1,
            Ok(None) => {}
            Err(e) => {
                round.failed += 1;
                tracing::error!(model = %model, start_event = %start_event_id, error = %e, "a timer start event could not start its instance; it is tried again when its lease runs out");
            }
        }
    }
    // several at once: each is a short transaction whose commit waits for the disk, and
    // concurrent commits share that wait
    let firing = due.into_iter().map(|timer| async move {
        let span = SpanScope::start(traces, None, "timer fired", || {
            vec![
                KeyValue::new("workflow.instance.id", timer.process_instance_id.0),
                KeyValue::new("workflow.timer.id", timer.id),
            ]
        });
        let outcome = span
            .around(async { retry_transaction!(fire(pool, cache, &timer)) })
            .await;
        let outcome = span.record(outcome);
        (timer, outcome)
    });
    let outcomes: Vec<(DueTimer, Result<bool>)> = stream::iter(firing)
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    for (timer, outcome) in outcomes {
        match outcome {
            Ok(true) => round.fired += 1,
            Ok(false) => {}
            Err(e) => {
                round.failed += 1;
                tracing::error!(timer = timer.id, instance = timer.process_instance_id.0, error = %e, "a due timer could not fire; it is tried again when its lease runs out");
            }
        }
    }
    Ok(round)
}

/// Starts the instance of a due timer start event and moves the timer to its next
/// occurrence, in one transaction (the start timer's row lock makes it once per occurrence
/// across replicas). Occurrences missed while no worker ran are not made up: the next one is
/// the first after `now`. The started instance's id, or None when the occurrence was gone.
async fn fire_start(
    pool: &PgPool,
    cache: &ModelCache,
    model: &ModelId,
    start_event_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<InstanceId>> {
    let mut unit = UnitOfWork::begin(pool, cache).await?;
    let Some(timer) = unit
        .lock_due_start_timer(model, start_event_id, now)
        .await?
    else {
        return Ok(None);
    };
    let id = unit
        .start_instance_at(
            model,
            &timer.process_id,
            &timer.start_event_id,
            Default::default(),
        )
        .await?;
    let mut next = Cycle {
        due: timer.due_at,
        interval_ms: timer.interval_ms,
        remaining: timer.remaining.map(|n| u32::try_from(n).unwrap_or(0)),
    }
    .next();
    if let Some(cycle) = next.as_mut().filter(|c| c.due <= now && c.interval_ms > 0) {
        // skip the occurrences already past, counting them against the repetitions
        let behind = (now - cycle.due).num_milliseconds() / cycle.interval_ms + 1;
        let skipped = u32::try_from(behind).unwrap_or(u32::MAX);
        let ahead = chrono::Duration::milliseconds(cycle.interval_ms.saturating_mul(behind));
        match (cycle.due.checked_add_signed(ahead), cycle.remaining) {
            (None, _) => next = None,
            (Some(_), Some(left)) if left < skipped => next = None,
            (Some(due), remaining) => {
                cycle.due = due;
                cycle.remaining = remaining.map(|left| left - skipped);
            }
        }
    }
    let next = next.map(|c| {
        (
            c.due,
            c.remaining.map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
    });
    unit.advance_start_timer(model, start_event_id, next)
        .await?;
    unit.commit().await?;
    tracing::debug!(
        model = model.as_str(),
        start_event = start_event_id,
        instance = id.0,
        "timer start event fired"
    );
    Ok(Some(id))
}

async fn fire(pool: &PgPool, cache: &ModelCache, timer: &DueTimer) -> Result<bool> {
    let mut unit = UnitOfWork::begin(pool, cache).await?;
    let fired = unit.fire_timer(timer.process_instance_id, timer.id).await?;
    unit.commit().await?;
    if fired {
        let late_ms = (Utc::now() - timer.due_at).num_milliseconds();
        tracing::debug!(
            timer = timer.id,
            instance = timer.process_instance_id.0,
            late_ms,
            "timer fired"
        );
    }
    Ok(fired)
}
