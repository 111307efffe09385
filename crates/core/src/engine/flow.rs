//! The step driver: tokens run until every path waits or ends. A token entering an element
//! creates its task and hands it to the element's family (activities, events, gateways,
//! subprocesses); a completed task sends tokens along the outgoing flows its family chooses.

use super::interpreter::{Abort, Interpreter, ModelFailure, Outcome, Token};
use super::TaskState;
use crate::bpmn::{Callee, ElementKind, ElementSpec};
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
                return self.leave(element, token.scope, None);
            }
        }
        let guid = self.new_task(element, token.scope, TaskState::Ready);
        self.join_branch(guid, token.branch);
        if let Some(race) = token.race {
            self.state.internal.races.insert(guid, race);
        }
        self.current = Some(guid);
        if let Some(io) = &element.io {
            self.pass_inputs(guid, element, io)?;
        }
        self.read_data_objects(guid, element);
        self.read_data_stores(guid, element)?;
        if self.runs_scripts_of(guid, element) {
            self.pre_script(element)?;
        }
        match &element.multi_instance {
            Some(multi) => self.start_multi_instance(guid, element, multi, token.scope),
            None => self.execute(guid, element, token.scope),
        }
    }

    /// What the element does once its task exists, by family.
    pub fn execute(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        scope: Option<Uuid>,
    ) -> Outcome {
        match &element.kind {
            ElementKind::StartEvent { .. }
            | ElementKind::TimerStart(_)
            | ElementKind::SignalStart(_)
            | ElementKind::MultipleStart(_)
            | ElementKind::PassThrough
            | ElementKind::Boundary(_)
            | ElementKind::ExclusiveGateway
            | ElementKind::ParallelGateway
            | ElementKind::InclusiveGateway
            | ElementKind::EventGateway => self.complete_activity(guid),
            ElementKind::TimerCatch(timer) => self.start_timer(guid, element, timer),
            ElementKind::ConditionalCatch(_) => {
                // checked when the step has run (`fire_met_conditions`)
                self.set_state(guid, TaskState::Waiting);
                Ok(())
            }
            ElementKind::LinkThrow { target, .. } => {
                self.complete_activity(guid)?;
                self.tokens.push_back(Token {
                    element: target.clone(),
                    scope,
                    flow: None,
                    race: None,
                    joined: false,
                    repeat: false,
                    branch: self.current_branch(),
                });
                Ok(())
            }
            ElementKind::LinkCatch { .. } => self.complete_activity(guid),
            ElementKind::MultipleCatch(set) => {
                for trigger in &set.triggers {
                    self.wait_for_trigger(guid, element, trigger, None)?;
                }
                Ok(())
            }
            ElementKind::MultipleThrow(throws) => {
                self.throw_all(guid, element, throws, scope)?;
                self.go_on_unless_interrupted(guid)
            }
            ElementKind::SignalCatch(signal) => {
                self.wait_for_signal(guid, signal);
                Ok(())
            }
            ElementKind::SignalThrow(signal) => {
                self.throw_signal(guid, element, signal)?;
                self.go_on_unless_interrupted(guid)
            }
            ElementKind::EscalationThrow(escalation) => {
                self.throw_escalation(guid, element, scope, escalation)?;
                self.go_on_unless_interrupted(guid)
            }
            ElementKind::ScriptTask { script } => self.run_script_task(guid, element, script),
            ElementKind::MessageThrow(message) => {
                self.send_message(guid, element, message)?;
                self.complete_activity(guid)
            }
            ElementKind::EndEvent(kind) => self.reach_end_event(guid, element, kind, scope),
            ElementKind::UserTask | ElementKind::ManualTask => {
                self.wait_for_person(guid, element, scope)
            }
            ElementKind::ServiceTask(_) => self.call_service(guid, element, scope),
            ElementKind::MessageCatch(message) => {
                self.wait_for_message(guid, element, message, scope)
            }
            ElementKind::SubProcess {
                start_events, io, ..
            } => self.start_subprocess(guid, element, start_events, io.as_ref(), scope),
            ElementKind::Faulty { reason } => Err(ModelFailure::new(&element.id, reason.clone())),
            ElementKind::CallActivity { called_element } => {
                // a process of the model left as a call: a recursive call, copied in now
                let callee = if self.model.processes.contains_key(called_element) {
                    Callee::Recursion(element.id.clone())
                } else {
                    Callee::Process(called_element.clone())
                };
                Err(self.callee_missing(element, callee))
            }
            ElementKind::BusinessRuleTask { decision_id } => {
                self.run_business_rule_task(guid, element, decision_id)
            }
            // never entered by a token: they start from their triggers
            ElementKind::EventSubProcess { .. } | ElementKind::EventSubProcessStart { .. } => {
                Err(ModelFailure::new(
                    &element.id,
                    "an event subprocess is not entered by a sequence flow",
                ))
            }
        }
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

    /// A throw event goes on after its event was caught, unless what caught it interrupted
    /// the (sub)process it is in.
    fn go_on_unless_interrupted(&mut self, guid: Uuid) -> Outcome {
        if self.is_live(guid) {
            self.complete_activity(guid)
        } else {
            Ok(())
        }
    }

    /// Post-script, COMPLETED, cancel the boundary events (and the rivals of a race it won),
    /// follow the outgoing flows (an instance of a multi-instance activity hands its result to
    /// the activity instead).
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
        // the catch events after an event-based gateway race each other
        let race = matches!(element.kind, ElementKind::EventGateway).then_some(guid);
        self.leave(element, scope, race)
    }

    /// Queue tokens for the targets of the outgoing flows the element takes.
    fn leave(
        &mut self,
        element: &'m ElementSpec,
        scope: Option<Uuid>,
        race: Option<Uuid>,
    ) -> Outcome {
        for flow_id in self.outgoing_flows(element)? {
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
        Ok(())
    }
}
