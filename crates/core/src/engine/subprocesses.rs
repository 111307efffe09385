//! Embedded subprocesses once started (starting one is its behaviour, see
//! `behaviours::subprocesses`): a subprocess completes when no path inside it is live, and
//! takes everything inside with it when it is cancelled or a terminate end event ends its
//! scope. Also the data a task or call with an ioSpecification passes in and hands on.

use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::Map;
use super::TaskState;
use crate::bpmn::{BoundaryTrigger, ElementKind, ElementSpec, IoSpec, SubProcessForm};
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// A started subprocess (or event subprocess) none of whose tasks is live any more, but
    /// for the listeners of its own event subprocesses.
    pub fn finished_subprocess(&self) -> Option<Uuid> {
        let tasks = &self.state.tasks;
        tasks
            .iter()
            .find(|task| {
                task.state == TaskState::Started
                    && !self.state.internal.multi.contains_key(&task.guid)
                    && matches!(
                        self.element(&task.element_id).kind,
                        ElementKind::SubProcess { .. }
                            | ElementKind::EventSubProcess { .. }
                            | ElementKind::CallActivity { .. }
                    )
                    && !tasks.iter().any(|child| {
                        child.scope == Some(task.guid)
                            && child.state.is_live()
                            && !self.is_listener(child)
                    })
                    && !self.holds_join_arrivals(Some(task.guid))
            })
            .map(|task| task.guid)
    }

    pub fn complete_subprocess(&mut self, subprocess: Uuid) -> Outcome {
        // its listeners end with it
        self.cancel_children(subprocess);
        self.state.internal.transactions.remove(&subprocess);
        self.clear_joins(subprocess);
        let element = self.element_of(subprocess);
        if let ElementKind::SubProcess { io: Some(io), .. } = &element.kind {
            self.take_outputs(subprocess, io)?;
        } else if self.copies_data(subprocess, element) {
            let own = self.state.internal.local_data.remove(&subprocess);
            let owner = self.state.data_owner(Some(subprocess));
            *self.state.data_of_mut(owner) = own.unwrap_or_default();
        }
        self.current = Some(subprocess);
        self.complete_activity(subprocess)
    }

    /// A call without an ioSpecification works on a copy of its caller's data (unless it is an
    /// instance of a multi-instance call activity, which has a copy already).
    pub(super) fn copies_data(&self, guid: Uuid, element: &ElementSpec) -> bool {
        let is_call = matches!(
            element.kind,
            ElementKind::SubProcess {
                form: SubProcessForm::Call,
                ..
            }
        );
        is_call && !self.is_instance(guid)
    }

    /// A task, or a called process, with an ioSpecification runs on its data inputs only
    /// (each must be in the data around it), in a data map of its own.
    pub fn pass_inputs(&mut self, guid: Uuid, element: &ElementSpec, io: &IoSpec) -> Outcome {
        let data = self.data();
        let mut inputs = Map::new();
        for input in &io.inputs {
            let value = data.get(input).ok_or_else(|| {
                ModelFailure::new(
                    &element.id,
                    format!("the data input '{input}' is missing from the task data"),
                )
            })?;
            inputs.insert(input.clone(), value.clone());
        }
        self.state.internal.local_data.insert(guid, inputs);
        Ok(())
    }

    /// A called process with an ioSpecification completed: its data outputs (each must be
    /// set) go into the caller's data, and nothing else of its data does.
    fn take_outputs(&mut self, subprocess: Uuid, io: &IoSpec) -> Outcome {
        let outputs = self.outputs_of(subprocess, io)?;
        let owner = self.state.data_owner(Some(subprocess));
        self.state.data_of_mut(owner).extend(outputs);
        Ok(())
    }

    /// A task with an ioSpecification completed: its data outputs (each must be set) are the
    /// data that goes on, replacing what was there (SpiffWorkflow's rule).
    pub fn hand_on_outputs(&mut self, guid: Uuid, io: &IoSpec) -> Outcome {
        let outputs = self.outputs_of(guid, io)?;
        let owner = self.state.data_owner(Some(guid));
        *self.state.data_of_mut(owner) = outputs;
        Ok(())
    }

    /// The data outputs of a task or call with a data map of its own (the map goes).
    fn outputs_of(&mut self, guid: Uuid, io: &IoSpec) -> Result<Map, ModelFailure> {
        let mut own = self
            .state
            .internal
            .local_data
            .remove(&guid)
            .unwrap_or_default();
        let mut outputs = Map::new();
        for output in &io.outputs {
            let value = own.remove(output).ok_or_else(|| {
                ModelFailure::new(
                    &self.task(guid).element_id,
                    format!("the data output '{output}' was not set"),
                )
            })?;
            outputs.insert(output.clone(), value);
        }
        Ok(outputs)
    }

    /// Cancel every live task inside a subprocess, and the tokens and joins still there.
    pub fn cancel_children(&mut self, scope: Uuid) {
        let children: Vec<Uuid> = self
            .state
            .tasks
            .iter()
            .filter(|task| task.scope == Some(scope) && task.state.is_live())
            .map(|task| task.guid)
            .collect();
        for child in children {
            self.cancel_task(child);
        }
        self.tokens.retain(|token| token.scope != Some(scope));
        self.clear_joins(scope);
    }

    /// A cancel end event: its transaction is cancelled with everything in it, the task data
    /// goes back to what it was when the transaction started, and the transaction's cancel
    /// boundary event (if any) fires.
    pub fn cancel_transaction(&mut self, scope: Option<Uuid>, element_id: &str) -> Outcome {
        let Some(transaction) = scope else {
            return Err(ModelFailure::new(
                element_id,
                "a cancel end event outside a transaction",
            ));
        };
        if let Some(before) = self.state.internal.transactions.remove(&transaction) {
            let owner = self.state.data_owner(Some(transaction));
            *self.state.data_of_mut(owner) = before;
        }
        let element = self.element_of(transaction);
        let boundary = element
            .boundaries
            .iter()
            .map(|id| self.element(id))
            .find(|b| matches!(b.trigger(), Some(BoundaryTrigger::Cancel)));
        let attached_scope = self.task(transaction).scope;
        self.cancel_task(transaction);
        let Some(boundary) = boundary else {
            return Ok(());
        };
        self.count_execution(&boundary.id)?;
        let guid = self.new_task(boundary, attached_scope, TaskState::Ready);
        self.current = Some(guid);
        self.pre_script(boundary)?;
        self.complete_activity(guid)
    }

    /// Terminate end event: everything in the scope ends (the whole instance at top level).
    pub fn terminate(&mut self, scope: Option<Uuid>) {
        match scope {
            Some(subprocess) => self.cancel_children(subprocess),
            None => {
                let live: Vec<Uuid> = self.state.live_tasks().map(|task| task.guid).collect();
                for guid in live {
                    self.cancel_task(guid);
                }
                self.tokens.clear();
                self.forget_joins("");
            }
        }
    }
}
