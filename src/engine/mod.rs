//! The engine's step function: (ModelSpec, InstanceState, Event) -> (InstanceState, Effects). Pure.
//!
//! One shared data map per instance. A step runs every path until it waits or ends.
//! Runtime failures inside the model put the instance in `Error` (the step returns Ok);
//! `EngineError` is only for caller mistakes and leaves the state untouched.

mod guard;
mod migrate;
mod run;
#[cfg(test)]
mod tests;

use crate::bpmn::ModelSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use uuid::Uuid;

pub use guard::{fail, service_call, start, step, ENGINE_PANIC};
pub use migrate::{migration_blockers_between, MigrationBlocker};

pub type Map = serde_json::Map<String, Value>;

/// Bound on element executions in one step (a cycle of script tasks ends in an instance error).
pub const MAX_EXECUTIONS_PER_STEP: usize = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceStatus {
    Running,
    Waiting,
    UserInputRequired,
    Complete,
    Error,
    Suspended,
    Terminated,
}

impl InstanceStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            InstanceStatus::Running => "running",
            InstanceStatus::Waiting => "waiting",
            InstanceStatus::UserInputRequired => "user_input_required",
            InstanceStatus::Complete => "complete",
            InstanceStatus::Error => "error",
            InstanceStatus::Suspended => "suspended",
            InstanceStatus::Terminated => "terminated",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => InstanceStatus::Running,
            "waiting" => InstanceStatus::Waiting,
            "user_input_required" => InstanceStatus::UserInputRequired,
            "complete" => InstanceStatus::Complete,
            "error" => InstanceStatus::Error,
            "suspended" => InstanceStatus::Suspended,
            "terminated" => InstanceStatus::Terminated,
            _ => return None,
        })
    }

    /// No event can move the instance on (complete, error, terminated).
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            InstanceStatus::Complete | InstanceStatus::Error | InstanceStatus::Terminated
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskState {
    Ready,
    Waiting,
    Started,
    Completed,
    Error,
    Cancelled,
}

impl TaskState {
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskState::Ready => "READY",
            TaskState::Waiting => "WAITING",
            TaskState::Started => "STARTED",
            TaskState::Completed => "COMPLETED",
            TaskState::Error => "ERROR",
            TaskState::Cancelled => "CANCELLED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "READY" => TaskState::Ready,
            "WAITING" => TaskState::Waiting,
            "STARTED" => TaskState::Started,
            "COMPLETED" => TaskState::Completed,
            "ERROR" => TaskState::Error,
            "CANCELLED" => TaskState::Cancelled,
            _ => return None,
        })
    }

    /// READY, WAITING or STARTED.
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            TaskState::Ready | TaskState::Waiting | TaskState::Started
        )
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Task {
    pub guid: Uuid,
    pub element_id: String,
    /// BPMN local name: "userTask", "serviceTask", "intermediateCatchEvent", ...
    pub element_type: String,
    pub name: Option<String>,
    pub state: TaskState,
    /// Guid of the enclosing subprocess task, None at top level.
    pub scope: Option<Uuid>,
    /// Per-task extra: `{error_code, message}` on a failed task or a fired error boundary.
    pub data: Option<Value>,
    /// Set by the engine whenever it creates/changes the task during the current step
    /// (reset at the start of every step).
    #[serde(skip)]
    pub dirty: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceError {
    pub element_id: String,
    pub message: String,
    #[serde(default)]
    pub error_code: Option<String>,
}

impl fmt::Display for InstanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error_code {
            Some(c) => write!(f, "{}: [{}] {}", self.element_id, c, self.message),
            None => write!(f, "{}: {}", self.element_id, self.message),
        }
    }
}

/// Engine bookkeeping that must round-trip with the instance (serialisable).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInternal {
    /// Parallel joins waiting for more tokens: key `"<scope guid or '-'>/<gateway id>"`,
    /// value = tokens arrived per incoming flow id.
    #[serde(default)]
    pub joins: BTreeMap<String, BTreeMap<String, u32>>,
    /// Live boundary-event task guid -> guid of the task it is attached to.
    #[serde(default)]
    pub boundaries: BTreeMap<Uuid, Uuid>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InstanceState {
    pub process_id: String,
    pub status: InstanceStatus,
    /// One data map per instance (task data).
    pub data: Map,
    /// Established correlation property values (property id -> value).
    pub correlations: BTreeMap<String, Value>,
    pub error: Option<InstanceError>,
    /// The live tasks (READY/WAITING/STARTED); after a step also the tasks finished during it
    /// (dirty), which the shell persists and then drops with `prune_finished`.
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub internal: EngineInternal,
}

impl InstanceState {
    pub fn task(&self, guid: Uuid) -> Option<&Task> {
        self.tasks.iter().find(|t| t.guid == guid)
    }

    /// Tasks in READY, WAITING or STARTED.
    pub fn live_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.state.is_live())
    }

    /// Tasks created or changed by the last step.
    pub fn dirty_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.dirty)
    }

    /// Drop COMPLETED / ERROR / CANCELLED tasks (after the shell persisted them).
    pub fn prune_finished(&mut self) {
        self.tasks.retain(|t| t.state.is_live());
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Start an instance. `start_event_id` None: the message start event for `message`, else
    /// every none start event of the process. `data` is the initial task data.
    Start {
        start_event_id: Option<String>,
        data: Map,
        message: Option<(String, Value)>,
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
    /// Fire every waiting signal boundary event with this signal name (no-op when none waits).
    Signal { name: String },
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    NotWaiting { task_guid: Uuid },
    UnknownTask { task_guid: Uuid },
    Invalid(String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::NotWaiting { task_guid } => write!(f, "task {task_guid} is not waiting"),
            EngineError::UnknownTask { task_guid } => write!(f, "task {task_guid} does not exist"),
            EngineError::Invalid(m) => f.write_str(m),
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
