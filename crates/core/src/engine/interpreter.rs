//! The interpreter of one step: the instance state it works on (a copy, so a failed or
//! panicking step leaves the caller's state untouched), the tokens still to run, the effects
//! so far, and the bookkeeping every element family uses (tasks, scripts, the execution bound).
//! The families add their own `impl Interpreter` blocks in their modules.

use super::context::StepContext;
use super::{Effect, EngineError, InstanceState, Task, TaskState, MAX_EXECUTIONS_PER_STEP};
use crate::bpmn::{Callee, ElementSpec, ModelSpec, ProcessSpec};
use crate::expr::{self, ErrorKind, ExprError, Expression, Script, TaskRef};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use uuid::Uuid;

/// A failure inside the model: the step ends and the instance goes to `Error`.
#[derive(Debug)]
pub(super) struct ModelFailure {
    pub element_id: String,
    pub message: String,
    pub error_code: Option<String>,
    /// Not the model's fault: the step must not happen at all rather than put the instance
    /// in error.
    pub abort: Option<Abort>,
}

/// Why a step did not happen.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Abort {
    /// No Python could run a script.
    ScriptsUnavailable,
    /// A call activity calls a process that is in no model the step was given, met where
    /// the run cannot stop and go on (the caller runs it again).
    CalleeNeeded(Callee),
    /// A token reached an element whose callee is in no model the run was given; it waits
    /// first in the queue, and the run goes on once the callee is linked (see `paused`).
    AsksFor(Callee),
}

impl ModelFailure {
    pub fn new(element_id: &str, message: impl Into<String>) -> Self {
        ModelFailure {
            element_id: element_id.to_string(),
            message: message.into(),
            error_code: None,
            abort: None,
        }
    }

    /// An expression or script failed: its message, and what kind of failure it was.
    pub fn of_expression(element_id: &str, error: ExprError, what: &str) -> Self {
        ModelFailure {
            element_id: element_id.to_string(),
            message: format!("{error} (in {what})"),
            error_code: error.error_code().map(str::to_string),
            abort: (error.kind == ErrorKind::Unavailable).then_some(Abort::ScriptsUnavailable),
        }
    }
}

pub(super) type Outcome = Result<(), ModelFailure>;

/// A step that could not run its scripts, or that needs a called process it was not given,
/// did not happen: the caller may try it again.
pub(super) fn refuse_aborted(outcome: &Outcome) -> Result<(), EngineError> {
    match outcome {
        Err(ModelFailure {
            abort: Some(abort),
            message,
            ..
        }) => Err(match abort {
            Abort::ScriptsUnavailable => EngineError::Unavailable(message.clone()),
            Abort::CalleeNeeded(callee) | Abort::AsksFor(callee) => {
                EngineError::CalleeNeeded(callee.clone())
            }
        }),
        _ => Ok(()),
    }
}

/// A token about to enter an element.
#[derive(Debug)]
pub(super) struct Token {
    pub element: String,
    /// The subprocess task it runs in (None at top level).
    pub scope: Option<Uuid>,
    /// The sequence flow it arrived by (None for start events of a subprocess).
    pub flow: Option<String>,
    /// The event-based gateway task whose race it runs in (its catch events race).
    pub race: Option<Uuid>,
    /// An inclusive join released it: it passes the join without counting as an arrival.
    pub joined: bool,
    /// The next iteration of a standard loop (not a new arrival).
    pub repeat: bool,
    /// The non-interrupting boundary event whose path it is on (see `branches`).
    pub branch: Option<Uuid>,
}

/// The process an instance runs, or the caller's mistake of naming one the model lacks.
pub(super) fn process_of<'m>(
    model: &'m ModelSpec,
    id: &str,
) -> Result<&'m ProcessSpec, EngineError> {
    model
        .process(id)
        .ok_or_else(|| EngineError::Invalid(format!("process '{id}' is not in this model")))
}

pub(super) struct Interpreter<'m> {
    pub model: &'m ModelSpec,
    pub process: &'m ProcessSpec,
    pub state: InstanceState,
    pub effects: Vec<Effect>,
    pub tokens: VecDeque<Token>,
    /// The task being executed (marked ERROR when the step fails).
    pub current: Option<Uuid>,
    /// Live tasks when the step began (their waits are cancelled if the step fails).
    pub live_before: HashSet<Uuid>,
    expr_context: expr::Context,
    pub(super) context: &'m mut StepContext,
    /// The data stores this step wrote, as they are now (reads see them).
    pub(super) store_writes: std::collections::BTreeMap<String, super::StoreContent>,
    pub(super) executions: usize,
    /// guid -> index in state.tasks (tasks are only appended during a step).
    index: HashMap<Uuid, usize>,
}

impl<'m> Interpreter<'m> {
    pub fn new(
        model: &'m ModelSpec,
        process: &'m ProcessSpec,
        mut state: InstanceState,
        context: &'m mut StepContext,
    ) -> Self {
        for task in &mut state.tasks {
            task.dirty = false;
        }
        let live_before = state.live_tasks().map(|t| t.guid).collect();
        let no_writes = Default::default();
        Self::resumed(
            model,
            process,
            state,
            context,
            vec![],
            VecDeque::new(),
            live_before,
            no_writes,
            0,
        )
    }

    /// A paused run going on (see `paused`): the tasks keep their marks of what changed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resumed(
        model: &'m ModelSpec,
        process: &'m ProcessSpec,
        state: InstanceState,
        context: &'m mut StepContext,
        effects: Vec<Effect>,
        tokens: VecDeque<Token>,
        live_before: HashSet<Uuid>,
        store_writes: std::collections::BTreeMap<String, super::StoreContent>,
        executions: usize,
    ) -> Self {
        let index = state
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.guid, i))
            .collect();
        Interpreter {
            model,
            process,
            state,
            effects,
            tokens,
            current: None,
            live_before,
            expr_context: context.expr(),
            context,
            store_writes,
            executions,
            index,
        }
    }

    pub fn element(&self, id: &str) -> &'m ElementSpec {
        &self.process.elements[id]
    }

    pub fn has_task(&self, guid: Uuid) -> bool {
        self.index.contains_key(&guid)
    }

    pub fn task(&self, guid: Uuid) -> &Task {
        &self.state.tasks[self.index[&guid]]
    }

    /// The task, marked as changed in this step.
    pub fn task_mut(&mut self, guid: Uuid) -> &mut Task {
        let task = &mut self.state.tasks[self.index[&guid]];
        task.dirty = true;
        task
    }

    pub fn element_of(&self, guid: Uuid) -> &'m ElementSpec {
        let id = self.task(guid).element_id.clone();
        self.element(&id)
    }

    pub fn is_live(&self, guid: Uuid) -> bool {
        self.index
            .get(&guid)
            .is_some_and(|i| self.state.tasks[*i].state.is_live())
    }

    pub fn new_task(
        &mut self,
        element: &ElementSpec,
        scope: Option<Uuid>,
        state: TaskState,
    ) -> Uuid {
        let guid = self.context.task_ids.next_id();
        self.index.insert(guid, self.state.tasks.len());
        self.state.tasks.push(Task {
            guid,
            element_id: element.id.clone(),
            element_type: element.element_type.clone(),
            name: element.name.clone(),
            state,
            scope,
            data: None,
            dirty: true,
        });
        guid
    }

    pub fn set_state(&mut self, guid: Uuid, state: TaskState) {
        self.task_mut(guid).state = state;
    }

    /// Counts one element execution; a model looping without a wait state fails here.
    pub fn count_execution(&mut self, element_id: &str) -> Outcome {
        self.executions += 1;
        if self.executions > MAX_EXECUTIONS_PER_STEP {
            return Err(ModelFailure::new(
                element_id,
                format!(
                    "more than {MAX_EXECUTIONS_PER_STEP} element executions in one step: the model loops without reaching a wait state"
                ),
            ));
        }
        Ok(())
    }

    /// The expression context for code of the current task (`get_current_task_info()`).
    pub(super) fn context_of_current_task(&self) -> expr::Context {
        let task = self
            .current
            .filter(|guid| self.has_task(*guid))
            .map(|guid| {
                let task = self.task(guid);
                TaskRef {
                    id: guid.to_string(),
                    bpmn_identifier: task.element_id.clone(),
                    bpmn_name: task.name.clone(),
                    typename: task.element_type.clone(),
                }
            });
        let mut context = self.expr_context.for_task(task);
        if self.model.uses_task_lookup {
            context = context.with_lookup(self.task_lookup());
        }
        if !self.model.data_stores.is_empty() {
            context.kkv = self.kkv_getters().map(Arc::new);
        }
        context
    }

    fn task_lookup(&self) -> expr::TaskLookup {
        expr::TaskLookup {
            tasks: self
                .state
                .tasks
                .iter()
                .map(|task| expr::KnownTask {
                    id: task.guid.to_string(),
                    bpmn_identifier: task.element_id.clone(),
                    human: self.element(&task.element_id).is_human_task(),
                    live: task.state.is_live(),
                })
                .collect(),
            completed_by: self.state.internal.completed_by.clone(),
        }
    }

    pub fn run_script(&mut self, element: &ElementSpec, script: &Script, what: &str) -> Outcome {
        let cx = self.context_of_current_task();
        let owner = self.state.data_owner(self.current);
        script
            .run(self.state.data_of_mut(owner), &cx)
            .map_err(|e| ModelFailure::of_expression(&element.id, e, &format!("the {what}")))
    }

    pub fn eval(
        &self,
        element: &ElementSpec,
        expression: &Expression,
        what: &str,
    ) -> Result<Value, ModelFailure> {
        let cx = self.context_for(expression);
        expression
            .eval(&self.expression_data(), &cx)
            .map_err(|e| ModelFailure::of_expression(&element.id, e, &format!("the {what}")))
    }

    pub fn eval_bool(
        &self,
        element: &ElementSpec,
        expression: &Expression,
        what: &str,
    ) -> Result<bool, ModelFailure> {
        let cx = self.context_for(expression);
        expression
            .eval_bool(&self.expression_data(), &cx)
            .map_err(|e| ModelFailure::of_expression(&element.id, e, what))
    }

    /// The task's context only where Python will run (the fast path needs none).
    fn context_for(&self, expression: &Expression) -> std::borrow::Cow<'_, expr::Context> {
        if expression.needs_python() {
            std::borrow::Cow::Owned(self.context_of_current_task())
        } else {
            std::borrow::Cow::Borrowed(&self.expr_context)
        }
    }

    /// What an expression sees: the current task's data, and the data objects it does not
    /// hold (SpiffWorkflow's script engine shows expressions the workflow's data objects, so a
    /// gateway can decide on one).
    pub(super) fn expression_data(&self) -> std::borrow::Cow<'_, crate::engine::Map> {
        let objects = &self.state.internal.data_objects;
        if objects.is_empty() {
            return std::borrow::Cow::Borrowed(self.data());
        }
        let mut data = self.data().clone();
        for (id, value) in objects {
            data.entry(id.clone()).or_insert_with(|| value.clone());
        }
        std::borrow::Cow::Owned(data)
    }

    /// The task data the current task's code works on.
    pub fn data(&self) -> &crate::engine::Map {
        self.state.data_of(self.state.data_owner(self.current))
    }

    pub fn data_mut(&mut self) -> &mut crate::engine::Map {
        let owner = self.state.data_owner(self.current);
        self.state.data_of_mut(owner)
    }

    pub fn expr_context(&self) -> &expr::Context {
        &self.expr_context
    }

    /// The time of the step.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.expr_context.now
    }

    pub fn pre_script(&mut self, element: &ElementSpec) -> Outcome {
        match &element.pre_script {
            Some(script) => self.run_script(element, script, "preScript"),
            None => Ok(()),
        }
    }

    pub fn post_script(&mut self, element: &ElementSpec) -> Outcome {
        match &element.post_script {
            Some(script) => self.run_script(element, script, "postScript"),
            None => Ok(()),
        }
    }
}
