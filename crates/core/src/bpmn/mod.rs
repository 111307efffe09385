//! BPMN 2.0 XML as written by the SpiffArena modeler -> executable specs. Pure.
//!
//! `parse_file` reads one file (well-formedness, supported elements, references inside the
//! file, expression syntax); `build_model` merges the files of one process model and resolves
//! the references that may cross files (messages, errors, signals, correlation properties).
//! Every expression and script is compiled here, once, and kept in the spec.

pub(crate) mod limits;
mod model;
mod parse;
mod python_sources;
#[cfg(test)]
mod tests;

use crate::expr::{Expression, Script};
use std::collections::BTreeMap;
use std::fmt;

pub(crate) use limits::parse_xml;
pub use limits::{MAX_CALL_DEPTH, MAX_ELEMENTS_PER_FILE, MAX_NESTING_DEPTH};
pub use model::{build_model, call_depth};
pub use parse::parse_file;
pub use python_sources::PythonSource;

pub const BPMN_NS: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";
pub const SPIFF_NS: &str = "http://spiffworkflow.org/bpmn/schema/1.0/core";
/// Camunda's extension attributes (read only where SpiffWorkflow's Camunda parser reads one).
pub const CAMUNDA_NS: &str = "http://camunda.org/schema/1.0/bpmn";

/// A model the engine cannot load, with what a modeler needs to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    pub file: String,
    pub element_id: Option<String>,
    pub reason: String,
}

impl ModelError {
    pub fn new(file: &str, element_id: Option<&str>, reason: impl Into<String>) -> Self {
        ModelError {
            file: file.to_string(),
            element_id: element_id.map(str::to_string),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.element_id {
            Some(id) => write!(f, "{}: element {}: {}", self.file, id, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}

impl std::error::Error for ModelError {}

/// One parsed file. References to messages/errors/signals are still ids here
/// (`message_name` etc. are filled by `build_model`).
#[derive(Debug, Clone)]
pub struct Definitions {
    pub file: String,
    pub processes: Vec<ProcessSpec>,
    pub messages: Vec<MessageSpec>,
    pub errors: Vec<ErrorSpec>,
    pub signals: Vec<SignalSpec>,
    pub escalations: Vec<EscalationSpec>,
    pub correlation_properties: Vec<RawCorrelationProperty>,
    pub correlation_keys: Vec<CorrelationKeySpec>,
    /// `bpmn:dataStore` declarations: id -> kind.
    pub data_stores: Vec<(String, DataStoreKind)>,
    /// What SpiffWorkflow loads and fails on only when the element runs (the element is
    /// `ElementKind::Faulty`).
    pub warnings: Vec<ModelError>,
}

/// SpiffArena's data store kinds. SpiffWorkflow picks a store's class by the `name` of its
/// `bpmn:dataStore` (`JSONDataStore`, ...); its `id` is the store's identifier and the task
/// data variable it is read into and written from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataStoreKind {
    /// One JSON value (`JSONDataStore`).
    Json,
    /// One JSON value (`JSONFileDataStore`: a file beside the model in SpiffArena, a row
    /// here).
    JsonFile,
    /// Values under two levels of keys (`KKVDataStore`): read through a getter function.
    Kkv,
    /// Search terms and results by category (`TypeaheadDataStore`): write only.
    Typeahead,
}

impl DataStoreKind {
    pub const ALL: [DataStoreKind; 4] = [
        DataStoreKind::Json,
        DataStoreKind::JsonFile,
        DataStoreKind::Kkv,
        DataStoreKind::Typeahead,
    ];

    /// The class name a model gives as the `bpmn:dataStore`'s name.
    pub fn class_name(self) -> &'static str {
        match self {
            DataStoreKind::Json => "JSONDataStore",
            DataStoreKind::JsonFile => "JSONFileDataStore",
            DataStoreKind::Kkv => "KKVDataStore",
            DataStoreKind::Typeahead => "TypeaheadDataStore",
        }
    }

    /// The name the API and the database use.
    pub fn as_str(self) -> &'static str {
        match self {
            DataStoreKind::Json => "json",
            DataStoreKind::JsonFile => "json_file",
            DataStoreKind::Kkv => "kkv",
            DataStoreKind::Typeahead => "typeahead",
        }
    }

    pub fn from_class_name(name: &str) -> Option<DataStoreKind> {
        Self::ALL.into_iter().find(|k| k.class_name() == name)
    }

    pub fn parse(name: &str) -> Option<DataStoreKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSpec {
    pub id: String,
    /// The message name (what the API and correlation use); the id when the file has no name.
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct ErrorSpec {
    pub id: String,
    pub name: Option<String>,
    pub error_code: Option<String>,
    /// `spiffworkflow:variableName` on the `bpmn:error`: where a catching boundary stores the error.
    pub variable: Option<String>,
    /// `spiffworkflow:payloadExpression` on the `bpmn:error`: what a throw carries.
    pub payload: Option<Expression>,
}

/// A `bpmn:signal`, with SpiffWorkflow's payload extensions: a throw evaluates
/// `payloadExpression` with its task data, a catch stores what arrives in `variableName`.
#[derive(Debug, Clone)]
pub struct SignalSpec {
    pub id: String,
    pub name: String,
    pub payload: Option<Expression>,
    pub variable: Option<String>,
}

/// A `bpmn:escalation`, with SpiffWorkflow's payload extensions (as on a signal).
#[derive(Debug, Clone)]
pub struct EscalationSpec {
    pub id: String,
    pub name: Option<String>,
    pub escalation_code: Option<String>,
    pub payload: Option<Expression>,
    pub variable: Option<String>,
}

/// A correlation property as written in one file (retrieval expressions by message **id**).
#[derive(Debug, Clone)]
pub struct RawCorrelationProperty {
    pub id: String,
    pub name: Option<String>,
    pub retrieval: Vec<(String /* message id */, Expression)>,
}

/// A correlation property of the model: retrieval expressions by message **name**.
#[derive(Debug, Clone)]
pub struct CorrelationProperty {
    pub id: String,
    pub name: String,
    pub retrieval: BTreeMap<String, Expression>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationKeySpec {
    pub name: String,
    pub property_refs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageStart {
    pub message_name: String,
    pub process_id: String,
    pub start_event_id: String,
}

/// A start event the service fires (a timer's occurrence, a thrown signal).
#[derive(Debug, Clone)]
pub struct TriggeredStart {
    pub process_id: String,
    pub start_event_id: String,
    /// The signal's name, for a signal start.
    pub signal_name: Option<String>,
    /// The timer, for a timer start.
    pub timer: Option<TimerSpec>,
}

/// A whole process model (one or more files).
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub processes: BTreeMap<String, ProcessSpec>,
    pub primary_process_id: String,
    pub messages: BTreeMap<String, MessageSpec>,
    pub errors: BTreeMap<String, ErrorSpec>,
    pub signals: BTreeMap<String, SignalSpec>,
    pub escalations: BTreeMap<String, EscalationSpec>,
    pub correlation_properties: Vec<CorrelationProperty>,
    pub correlation_keys: Vec<CorrelationKeySpec>,
    pub message_starts: Vec<MessageStart>,
    /// Timer start events and signal start events of every process, in process order.
    pub timer_starts: Vec<TriggeredStart>,
    pub signal_starts: Vec<TriggeredStart>,
    /// File names, sorted.
    pub files: Vec<String>,
    /// Some step may need Python (a script, or an expression beyond the fast path): such
    /// steps run where a script may take its whole time limit.
    pub needs_python: bool,
    /// Some code calls `get_secret`: its steps are given the secret values.
    pub uses_secrets: bool,
    /// Some code calls `get_process_initiator_user`: its steps are told who started them.
    pub uses_initiator: bool,
    /// Some code calls `get_last_user_completing_task` or `get_url_for_task_with_bpmn_identifier`:
    /// its steps record who completed each human task and show scripts the instance's tasks.
    pub uses_task_lookup: bool,
    /// Some call activity calls a process that is not in the model: a step may ask for it.
    pub calls_elsewhere: bool,
    /// Called processes that cannot be run, with the reason (set by `with_callees`: no model
    /// defines it, or linking it failed): a call activity calling one fails the instance
    /// instead of asking for it.
    pub unavailable_callees: BTreeMap<String, String>,
    /// What SpiffWorkflow loads and SpiffArena fails on only when it runs, by file and
    /// element: elements that fail when reached (`ElementKind::Faulty`), and expressions and
    /// scripts Python does not compile (added by the upload, which asks the script host).
    pub warnings: Vec<ModelError>,
    /// The DMN decisions of the model's `.dmn` files (and, linked, of other models' the
    /// instance uses), by decision id.
    pub decisions: BTreeMap<String, std::sync::Arc<crate::dmn::Decision>>,
    /// The data stores its tasks read or write, by id (the `bpmn:dataStore` id).
    pub data_stores: BTreeMap<String, DataStoreUse>,
}

/// A data store a model uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataStoreUse {
    pub kind: DataStoreKind,
    /// Some task writes it (its steps hold it locked, so that concurrent writers do not lose
    /// each other's updates).
    pub written: bool,
}

/// What a model may need from another model: a process one of its call activities calls, or
/// a decision one of its business rule tasks evaluates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callee {
    Process(String),
    Decision(String),
    /// A call activity (by element id) calling a process it is already inside: copied in
    /// when reached (`ModelSpec::with_callees_unrolled`).
    Recursion(String),
}

impl Callee {
    /// The key it is pinned and known under: the process id, or `decision:` and the decision
    /// id (process ids are XML NCNames, which hold no colon: the two cannot collide).
    /// A recursive call is `recursion:` and the call activity's id.
    pub fn key(&self) -> String {
        match self {
            Callee::Process(id) => id.clone(),
            Callee::Decision(id) => format!("decision:{id}"),
            Callee::Recursion(call) => format!("recursion:{call}"),
        }
    }

    pub fn from_key(key: &str) -> Callee {
        if let Some(id) = key.strip_prefix("decision:") {
            return Callee::Decision(id.to_string());
        }
        match key.strip_prefix("recursion:") {
            Some(call) => Callee::Recursion(call.to_string()),
            None => Callee::Process(key.to_string()),
        }
    }

    /// "the called process 'x'", "the decision 'x'".
    pub fn described(&self) -> String {
        match self {
            Callee::Process(id) => format!("the called process '{id}'"),
            Callee::Decision(id) => format!("the decision '{id}'"),
            Callee::Recursion(call) => format!("the recursive call '{call}'"),
        }
    }
}

/// One `bpmn:process`. Elements of embedded subprocesses are in the same flat map, with
/// `parent` set to the subprocess id.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub id: String,
    pub name: Option<String>,
    pub file: String,
    pub is_executable: bool,
    pub elements: BTreeMap<String, ElementSpec>,
    pub flows: BTreeMap<String, FlowSpec>,
    /// Top-level start events, document order.
    pub start_events: Vec<String>,
    /// Its `ioSpecification` (what a call activity passes in and takes back).
    pub io: Option<IoSpec>,
}

#[derive(Debug, Clone)]
pub struct FlowSpec {
    pub id: String,
    pub name: Option<String>,
    pub source: String,
    pub target: String,
    pub condition: Option<Expression>,
}

#[derive(Debug, Clone)]
pub struct ElementSpec {
    pub id: String,
    pub name: Option<String>,
    /// BPMN local name: "userTask", "intermediateCatchEvent", ...
    pub element_type: String,
    pub kind: ElementKind,
    /// Enclosing embedded subprocess (element id), None at process level.
    pub parent: Option<String>,
    /// The process it is defined in (for a called process copied under a call activity, the
    /// called process).
    pub process: String,
    /// Sequence flow ids, in the document order of the `bpmn:sequenceFlow` elements.
    pub incoming: Vec<String>,
    pub outgoing: Vec<String>,
    /// `default` attribute (gateways, and activities with conditional flows).
    pub default_flow: Option<String>,
    /// Boundary events attached to this activity, document order.
    pub boundaries: Vec<String>,
    pub pre_script: Option<Script>,
    pub post_script: Option<Script>,
    /// `standardLoopCharacteristics`: the activity repeats.
    pub standard_loop: Option<StandardLoop>,
    /// `multiInstanceLoopCharacteristics`: the activity runs once per item.
    pub multi_instance: Option<MultiInstance>,
    /// A task's own `ioSpecification`: it runs on its data inputs only, and only its data
    /// outputs go on (SpiffWorkflow's rule: they replace the data).
    pub io: Option<IoSpec>,
    /// Data objects it reads (`dataInputAssociation`): copied into the data before it runs.
    pub reads: Vec<String>,
    /// Data objects it writes (`dataOutputAssociation`): taken out of the data when it
    /// completes.
    pub writes: Vec<String>,
    /// Data stores (ids) it reads: their content is in its data (a KKV store: a getter for
    /// its scripts) while it runs.
    pub store_reads: Vec<String>,
    /// Data stores it writes: the value is taken out of its data when it completes.
    pub store_writes: Vec<String>,
}

/// A standard loop: the activity runs again while `condition` holds, at most `maximum` times;
/// `test_before` checks the condition before the first run too (it may run zero times).
#[derive(Debug, Clone)]
pub struct StandardLoop {
    pub condition: Option<Expression>,
    pub maximum: Option<u32>,
    pub test_before: bool,
}

/// A multi-instance activity: one instance per item, all at once or (`sequential`) one after
/// the other. Each instance works on its own copy of the task data with its item in
/// `input_item`; what it leaves in `output_item` is collected into `output` (in item order),
/// or, without an output, its data is merged back. `completion_condition`, checked on the
/// data of each instance that completes, ends the activity early (cancelling the others).
#[derive(Debug, Clone)]
pub struct MultiInstance {
    pub sequential: bool,
    pub items: MultiItems,
    pub output: Option<String>,
    pub input_item: Option<String>,
    pub output_item: Option<String>,
    pub completion_condition: Option<Expression>,
    /// `spiffworkflow:scriptsOnInstances`: the pre- and post-scripts run on every instance,
    /// not once before and after them all.
    pub scripts_on_instances: bool,
}

/// A process's `ioSpecification`: the ids of its data inputs and data outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoSpec {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// What a multi-instance activity runs over.
#[derive(Debug, Clone)]
pub enum MultiItems {
    /// `loopCardinality`: a number of instances; each instance's item is its index.
    Cardinality(Expression),
    /// `loopDataInputRef`: the task data variable holding a list or a map.
    Collection(String),
}

/// What a `SubProcess` element is in the BPMN: an embedded subprocess, a transaction, or a
/// call activity whose called process was copied in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubProcessForm {
    Embedded,
    /// A `bpmn:transaction`: a cancel end event undoes its data, a cancel boundary attaches.
    Transaction,
    /// A call: the child starts on a copy of the caller's data (no ioSpecification).
    Call,
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // built once per model load
pub enum ElementKind {
    /// An element SpiffWorkflow's parser loads and SpiffArena fails on when it runs (a
    /// message event without messageRef): the instance errs there with `reason`; the model
    /// carries it as a warning.
    Faulty {
        reason: String,
    },
    /// None start event (`message` None) or message start event.
    StartEvent {
        message: Option<MessageCatchSpec>,
    },
    /// A process start event with several message definitions: any of the messages starts an
    /// instance; `parallelMultiple`, the instance then waits at it for the others.
    MultipleStart(CatchSet),
    /// A timer start event of a process: the service starts an instance at each occurrence.
    TimerStart(TimerSpec),
    /// A signal start event of a process: every throw of the signal starts an instance.
    SignalStart(SignalRef),
    /// A timer intermediate catch event: waits until its timer is due.
    TimerCatch(TimerSpec),
    /// A signal intermediate catch event: waits for the signal.
    SignalCatch(SignalRef),
    /// A signal intermediate throw event: broadcasts the signal, then goes on.
    SignalThrow(SignalRef),
    /// An escalation intermediate throw event: offers the escalation to the enclosing
    /// subprocesses' escalation boundaries, then goes on (unless one interrupts).
    EscalationThrow(EscalationRef),
    /// An event-based gateway: the catch events after it race; the first one wins.
    EventGateway,
    /// A conditional intermediate catch event: waits until its condition holds (checked after
    /// every step of the instance).
    ConditionalCatch(Expression),
    /// A link throw event: the token goes on at the link catch event of the same name in the
    /// same (sub)process (`target`, resolved at load).
    LinkThrow {
        name: String,
        target: String,
    },
    /// A link catch event: where a link throw continues.
    LinkCatch {
        name: String,
    },
    /// An intermediate catch event with several event definitions: any of them (all of them,
    /// `parallelMultiple`) completes it.
    MultipleCatch(CatchSet),
    /// An intermediate throw event with several event definitions: throws every one.
    MultipleThrow(Vec<Throw>),
    EndEvent(EndKind),
    ExclusiveGateway,
    ParallelGateway,
    /// Splits on every true condition (the default flow when none); joins once no token can
    /// still arrive on an incoming flow that has none.
    InclusiveGateway,
    ScriptTask {
        script: Option<Script>,
    },
    /// Evaluates a DMN decision table (`spiffworkflow:calledDecisionId`, or Camunda's
    /// `decisionRef`) and merges its result into the task data. The decision is the model's
    /// own (`ModelSpec::decisions`) or, if not, another model's, found when reached.
    BusinessRuleTask {
        decision_id: String,
    },
    UserTask,
    ManualTask,
    /// `bpmn:task` and a none intermediate throw event: nothing to do.
    PassThrough,
    ServiceTask(ServiceTaskSpec),
    /// sendTask, intermediateThrowEvent with a message.
    MessageThrow(MessageThrowSpec),
    /// receiveTask, intermediateCatchEvent with a message.
    MessageCatch(MessageCatchSpec),
    Boundary(BoundarySpec),
    SubProcess {
        form: SubProcessForm,
        start_events: Vec<String>,
        /// A called process's `ioSpecification`: only its inputs go in (the child works on
        /// a data map of its own), only its outputs come back.
        io: Option<IoSpec>,
    },
    /// A call activity whose called process is not in the model (those that are become
    /// `SubProcess`es with the callee's elements, at load): it fails when reached.
    CallActivity {
        called_element: String,
    },
    /// An event subprocess (`triggeredByEvent="true"`): it runs when its start event's trigger
    /// happens while its enclosing (sub)process runs.
    EventSubProcess {
        /// Its one start event (an `EventSubProcessStart`), filled at load.
        start_event: String,
    },
    /// The start event of an event subprocess: waits (like a boundary on the enclosing
    /// (sub)process) for its trigger; interrupting, it ends everything else there.
    EventSubProcessStart {
        trigger: BoundaryTrigger,
        interrupting: bool,
    },
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // built once per model load
pub enum EndKind {
    None,
    Terminate,
    Error(ErrorRef),
    /// Message end event: sends, then ends.
    Message(MessageThrowSpec),
    /// Signal end event: broadcasts, then ends.
    Signal(SignalRef),
    /// Escalation end event: offers the escalation, then ends.
    Escalation(EscalationRef),
    /// An end event with several event definitions: throws every one, then ends.
    Multiple(Vec<Throw>),
    /// Cancel end event (inside a transaction): the transaction is cancelled, its data
    /// changes undone, and its cancel boundary event fires.
    Cancel,
}

/// One event definition of a throw event with several.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // built once per model load
pub enum Throw {
    Message(MessageThrowSpec),
    Signal(SignalRef),
    Escalation(EscalationRef),
}

/// The triggers of a catch event with several event definitions (messages, at most one
/// timer, at most one signal, conditions).
#[derive(Debug, Clone)]
pub struct CatchSet {
    pub triggers: Vec<BoundaryTrigger>,
    /// `parallelMultiple="true"`: every trigger must happen, in any order.
    pub parallel: bool,
}

/// A reference to a `bpmn:signal` (its name, payload expression and variable resolved by
/// `build_model`). A throw carries `payload` evaluated with its task data (null without one);
/// a catch with a `variable` stores what arrives there.
#[derive(Debug, Clone, Default)]
pub struct SignalRef {
    pub signal_ref: String,
    pub signal_name: String,
    pub payload: Option<Expression>,
    pub variable: Option<String>,
}

/// A reference to a `bpmn:escalation` (code, payload expression and variable resolved by
/// `build_model`, as for a signal). `escalation_ref` None on a catch = catches every
/// escalation.
#[derive(Debug, Clone, Default)]
pub struct EscalationRef {
    pub escalation_ref: Option<String>,
    pub escalation_code: Option<String>,
    pub payload: Option<Expression>,
    pub variable: Option<String>,
}

/// When a timer is due. The expression is Python (SpiffWorkflow's dialect), evaluated with the
/// task data when the timer starts: an ISO 8601 string (`"PT1H"`, `"2026-12-01T09:00:00Z"`,
/// `"R3/PT10M"`), or a `datetime` / `timedelta`.
#[derive(Debug, Clone)]
pub struct TimerSpec {
    pub kind: TimerKind,
    pub expression: Expression,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// `timeDate`: at a point in time.
    Date,
    /// `timeDuration`: after a duration from when the timer starts.
    Duration,
    /// `timeCycle`: repeatedly (`R<n>/<interval>`, `R/<interval>` for ever).
    Cycle,
}

/// A reference to a `bpmn:error` (resolved by `build_model`). `error_ref` None = catch-all.
#[derive(Debug, Clone, Default)]
pub struct ErrorRef {
    pub error_ref: Option<String>,
    pub error_code: Option<String>,
    pub error_name: Option<String>,
    /// `spiffworkflow:variableName` of the bpmn:error, else of the event definition.
    pub variable: Option<String>,
    /// `spiffworkflow:payloadExpression` of the bpmn:error: what a throw carries (without
    /// one, `{error_code, message}`).
    pub payload: Option<Expression>,
}

#[derive(Debug, Clone)]
pub struct MessageThrowSpec {
    pub message_ref: String,
    /// Resolved by `build_model`.
    pub message_name: String,
    /// `spiffworkflow:messagePayload`; None = the whole task data is sent.
    pub payload: Option<Expression>,
}

#[derive(Debug, Clone)]
pub struct MessageCatchSpec {
    pub message_ref: String,
    /// Resolved by `build_model`.
    pub message_name: String,
    /// `spiffworkflow:messageVariable`: `data[variable] = payload`.
    pub variable: Option<String>,
    /// `spiffworkflow:processVariableCorrelation`: property id -> expression over task data.
    pub process_correlations: Vec<(String, Expression)>,
}

#[derive(Debug, Clone)]
pub struct BoundarySpec {
    pub attached_to: String,
    /// Interrupting (the default): firing cancels the activity. Non-interrupting: firing
    /// starts a parallel path and the activity goes on (error boundaries always interrupt).
    pub cancel_activity: bool,
    pub trigger: BoundaryTrigger,
}

#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // built once per model load
pub enum BoundaryTrigger {
    Error(ErrorRef),
    Message(MessageCatchSpec),
    Signal(SignalRef),
    Timer(TimerSpec),
    Escalation(EscalationRef),
    /// Fires when its condition holds (checked after every step of the instance).
    Conditional(Expression),
    /// Several event definitions on one boundary or event subprocess start.
    Multiple(Box<CatchSet>),
    /// On a transaction: fires when a cancel end event inside it ends it.
    Cancel,
}

#[derive(Debug, Clone)]
pub struct ServiceTaskSpec {
    /// `spiffworkflow:serviceTaskOperator id`, e.g. "http/GetRequest".
    pub operator_id: String,
    pub result_variable: Option<String>,
    pub parameters: Vec<ServiceParameter>,
    pub retries: u32,
    pub backoff_base: f64,
}

#[derive(Debug, Clone)]
pub struct ServiceParameter {
    pub id: String,
    pub type_name: Option<String>,
    /// The `value` expression; None when the attribute is absent or empty (value null).
    pub value: Option<Expression>,
    pub required: bool,
}

impl ProcessSpec {
    pub fn element(&self, id: &str) -> Option<&ElementSpec> {
        self.elements.get(id)
    }
}

impl ElementSpec {
    /// Waits for a user (userTask, manualTask).
    pub fn is_human_task(&self) -> bool {
        matches!(self.kind, ElementKind::UserTask | ElementKind::ManualTask)
    }

    /// What a boundary event or an event subprocess's start event waits for.
    pub fn trigger(&self) -> Option<&BoundaryTrigger> {
        match &self.kind {
            ElementKind::Boundary(boundary) => Some(&boundary.trigger),
            ElementKind::EventSubProcessStart { trigger, .. } => Some(trigger),
            _ => None,
        }
    }

    /// The several triggers of a catch event, boundary or event subprocess start with
    /// several event definitions.
    pub fn catch_set(&self) -> Option<&CatchSet> {
        match (&self.kind, self.trigger()) {
            (ElementKind::MultipleCatch(set) | ElementKind::MultipleStart(set), _) => Some(set),
            (_, Some(BoundaryTrigger::Multiple(set))) => Some(set),
            _ => None,
        }
    }

    /// The triggers this element waits for: its one trigger, or each of several.
    /// (Without allocating: these are asked of every task on every step.)
    fn waited_triggers(&self) -> impl Iterator<Item = &BoundaryTrigger> {
        let set = self.catch_set();
        let single = if set.is_none() { self.trigger() } else { None };
        set.into_iter()
            .flat_map(|set| set.triggers.iter())
            .chain(single)
    }

    /// The timer this element waits for (timer catch event, timer boundary, event subprocess
    /// start, or one of several definitions).
    pub fn timer(&self) -> Option<&TimerSpec> {
        if let ElementKind::TimerCatch(timer) = &self.kind {
            return Some(timer);
        }
        self.waited_triggers().find_map(|t| match t {
            BoundaryTrigger::Timer(timer) => Some(timer),
            _ => None,
        })
    }

    /// The signal this element waits for (signal catch event, signal boundary, event
    /// subprocess start, or one of several definitions).
    pub fn signal_catch(&self) -> Option<&SignalRef> {
        if let ElementKind::SignalCatch(signal) = &self.kind {
            return Some(signal);
        }
        self.waited_triggers().find_map(|t| match t {
            BoundaryTrigger::Signal(signal) => Some(signal),
            _ => None,
        })
    }

    /// The conditions this element waits for (conditional catch event, conditional boundary,
    /// event subprocess start, or some of several definitions).
    pub fn conditions(&self) -> impl Iterator<Item = &Expression> {
        let own = match &self.kind {
            ElementKind::ConditionalCatch(condition) => Some(condition),
            _ => None,
        };
        own.into_iter()
            .chain(self.waited_triggers().filter_map(|t| match t {
                BoundaryTrigger::Conditional(condition) => Some(condition),
                _ => None,
            }))
    }

    /// Whether it waits for a condition.
    pub fn has_condition(&self) -> bool {
        self.conditions().next().is_some()
    }

    /// Every message this element waits for.
    pub fn message_catches(&self) -> Vec<&MessageCatchSpec> {
        self.message_catches_iter().collect()
    }

    fn message_catches_iter(&self) -> impl Iterator<Item = &MessageCatchSpec> {
        let own = match &self.kind {
            ElementKind::MessageCatch(m) | ElementKind::StartEvent { message: Some(m) } => Some(m),
            _ => None,
        };
        own.into_iter()
            .chain(self.waited_triggers().filter_map(|t| match t {
                BoundaryTrigger::Message(m) => Some(m),
                _ => None,
            }))
    }

    /// The message of this name the element waits for.
    pub fn message_catch_named(&self, name: &str) -> Option<&MessageCatchSpec> {
        self.message_catches_iter().find(|m| m.message_name == name)
    }

    /// An event subprocess's start event: a listener on its enclosing (sub)process.
    pub fn is_event_subprocess_start(&self) -> bool {
        matches!(self.kind, ElementKind::EventSubProcessStart { .. })
    }

    /// A boundary event that leaves its activity running when it fires.
    pub fn is_non_interrupting_boundary(&self) -> bool {
        matches!(&self.kind, ElementKind::Boundary(b) if !b.cancel_activity)
    }

    /// The (first) message this element waits for (catch event, receive task, message
    /// boundary, message start event of the process or of an event subprocess).
    pub fn message_catch(&self) -> Option<&MessageCatchSpec> {
        self.message_catches_iter().next()
    }
}
