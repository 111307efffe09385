//! Timers: a timer catch event or timer boundary evaluates its expression when it starts
//! waiting (with the task data, at the step's time) and asks the shell for a timer; when the
//! shell says it is due, the catch completes or the boundary fires. A cycle (`timeCycle`) fires
//! once on a catch event or an interrupting boundary, and at each occurrence on a
//! non-interrupting boundary while its activity lives.

use super::boundaries::Fired;
use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::iso8601::{later, parse_datetime, parse_duration, parse_recurrence};
use super::state::Cycle;
use super::{Effect, TaskState};
use crate::bpmn::{ElementSpec, TimerKind, TimerSpec};
use crate::expr::{self, Map};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// The task starts waiting for its timer's first (or only) occurrence.
    pub fn start_timer(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        timer: &'m TimerSpec,
    ) -> Outcome {
        let cycle = self.evaluate_timer(element, timer)?;
        self.wait_for_occurrence(guid, element, cycle);
        Ok(())
    }

    /// The task waits for the occurrence `cycle.due`; the cycle is kept only while more
    /// occurrences follow.
    pub fn wait_for_occurrence(&mut self, guid: Uuid, element: &ElementSpec, cycle: Cycle) {
        self.set_state(guid, TaskState::Waiting);
        self.effects.push(Effect::StartTimer {
            task_guid: guid,
            element_id: element.id.clone(),
            due: cycle.due,
        });
        if cycle.remaining != Some(0) {
            self.state.internal.cycles.insert(guid, cycle);
        }
    }

    /// The shell says the task's timer is due.
    pub fn timer_fired(&mut self, guid: Uuid) -> Outcome {
        let next = self
            .state
            .internal
            .cycles
            .remove(&guid)
            .and_then(|cycle| cycle.next());
        self.fire_trigger(guid, next, Fired::Timer)?;
        self.run_until_waiting()
    }

    /// When the timer is first due, and (for a cycle) what follows.
    pub(super) fn evaluate_timer(
        &self,
        element: &ElementSpec,
        timer: &TimerSpec,
    ) -> Result<Cycle, ModelFailure> {
        let what = format!("timer's {}", timer.kind.element_name());
        let value = self.eval(element, &timer.expression, &what)?;
        occurrences(timer.kind, &value, self.now())
            .map_err(|reason| ModelFailure::new(&element.id, format!("the {what}: {reason}")))
    }
}

/// A timer start event's first occurrence from `cx.now`: its expression is evaluated without
/// task data (there is no instance yet). The error says what is wrong with it.
pub fn first_start_occurrence(timer: &TimerSpec, cx: &expr::Context) -> Result<Cycle, String> {
    let what = timer.kind.element_name();
    let value = timer
        .expression
        .eval(&Map::new(), cx)
        .map_err(|e| format!("the timer's {what}: {e}"))?;
    occurrences(timer.kind, &value, cx.now)
        .map_err(|reason| format!("the timer's {what}: {reason}"))
}

/// The value of a timer's expression as occurrences: when it is first due, and (a cycle)
/// how often after that.
fn occurrences(kind: TimerKind, value: &Value, now: DateTime<Utc>) -> Result<Cycle, String> {
    match kind {
        TimerKind::Cycle => {
            let text = value.as_str().ok_or_else(|| {
                format!("{value} is not an ISO 8601 recurring interval (\"R3/PT10M\")")
            })?;
            let recurrence = parse_recurrence(text, now)?;
            if recurrence.repetitions == Some(0) {
                return Err(format!("'{text}' never fires (0 repetitions)"));
            }
            if recurrence.repetitions.is_none() && recurrence.interval < Duration::seconds(1) {
                // it would keep the timer worker busy for as long as the element lives
                return Err(format!(
                    "'{text}' repeats for ever less than a second apart; give it a number of repetitions (R5/...) or a longer interval"
                ));
            }
            Ok(Cycle {
                due: recurrence.first,
                interval_ms: recurrence.interval.num_milliseconds(),
                remaining: recurrence.repetitions.map(|n| n - 1),
            })
        }
        TimerKind::Date | TimerKind::Duration => Ok(Cycle {
            due: point_in_time(value, now)?,
            interval_ms: 0,
            remaining: Some(0),
        }),
    }
}

impl Cycle {
    /// The occurrence after this one, if any.
    pub fn next(&self) -> Option<Cycle> {
        if self.remaining == Some(0) {
            return None;
        }
        // a cycle that would run past the year 9999 ends there
        let due = later(self.due, Duration::milliseconds(self.interval_ms)).ok()?;
        Some(Cycle {
            due,
            interval_ms: self.interval_ms,
            remaining: self.remaining.map(|n| n - 1),
        })
    }
}

impl TimerKind {
    fn element_name(self) -> &'static str {
        match self {
            TimerKind::Date => "timeDate",
            TimerKind::Duration => "timeDuration",
            TimerKind::Cycle => "timeCycle",
        }
    }
}

/// A `timeDate` or `timeDuration` value: an ISO 8601 date-time or duration string, or a
/// `datetime` / `date` / `timedelta` (as the script host tags them).
fn point_in_time(value: &Value, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Some(text) = value.as_str() {
        let trimmed = text.trim_start();
        return if trimmed.starts_with(['P', 'p', 'T', 't']) {
            let duration = parse_duration(trimmed)?.from(now)?;
            later(now, duration)
        } else {
            parse_datetime(trimmed)
        };
    }
    match value.get("__type__").and_then(Value::as_str) {
        Some("datetime" | "date") => {
            parse_datetime(value["value"].as_str().unwrap_or_default())
        }
        Some("timedelta") => {
            let part = |name: &str| value[name].as_i64().unwrap_or(0);
            let out_of_range = || format!("{value} is out of range");
            let delta = Duration::try_days(part("days"))
                .and_then(|d| d.checked_add(&Duration::try_seconds(part("seconds"))?))
                .and_then(|d| d.checked_add(&Duration::microseconds(part("microseconds"))))
                .ok_or_else(out_of_range)?;
            later(now, delta)
        }
        _ => Err(format!(
            "{value} is neither an ISO 8601 string (\"PT1H\", \"2026-12-01T09:00:00Z\") nor a datetime or timedelta"
        )),
    }
}
