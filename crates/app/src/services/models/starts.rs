//! A saved version's start events: its timer starts get their next occurrence (evaluated off
//! the async threads when the expression needs Python), its signal starts replace the model's.

use super::save::invalid_model;
use crate::bpmn::{ModelError, ModelSpec};
use crate::ids::ModelId;
use crate::services::{Error, ModelCache, Result};
use crate::store;
use anyhow::anyhow;

/// The version's timer start events get their next occurrence (an unchanged timer keeps the
/// one it had), and its signal starts replace the model's.
pub(super) async fn schedule_starts(
    conn: &mut sqlx::PgConnection,
    cache: &ModelCache,
    identifier: &ModelId,
    spec: &ModelSpec,
) -> Result<()> {
    let existing = store::timers::start_timers_of(conn, identifier).await?;
    let mut timers = vec![];
    for start in &spec.timer_starts {
        let timer = start.timer.clone().expect("a timer start has its timer");
        let source = timer.expression.source().to_string();
        let unchanged = existing.iter().find(|t| {
            t.start_event_id == start.start_event_id
                && t.process_id == start.process_id
                && t.expression == source
        });
        if let Some(kept) = unchanged {
            timers.push(kept.clone());
            continue;
        }
        let cx = crate::services::clock::expr_context(cache);
        let needs_python = timer.expression.needs_python();
        let evaluate = move || crate::engine::first_start_occurrence(&timer, &cx);
        let first = if needs_python {
            tokio::task::spawn_blocking(evaluate)
                .await
                .map_err(|e| Error::Internal(anyhow!("a timer start's thread failed: {e}")))?
        } else {
            evaluate()
        };
        let cycle = first.map_err(|reason| {
            let file = &spec.processes[&start.process_id].file;
            invalid_model(ModelError::new(file, Some(&start.start_event_id), reason))
        })?;
        timers.push(store::timers::StartTimer {
            process_model_identifier: identifier.clone(),
            start_event_id: start.start_event_id.clone(),
            process_id: start.process_id.clone(),
            expression: source,
            due_at: cycle.due,
            interval_ms: cycle.interval_ms,
            remaining: cycle
                .remaining
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        });
    }
    let signals: Vec<(String, String, String)> = spec
        .signal_starts
        .iter()
        .map(|s| {
            (
                s.signal_name
                    .clone()
                    .expect("a signal start has its signal"),
                s.process_id.clone(),
                s.start_event_id.clone(),
            )
        })
        .collect();
    store::timers::replace_starts(conn, identifier, &timers, &signals).await?;
    Ok(())
}
