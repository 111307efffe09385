//! The step driver: tokens run until every path waits or ends. A token entering an element
//! creates its task and hands it to the behaviour of the element's family (`behaviours`); a
//! completed task, once what every completion shares is done, sends tokens along the flows
//! its family chooses.

use super::behaviours::{behaviour_of, ElementTask};
use super::interpreter::{Abort, Interpreter, ModelFailure, Outcome, Token};
use super::TaskState;
use crate::bpmn::{Callee, ElementSpec};
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// Run tokens until every path waits or ends; complete subprocesses whose paths all ended
    /// (which may send more tokens on).
    pub fn run_until_waiting(&mut self) -> Outcome {
        loop {
            while let Some(token) = self.tokens.pop_front() {
                self.enter(token)?;
            }
            if self.release_waiting_joins() {
                continue;
            }
            self.end_finished_branches();
            match self.finished_subprocess() {
                Some(subprocess) => self.complete_subprocess(subprocess)?,
                None => return Ok(()),
            }
        }
    }

    /// A token enters its element: unless a join holds it back, a task is created and the
    /// element's family takes over.
    fn enter(&mut self, token: Token) -> Outcome {
        if let Some(scope) = token.scope {
            if !self.is_live(scope) {
                return Ok(()); // its subprocess was cancelled
            }
        }
        let element = self.element(&token.element);
        if let Some(callee) = self.callee_to_ask_for(element) {
            // before anything of the element runs: the run goes on from here once linked
            return self.ask_for(token, callee);
        }
        self.current = None;
        self.count_execution(&token.element)?;
        if !token.joined && !self.join_passes(element, &token) {
            return Ok(()); // wait for the other branches
        }
        if let Some(standard_loop) = &element.standard_loop {
            if !token.repeat && !self.loop_starts(element, standard_loop, token.scope)? {
                // testBefore and the condition does not hold: the activity is skipped
                let guid = self.new_task(element, token.scope, TaskState::Completed);
                self.join_branch(guid, token.branch);
                self.current = Some(guid);
                return self.leave(ElementTask {
                    guid,
                    element,
                    scope: token.scope,
                });
            }
        }
        let guid = self.new_task(element, token.scope, TaskState::Ready);
        self.join_branch(guid, token.branch);
        if let Some(race) = token.race {
            self.state.internal.races.insert(guid, race);
        }
        self.current = Some(guid);
        self.activate(ElementTask {
            guid,
            element,
            scope: token.scope,
        })
    }

    /// What every activation shares (inputs, data objects and stores read, pre-script), then
    /// the multi-instance body, or the element's behaviour, takes over. A task that failed runs
    /// from here again on a retry.
    pub(super) fn activate(&mut self, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        if let Some(io) = &element.io {
            self.pass_inputs(guid, element, io)?;
        }
        self.read_data_objects(guid, element);
        self.read_data_stores(guid, element)?;
        if self.runs_scripts_of(guid, element) {
            self.pre_script(element)?;
        }
        match &element.multi_instance {
            // an instance of the activity (retried) is the element itself, not a new body
            Some(multi) if !self.is_instance(guid) => {
                self.start_multi_instance(guid, element, multi, scope)
            }
            _ => self.execute(guid, element, scope),
        }
    }

    /// What the element does once its task exists: its family's behaviour takes over.
    pub fn execute(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        scope: Option<Uuid>,
    ) -> Outcome {
        let task = ElementTask {
            guid,
            element,
            scope,
        };
        behaviour_of(&element.kind).activate(self, task)
    }

    /// A call activity whose process, or a business rule task whose decision, is not in the
    /// model: the step is given it and run again (`EngineError::CalleeNeeded`), unless it is
    /// known not to be usable.
    pub(super) fn callee_missing(&self, element: &ElementSpec, callee: Callee) -> ModelFailure {
        match self.model.unavailable_callees.get(&callee.key()) {
            Some(reason) => ModelFailure::new(&element.id, reason.clone()),
            None => {
                let needed = format!("{} is needed", callee.described());
                let mut failure = ModelFailure::new(&element.id, needed);
                failure.abort = Some(Abort::CalleeNeeded(callee));
                failure
            }
        }
    }

    /// What every completion shares: post-script, outputs, COMPLETED, cancel the boundary
    /// events (and the rivals of a race it won); then the family leaves by the flows it takes
    /// (an instance of a multi-instance activity hands its result to the activity instead, a
    /// standard loop runs again while its condition holds).
    pub fn complete_activity(&mut self, guid: Uuid) -> Outcome {
        let element = self.element_of(guid);
        let scope = self.task(guid).scope;
        if self.runs_scripts_of(guid, element) {
            self.post_script(element)?;
        }
        if let Some(io) = &element.io {
            self.hand_on_outputs(guid, io)?;
        }
        self.write_data_objects(guid, element)?;
        self.write_data_stores(guid, element)?;
        self.set_state(guid, TaskState::Completed);
        self.cancel_boundaries(guid);
        self.win_race(guid);
        if self.is_instance(guid) {
            return self.instance_completed(guid);
        }
        if let Some(standard_loop) = &element.standard_loop {
            if self.loops_again(element, standard_loop, scope)? {
                self.tokens.push_back(Token {
                    element: element.id.clone(),
                    scope,
                    flow: None,
                    race: None,
                    joined: true,
                    repeat: true,
                    branch: self.current_branch(),
                });
                return Ok(());
            }
        }
        self.leave(ElementTask {
            guid,
            element,
            scope,
        })
    }

    /// Tokens go on along the flows the element's family takes (none: an implicit end, and
    /// no condition is evaluated).
    fn leave(&mut self, task: ElementTask<'m>) -> Outcome {
        if task.element.outgoing.is_empty() {
            return Ok(());
        }
        behaviour_of(&task.element.kind).leave(self, task)
    }

    /// Queue a token for the target of each flow (`race`: the event-based gateway whose catch
    /// events the tokens reach).
    pub(super) fn follow(&mut self, flows: Vec<&'m str>, scope: Option<Uuid>, race: Option<Uuid>) {
        for flow_id in flows {
            let flow = &self.process.flows[flow_id];
            self.tokens.push_back(Token {
                element: flow.target.clone(),
                scope,
                flow: Some(flow_id.to_string()),
                race,
                joined: false,
                repeat: false,
                branch: self.current_branch(),
            });
        }
    }
}
