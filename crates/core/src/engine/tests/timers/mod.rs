//! Timers, event-based gateways, non-interrupting boundaries, signals and escalations.
//!
//! By topic: `catches` (timer catch events and their expressions), `boundaries` (timer,
//! message and escalation boundaries), `races` (event-based gateways, signals), `conditions`
//! (conditional events, links), `event_subprocesses`, `multiple` (events with several
//! definitions).

mod boundaries;
mod catches;
mod conditions;
mod event_subprocesses;
mod multiple;
mod races;

use super::*;
use chrono::Duration;

fn timer_def(kind: &str, expression: &str) -> String {
    format!(
        r#"<bpmn:timerEventDefinition><bpmn:{kind}>{expression}</bpmn:{kind}></bpmn:timerEventDefinition>"#
    )
}

fn timer_catch(id: &str, kind: &str, expression: &str) -> String {
    format!(
        r#"<bpmn:intermediateCatchEvent id="{id}">{}</bpmn:intermediateCatchEvent>"#,
        timer_def(kind, expression)
    )
}

fn started_timers(effects: &[Effect]) -> Vec<(Uuid, String, chrono::DateTime<chrono::Utc>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartTimer {
                task_guid,
                element_id,
                due,
            } => Some((*task_guid, element_id.clone(), *due)),
            _ => None,
        })
        .collect()
}

fn fire(m: &ModelSpec, st: &mut InstanceState, element: &str) -> Vec<Effect> {
    let guid = task(st, element).guid;
    step(m, st, Event::TimerFired { task_guid: guid }).expect("timer fired")
}
