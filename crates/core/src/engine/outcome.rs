//! How a step ends: on success the instance status follows from its live tasks; on a model
//! failure the instance goes to `Error`, the failing task to ERROR, and the only effects kept
//! are those that close the waits and calls the shell already knew about, and the data store
//! writes of the tasks that completed.

use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::{Effect, EngineInternal, InstanceError, InstanceState, InstanceStatus, TaskState};
use serde_json::json;

impl Interpreter<'_> {
    pub fn finish(self, outcome: Outcome) -> (InstanceState, Vec<Effect>) {
        match outcome {
            Ok(()) => self.settle(),
            Err(failure) => self.fail_instance(failure),
        }
    }

    fn settle(mut self) -> (InstanceState, Vec<Effect>) {
        self.end_idle_listeners();
        self.state.status = self.status_of_live_tasks();
        if self.state.status == InstanceStatus::Complete {
            // never complete while a token is alive: in flight, or held at a join
            debug_assert!(
                self.tokens.is_empty() && self.state.internal.joins.is_empty(),
                "complete with tokens alive: {:?}",
                self.state.internal.joins
            );
            // bookkeeping of what ran goes; the data objects are data and stay
            let data_objects = std::mem::take(&mut self.state.internal.data_objects);
            self.state.internal = EngineInternal {
                data_objects,
                ..EngineInternal::default()
            };
        }
        (self.state, self.effects)
    }

    /// Between steps: complete without live tasks nor a token held at a join, else waiting
    /// for a person or for something else (a join that waits for ever waits, as in
    /// SpiffWorkflow, where the workflow is then not completed).
    pub fn status_of_live_tasks(&self) -> InstanceStatus {
        let process = self.process;
        let mut live = self.state.live_tasks().peekable();
        if live.peek().is_none() {
            if !self.state.internal.joins.is_empty() {
                return InstanceStatus::Waiting;
            }
            return InstanceStatus::Complete;
        }
        let waits_for_person = live.any(|task| {
            task.state == TaskState::Waiting && process.elements[&task.element_id].is_human_task()
        });
        if waits_for_person {
            InstanceStatus::UserInputRequired
        } else {
            InstanceStatus::Waiting
        }
    }

    /// The state and effects as they are, without settling a status (the caller sets it).
    pub fn into_parts(self) -> (InstanceState, Vec<Effect>) {
        (self.state, self.effects)
    }

    fn fail_instance(mut self, failure: ModelFailure) -> (InstanceState, Vec<Effect>) {
        if let Some(guid) = self.current {
            let task = self.task_mut(guid);
            task.state = TaskState::Error;
            task.data = Some(json!({"error_code": failure.error_code, "message": failure.message}));
        }
        let mut effects = self.cancellations_of_known_waits();
        effects.extend(self.close_waits_of_live_tasks());
        self.state.status = InstanceStatus::Error;
        self.state.error = Some(InstanceError {
            element_id: failure.element_id,
            message: failure.message,
            error_code: failure.error_code,
            file: Some(self.process.file.clone()),
        });
        (self.state, effects)
    }

    /// Of this step's effects, the cancellations of waits that existed before it began, and
    /// the data store writes of the tasks that completed before the failure (SpiffArena
    /// commits each write as its task completes).
    fn cancellations_of_known_waits(&mut self) -> Vec<Effect> {
        let live_before = &self.live_before;
        self.effects
            .drain(..)
            .filter(|effect| {
                matches!(effect, Effect::WriteDataStore { .. })
                    || (effect.is_cancellation()
                        && effect
                            .task_guid()
                            .is_some_and(|guid| live_before.contains(&guid)))
            })
            .collect()
    }

    /// The effects that close the waits of the tasks live before the step (see `waits`).
    fn close_waits_of_live_tasks(&self) -> Vec<Effect> {
        self.state
            .tasks
            .iter()
            .filter(|task| self.live_before.contains(&task.guid))
            .flat_map(|task| self.cancellations_of(task.guid))
            .collect()
    }
}
