//! The engine's step function: (ModelSpec, InstanceState, Event, StepContext) ->
//! (InstanceState, Effects). Pure: the time and new task ids come in the `StepContext`.
//!
//! One shared data map per instance (each instance of a multi-instance activity works on a
//! copy of its own). A step runs every path until it waits or ends.
//! Runtime failures inside the model put the instance in `Error` (the step returns Ok);
//! `EngineError` is only for caller mistakes and leaves the state untouched.
//!
//! Layout: `commands` (start, step, fail) and `lifecycle` (suspend, resume, terminate, retry)
//! check the input and drive an `interpreter`, which holds the step's copy of the state and the
//! helpers every element uses; `context` is what the step is given from outside. `flow` moves
//! tokens: a token entering an element creates its task and hands it to the element's family in
//! `behaviours` — one type per family (tasks, start, catch, throw and end events, boundary
//! events, gateways, subprocesses, event subprocesses) with the same lifecycle: `activate` the
//! task, `triggered` when what it waits for happens, `leave` by the flows it takes once
//! `complete_activity` did what every completion shares, `terminate` what it holds of its own
//! once `cancel_task` closed what every cancellation does. The families call the helpers their
//! elements need: `activities` (what moves a waiting human or service task on), `events`
//! (firing start events, messages), `timers`, `signals`, `conditions`, `gateways` (flow choice,
//! joins), `boundaries` (boundary events, errors, escalations, cancelling a task),
//! `subprocesses`, `event_subprocesses`, `multi_instance` (the body around an activity's
//! instances, whatever its family), `loops`, `branches`, `data_objects`, `data_stores`. `waits`
//! is the one rule of which waits a live task holds and how they close; `outcome` turns the run
//! into the new state and effects; `paused` stops a run for a callee and goes on with it.
//! `guard` wraps the public entry points against panics; `migrate` says whether an instance
//! fits another version. The modules import each other in no cycle.

mod activities;
mod behaviours;
mod boundaries;
mod branches;
mod commands;
mod conditions;
mod context;
mod data_objects;
mod data_stores;
mod event_subprocesses;
mod events;
mod flow;
mod gateways;
mod guard;
mod interpreter;
mod iso8601;
mod lifecycle;
mod loops;
mod migrate;
mod multi_instance;
mod outcome;
mod paused;
mod signals;
mod state;
mod subprocesses;
#[cfg(test)]
mod tests;
mod timers;
mod waits;

use crate::bpmn::{Callee, DataStoreKind};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use uuid::Uuid;

pub use activities::SCRIPTS_UNAVAILABLE;
pub use commands::accept_call;
pub use context::{DataStoreContents, StepContext, StoreContent, TaskIds};
pub use data_stores::kkv_apply;
pub use guard::{
    continue_start, continue_step, fail, service_call, start, start_run, step, step_run, terminate,
    ENGINE_PANIC,
};
pub use lifecycle::{resume, suspend};
pub use migrate::{migration_blockers_between, MigrationBlocker};
pub use paused::{PausedRun, Run};
pub use state::{
    Cycle, EngineInternal, InstanceError, InstanceState, InstanceStatus, MultiItem, MultiRun, Task,
    TaskState,
};
pub use timers::first_start_occurrence;

pub type Map = serde_json::Map<String, Value>;

/// Bound on element executions in one step (a cycle of script tasks ends in an instance error).
pub const MAX_EXECUTIONS_PER_STEP: usize = 10_000;

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Start an instance. `start_event_id` None: the message start event for `message`, else
    /// every none start event of the process. `data` is the initial task data. `signal`: the
    /// payload of the signal that starts it at the signal start event `start_event_id` (stored
    /// in the start event's variable, if its signal has one).
    Start {
        start_event_id: Option<String>,
        data: Map,
        message: Option<(String, Value)>,
        signal: Option<Value>,
    },
    /// Complete a waiting manual/user task; the body is merged (top-level keys) into data.
    CompleteTask { task_guid: Uuid, data: Map },
    /// A message for a waiting catch event / receive task / message boundary event.
    MessageDelivered {
        task_guid: Uuid,
        name: String,
        payload: Value,
    },
    /// The proxy answered 202: the task goes STARTED (no-op when already STARTED).
    ServiceAccepted { task_guid: Uuid },
    /// The result is stored in the task's resultVariable; the task completes.
    ServiceSucceeded { task_guid: Uuid, result: Value },
    /// Caught by an error boundary (matching errorCode, else catch-all; also on enclosing
    /// subprocesses), else the instance goes to `Error`.
    ServiceFailed {
        task_guid: Uuid,
        error_code: String,
        message: String,
    },
    /// Fire every waiting signal catch and signal boundary event with this signal name (no-op
    /// when none waits); each one whose signal has a variable stores the payload there.
    Signal { name: String, payload: Value },
    /// A waiting timer (catch event or boundary) came due.
    TimerFired { task_guid: Uuid },
    /// An operator retries an instance in error: the task that failed runs again (see
    /// `lifecycle::retry`).
    Retry,
}

impl Event {
    /// What kind of event it is, as traces and logs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Start { .. } => "start",
            Event::CompleteTask { .. } => "complete_task",
            Event::MessageDelivered { .. } => "message",
            Event::ServiceAccepted { .. } => "service_accepted",
            Event::ServiceSucceeded { .. } => "service_succeeded",
            Event::ServiceFailed { .. } => "service_failed",
            Event::Signal { .. } => "signal",
            Event::TimerFired { .. } => "timer",
            Event::Retry => "retry",
        }
    }

    /// The name of the message it delivers (a message start or a delivery to a waiting task).
    pub fn message_name(&self) -> Option<&str> {
        match self {
            Event::Start {
                message: Some((name, _)),
                ..
            }
            | Event::MessageDelivered { name, .. } => Some(name),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// A send task / throw event fired; the shell correlates it (starts or resumes others).
    SendMessage {
        task_guid: Uuid,
        name: String,
        payload: Value,
        correlation_values: BTreeMap<String, Value>,
    },
    /// A catch event / receive task / message boundary started waiting for a message.
    WaitForMessage {
        task_guid: Uuid,
        name: String,
        expected: BTreeMap<String, Value>,
    },
    /// A wait ended without a message (boundary interrupted the task, subprocess cancelled...).
    CancelMessageWait {
        task_guid: Uuid,
    },
    /// A service task became READY: the shell records a connector job.
    CallService {
        task_guid: Uuid,
    },
    CancelServiceCall {
        task_guid: Uuid,
    },
    /// A timer catch event or timer boundary started waiting: the shell records the timer and
    /// sends `TimerFired` when it is due (never before).
    StartTimer {
        task_guid: Uuid,
        element_id: String,
        due: DateTime<Utc>,
    },
    CancelTimer {
        task_guid: Uuid,
    },
    /// A signal catch event or signal boundary started waiting: other instances' throws of this
    /// signal must reach it.
    WaitForSignal {
        task_guid: Uuid,
        name: String,
    },
    CancelSignalWait {
        task_guid: Uuid,
    },
    /// A signal was thrown: it has reached this instance's own catches; the shell broadcasts it
    /// (with its payload: the signal's payload expression evaluated with the thrower's data,
    /// else null) to every other instance waiting for it and starts the models it starts.
    ThrowSignal {
        task_guid: Uuid,
        name: String,
        payload: Value,
    },
    /// The instance stopped where the engine could not tell its tasks' waits (its process is
    /// not in the model, or failing it panicked): the shell closes every wait and call it
    /// keeps for the instance.
    CloseWaitsOfInstance,
    /// A task wrote a data store (the value is checked): the shell writes it in the step's
    /// transaction. A JSON store takes the value; a KKV store applies it (see
    /// [`kkv_apply`]); a typeahead store replaces the categories it names.
    WriteDataStore {
        task_guid: Uuid,
        store: String,
        kind: DataStoreKind,
        value: Value,
    },
}

impl Effect {
    /// Closes a wait or call the shell recorded for a task.
    pub fn is_cancellation(&self) -> bool {
        matches!(
            self,
            Effect::CancelMessageWait { .. }
                | Effect::CancelServiceCall { .. }
                | Effect::CancelTimer { .. }
                | Effect::CancelSignalWait { .. }
        )
    }

    /// The task whose wait or call this is about (None for what concerns the whole instance).
    pub fn task_guid(&self) -> Option<Uuid> {
        match self {
            Effect::SendMessage { task_guid, .. }
            | Effect::WaitForMessage { task_guid, .. }
            | Effect::CancelMessageWait { task_guid }
            | Effect::CallService { task_guid }
            | Effect::CancelServiceCall { task_guid }
            | Effect::StartTimer { task_guid, .. }
            | Effect::CancelTimer { task_guid }
            | Effect::WaitForSignal { task_guid, .. }
            | Effect::CancelSignalWait { task_guid }
            | Effect::ThrowSignal { task_guid, .. }
            | Effect::WriteDataStore { task_guid, .. } => Some(*task_guid),
            Effect::CloseWaitsOfInstance => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    NotWaiting {
        task_guid: Uuid,
    },
    UnknownTask {
        task_guid: Uuid,
    },
    Invalid(String),
    /// No Python could run the step's scripts (every worker busy, or broken): nothing
    /// happened, and the same event may be tried again.
    Unavailable(String),
    /// A call activity reached a process, or a business rule task a decision, that is in no
    /// model the step was given: nothing happened; the caller finds it
    /// (`ModelSpec::with_callees`) and steps again, or marks it missing, and the step then
    /// fails the instance.
    CalleeNeeded(Callee),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::NotWaiting { task_guid } => write!(f, "task {task_guid} is not waiting"),
            EngineError::UnknownTask { task_guid } => write!(f, "task {task_guid} does not exist"),
            EngineError::Invalid(m) | EngineError::Unavailable(m) => f.write_str(m),
            EngineError::CalleeNeeded(callee) => {
                write!(f, "{} is not loaded", callee.described())
            }
        }
    }
}

impl std::error::Error for EngineError {}

/// What the dispatcher needs to call the connector proxy for one service task.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceCall {
    pub operator_id: String,
    pub params: Map,
    pub result_variable: Option<String>,
    pub retries: u32,
    pub backoff_base: f64,
}
