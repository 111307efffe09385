//! An instance's state as the engine keeps it: status, task data, established correlation
//! values, tasks, and the bookkeeping that must survive between steps (joins, boundaries).
//! Serialisable: the shell stores it between steps.

use super::Map;
use crate::bpmn::{ElementKind, ElementSpec};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use uuid::Uuid;

/// The instance's status and a task's state: the enums every layer uses.
pub use workflow_types::{InstanceStatus, TaskState};

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

impl Task {
    /// A catch event, receive task or message boundary waiting for its message (a message
    /// start event never waits: it has fired when its task exists).
    pub fn waits_for_message(&self, element: &ElementSpec) -> bool {
        self.state == TaskState::Waiting
            && element.message_catch().is_some()
            && !matches!(element.kind, ElementKind::StartEvent { .. })
    }

    /// A timer catch event or timer boundary waiting for its time.
    pub fn waits_for_timer(&self, element: &ElementSpec) -> bool {
        self.state == TaskState::Waiting && element.timer().is_some()
    }

    /// A signal catch event or signal boundary waiting for its signal.
    pub fn waits_for_signal(&self, element: &ElementSpec) -> bool {
        self.state == TaskState::Waiting && element.signal_catch().is_some()
    }

    /// A conditional catch event or conditional boundary waiting for its condition.
    pub fn waits_for_condition(&self, element: &ElementSpec) -> bool {
        self.state == TaskState::Waiting && element.has_condition()
    }

    /// A service task whose connector call is due or under way.
    pub fn has_service_call(&self, element: &ElementSpec) -> bool {
        matches!(element.kind, ElementKind::ServiceTask(_))
            && matches!(self.state, TaskState::Ready | TaskState::Started)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceError {
    pub element_id: String,
    pub message: String,
    #[serde(default)]
    pub error_code: Option<String>,
    /// The BPMN file of the element (set by the engine when the instance fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
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
    /// The incoming flows that have brought a token to a parallel join so far, by the same
    /// key (a loop may fire the join again without them: see `parallel_join_may_fire`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub joined_flows: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Live boundary-event task guid -> guid of the task it is attached to.
    #[serde(default)]
    pub boundaries: BTreeMap<Uuid, Uuid>,
    /// Who last completed each human task, by process (or embedded subprocess) id, then
    /// element id: `get_last_user_completing_task()`. Kept only for models whose code asks.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub completed_by: BTreeMap<String, BTreeMap<String, String>>,
    /// Catch events after an event-based gateway: task guid -> the gateway's task guid. The
    /// first of a race to fire cancels the others.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub races: BTreeMap<Uuid, Uuid>,
    /// Waiting cycle timers (`timeCycle`): task guid -> what follows the current occurrence.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cycles: BTreeMap<Uuid, Cycle>,
    /// Catch events with several definitions that wait for all of them
    /// (`parallelMultiple`): task guid -> the indexes of the triggers that happened.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fired: BTreeMap<Uuid, std::collections::BTreeSet<usize>>,
    /// Standard loops under way: `"<scope guid or '-'>/<activity id>"` -> runs completed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub loops: BTreeMap<String, u32>,
    /// Transactions under way: task guid -> the task data when it started (a cancel end event
    /// restores it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transactions: BTreeMap<Uuid, super::Map>,
    /// Multi-instance activities under way: the activity's task guid -> its instances.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub multi: BTreeMap<Uuid, MultiRun>,
    /// The task data of each running instance of a multi-instance activity: its code (and
    /// the code of everything inside it) reads and writes this copy, not the data around it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub local_data: BTreeMap<Uuid, super::Map>,
    /// Data objects written so far, by id (one map for the instance: a subprocess's tasks
    /// see their parent's). Kept out of the task data but while a task that reads or writes
    /// one runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data_objects: BTreeMap<String, Value>,
    /// Tasks on the path of a non-interrupting boundary event: task guid -> the boundary's
    /// task guid, whose copy of the data (in `local_data`) they work on (see `branches.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub branch_of: BTreeMap<Uuid, Uuid>,
    /// Branches that fired and run: the boundary's task guid -> the owner of the data they
    /// merge back into when they end (None: the instance's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub branches: BTreeMap<Uuid, Option<Uuid>>,
    /// The data an activity with non-interrupting boundaries was reached with, by its task
    /// guid: what each of their branches starts from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub branch_origins: BTreeMap<Uuid, super::Map>,
    /// The merged data of the branches that ended while the path they came from still runs,
    /// by the owner of that path's data (the nil guid: the instance's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ended_branches: BTreeMap<Uuid, super::Map>,
}

/// A multi-instance activity under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MultiRun {
    /// Every item, in order.
    pub items: Vec<MultiItem>,
    /// The instances started so far: task guid -> index of its item.
    pub started: BTreeMap<Uuid, usize>,
    /// What completed instances left in the output item, by item index.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub results: BTreeMap<usize, Value>,
    pub completed: usize,
}

/// One item of a multi-instance activity: its key in the input (list index, map key) and
/// its value (for a cardinality, both are the index).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MultiItem {
    pub key: Value,
    pub value: Value,
}

/// A cycle timer between occurrences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cycle {
    /// When the occurrence the task waits for is due.
    pub due: DateTime<Utc>,
    pub interval_ms: i64,
    /// Occurrences after the one awaited (None: for ever).
    pub remaining: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InstanceState {
    pub process_id: String,
    pub status: InstanceStatus,
    /// The instance's task data (the instances of a multi-instance activity have copies of
    /// their own, in `internal.local_data`).
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
    /// A new instance of `process_id`, running, with `data` as its task data.
    pub fn new(process_id: &str, data: Map) -> InstanceState {
        InstanceState {
            process_id: process_id.to_string(),
            status: InstanceStatus::Running,
            data,
            correlations: BTreeMap::new(),
            error: None,
            tasks: vec![],
            internal: EngineInternal::default(),
        }
    }

    pub fn task(&self, guid: Uuid) -> Option<&Task> {
        self.tasks.iter().find(|t| t.guid == guid)
    }

    /// The instance of a multi-instance activity whose data the code of task `guid` works
    /// on (the nearest around it), None for the instance's own data.
    pub fn data_owner(&self, guid: Option<Uuid>) -> Option<Uuid> {
        if self.internal.local_data.is_empty() {
            return None;
        }
        let mut cursor = guid;
        while let Some(task) = cursor {
            if self.internal.local_data.contains_key(&task) {
                return Some(task);
            }
            if let Some(branch) = self.internal.branch_of.get(&task) {
                if self.internal.local_data.contains_key(branch) {
                    return Some(*branch);
                }
            }
            cursor = self.task(task).and_then(|t| t.scope);
        }
        None
    }

    /// The task data the code of `owner` (see `data_owner`) works on.
    pub fn data_of(&self, owner: Option<Uuid>) -> &Map {
        owner
            .and_then(|guid| self.internal.local_data.get(&guid))
            .unwrap_or(&self.data)
    }

    pub fn data_of_mut(&mut self, owner: Option<Uuid>) -> &mut Map {
        match owner.filter(|guid| self.internal.local_data.contains_key(guid)) {
            Some(guid) => self.internal.local_data.get_mut(&guid).expect("checked"),
            None => &mut self.data,
        }
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
