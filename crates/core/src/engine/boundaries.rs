//! Boundary events, errors and escalations: message, signal and timer boundaries wait while
//! their activity does; interrupting ones cancel it when they fire, non-interrupting ones start
//! a parallel path and wait again. Errors go to the nearest matching error boundary on the
//! failed task or an enclosing subprocess, escalations to the nearest escalation boundary on an
//! enclosing subprocess (each with its payload, see `signals`). Cancelling a task takes its
//! waits with it.

use super::behaviours::behaviour_of;
use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::state::Cycle;
use super::waits::HeldWait;
use super::{Effect, TaskState};
use crate::bpmn::{BoundaryTrigger, CatchSet, ElementKind, ElementSpec, ErrorRef, EscalationRef};
use serde_json::{json, Value};
use uuid::Uuid;

/// An error as it is thrown: its code and message (what an uncaught one fails the instance
/// with), and the payload its definition's `payloadExpression` gave (without one, a catch
/// gets `{error_code, message}`).
#[derive(Debug, Clone)]
pub struct Thrown {
    pub code: Option<String>,
    pub message: String,
    pub payload: Option<Value>,
}

impl Thrown {
    /// What a catch stores in its variable.
    fn value(&self) -> Value {
        match &self.payload {
            Some(payload) => payload.clone(),
            None => json!({"error_code": self.code, "message": self.message}),
        }
    }
}

/// Which trigger of a waiting task happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired<'a> {
    Message(&'a str),
    Timer,
    Signal(&'a str),
    /// The trigger with this index in the element's catch set (0 for a lone condition).
    Condition(usize),
}

impl Fired<'_> {
    /// Whether this is the trigger `trigger` (conditions are told by their index instead).
    fn is(&self, trigger: &BoundaryTrigger) -> bool {
        match (self, trigger) {
            (Fired::Message(name), BoundaryTrigger::Message(m)) => m.message_name == *name,
            (Fired::Timer, BoundaryTrigger::Timer(_)) => true,
            (Fired::Signal(name), BoundaryTrigger::Signal(s)) => s.signal_name == *name,
            _ => false,
        }
    }
}

impl Fired<'_> {
    /// Whether this trigger took the wait `wait` itself (the shell consumed it: a due timer,
    /// a delivered signal), so that there is nothing of it left to close.
    fn took(&self, wait: HeldWait) -> bool {
        matches!(
            (self, wait),
            (Fired::Timer, HeldWait::Timer) | (Fired::Signal(_), HeldWait::Signal)
        )
    }
}

impl<'m> Interpreter<'m> {
    /// The attached task starts waiting: its message, signal and timer boundaries wait with it.
    pub fn start_boundaries(
        &mut self,
        attached: Uuid,
        element: &'m ElementSpec,
        scope: Option<Uuid>,
    ) -> Outcome {
        if self.is_instance(attached) {
            return Ok(()); // they belong to the multi-instance activity's task
        }
        self.keep_branch_origin(attached, element);
        for boundary_id in &element.boundaries {
            self.arm_boundary(self.element(boundary_id), Some(attached), scope, None)?;
        }
        Ok(())
    }

    /// A boundary (or an event subprocess's start event, `attached` None) that waits
    /// (message, signal, timer, condition) gets its waiting task; `cycle` is the occurrence a
    /// re-armed cycle timer waits for. Error and escalation triggers have no task: they are
    /// looked up when one is thrown.
    pub fn arm_boundary(
        &mut self,
        boundary: &'m ElementSpec,
        attached: Option<Uuid>,
        scope: Option<Uuid>,
        cycle: Option<Cycle>,
    ) -> Outcome {
        let Some(trigger) = boundary.trigger() else {
            return Ok(());
        };
        if matches!(
            trigger,
            BoundaryTrigger::Error(_) | BoundaryTrigger::Escalation(_) | BoundaryTrigger::Cancel
        ) {
            return Ok(());
        }
        let guid = self.start_boundary(boundary, attached, scope);
        if let Some(attached) = attached.filter(|_| boundary.is_non_interrupting_boundary()) {
            self.open_branch(guid, attached);
        }
        self.wait_for_trigger(guid, boundary, trigger, cycle)
    }

    /// The task waits for a trigger (each of several): the shell records the message wait,
    /// the timer or the signal wait; a condition is checked after every step.
    pub fn wait_for_trigger(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        trigger: &'m BoundaryTrigger,
        cycle: Option<Cycle>,
    ) -> Outcome {
        self.set_state(guid, TaskState::Waiting);
        match trigger {
            BoundaryTrigger::Error(_)
            | BoundaryTrigger::Escalation(_)
            | BoundaryTrigger::Cancel
            | BoundaryTrigger::Conditional(_) => {}
            BoundaryTrigger::Message(message) => {
                let expected = self.expected_correlation(element, message)?;
                self.effects.push(Effect::WaitForMessage {
                    task_guid: guid,
                    name: message.message_name.clone(),
                    expected,
                });
            }
            BoundaryTrigger::Signal(signal) => self.wait_for_signal(guid, signal),
            BoundaryTrigger::Timer(timer) => match cycle {
                Some(cycle) => self.wait_for_occurrence(guid, element, cycle),
                None => self.start_timer(guid, element, timer)?,
            },
            BoundaryTrigger::Multiple(set) => {
                for trigger in &set.triggers {
                    self.wait_for_trigger(guid, element, trigger, cycle.clone())?;
                }
            }
        }
        Ok(())
    }

    fn start_boundary(
        &mut self,
        boundary: &ElementSpec,
        attached: Option<Uuid>,
        scope: Option<Uuid>,
    ) -> Uuid {
        let guid = self.new_task(boundary, scope, TaskState::Waiting);
        if let Some(attached) = attached {
            self.state.internal.boundaries.insert(guid, attached);
        }
        guid
    }

    /// A waiting boundary, event subprocess start, or catch event's trigger happened (the
    /// message was received, the timer came due, the signal or condition arrived); `next` is a
    /// cycle timer's next occurrence.
    pub fn fire_trigger(&mut self, guid: Uuid, next: Option<Cycle>, what: Fired) -> Outcome {
        self.current = Some(guid);
        if let Some(set) = self.element_of(guid).catch_set() {
            if !self.set_fires(guid, set, what) {
                return Ok(()); // parallelMultiple: it waits for the rest
            }
        }
        behaviour_of(&self.element_of(guid).kind).triggered(self, guid, next)
    }

    /// One trigger of a catch set happened. Any-of: the set fires, and the task's other waits
    /// end. All-of (`parallelMultiple`): it fires once every trigger has happened.
    fn set_fires(&mut self, guid: Uuid, set: &'m CatchSet, what: Fired) -> bool {
        if set.parallel {
            let index = match what {
                Fired::Condition(index) => Some(index),
                _ => set.triggers.iter().position(|t| what.is(t)),
            };
            let fired = self.state.internal.fired.entry(guid).or_default();
            if let Some(index) = index {
                fired.insert(index);
            }
            if fired.len() < set.triggers.len() {
                return false;
            }
            self.state.internal.fired.remove(&guid);
            self.state.internal.transactions.remove(&guid);
        }
        // the task's other waits end (the receive that delivered is completed already: closing
        // its message waits closes the others)
        for wait in self.waits_held_by(guid) {
            if what.took(wait) {
                continue;
            }
            self.effects.push(wait.cancellation(guid));
            if wait == HeldWait::Timer {
                self.state.internal.cycles.remove(&guid);
            }
        }
        true
    }

    pub fn cancel_boundaries(&mut self, attached: Uuid) {
        let boundaries: Vec<Uuid> = self
            .state
            .internal
            .boundaries
            .iter()
            .filter(|(_, a)| **a == attached)
            .map(|(boundary, _)| *boundary)
            .collect();
        for boundary in boundaries {
            self.state.internal.boundaries.remove(&boundary);
            self.cancel_task(boundary);
        }
        self.state.internal.branch_origins.remove(&attached);
    }

    /// Cancel a live task: its wait effects, its boundaries, and what its family holds besides
    /// (a subprocess everything inside, a multi-instance activity its instances).
    pub fn cancel_task(&mut self, guid: Uuid) {
        if !self.is_live(guid) {
            return;
        }
        let element = self.element_of(guid);
        let cancellations: Vec<Effect> = self.cancellations_of(guid).collect();
        self.effects.extend(cancellations);
        self.state.internal.cycles.remove(&guid);
        self.state.internal.races.remove(&guid);
        self.state.internal.fired.remove(&guid);
        self.state.internal.local_data.remove(&guid);
        self.leave_branch(guid);
        self.set_state(guid, TaskState::Cancelled);
        // a multi-instance activity's own task is the body around its instances, whatever
        // its element's family
        if self.is_multi_activity(guid) {
            self.cancel_instances(guid);
        } else {
            behaviour_of(&element.kind).terminate(self, guid);
        }
        self.cancel_boundaries(guid);
        self.state.internal.boundaries.remove(&guid);
    }

    /// Offer an error to the error boundaries of `origin` (a failed task), then of the
    /// enclosing subprocesses from `scope` outwards. Uncaught: the step fails.
    pub fn throw_error(
        &mut self,
        origin: Option<Uuid>,
        scope: Option<Uuid>,
        element_id: &str,
        thrown: Thrown,
    ) -> Outcome {
        let value = thrown.value();
        let Thrown { code, message, .. } = thrown;
        // at each level: the boundaries of the task (the failed one, then each enclosing
        // subprocess), then the error event subprocesses of the (sub)process it is in
        let (mut attached, mut level) = (origin, scope);
        loop {
            // an instance of a multi-instance activity: the activity's boundaries catch
            if let Some(guid) = attached.filter(|guid| !self.is_instance(*guid)) {
                let element = self.element_of(guid);
                if let Some(boundary) = self.error_boundary_for(element, code.as_deref()) {
                    if Some(guid) == origin {
                        // the failed task is already ERROR; its other boundaries go.
                        self.cancel_boundaries(guid);
                    } else {
                        self.cancel_task(guid);
                    }
                    let attached_scope = self.task(guid).scope;
                    return self.fire_error_boundary(boundary, attached_scope, value);
                }
            }
            let around_instances = level.is_some_and(|guid| self.is_multi_activity(guid));
            if let Some(start) = self
                .error_event_subprocess(level, code.as_deref())
                .filter(|_| !around_instances)
            {
                return self.run_event_subprocess(start, None, level, Some(value));
            }
            let Some(subprocess) = level else { break };
            attached = Some(subprocess);
            level = self.task(subprocess).scope;
        }
        Err(ModelFailure {
            element_id: element_id.to_string(),
            message,
            error_code: code,
            abort: None,
        })
    }

    /// The boundary catching exactly this code, else a catch-all one.
    fn error_boundary_for(
        &self,
        element: &'m ElementSpec,
        code: Option<&str>,
    ) -> Option<&'m ElementSpec> {
        let catches: Vec<(&'m ElementSpec, &'m ErrorRef)> = element
            .boundaries
            .iter()
            .map(|id| self.element(id))
            .filter_map(|boundary| error_caught_by(boundary).map(|error| (boundary, error)))
            .collect();
        let exact = code.and_then(|code| {
            catches
                .iter()
                .find(|(_, error)| error.error_code.as_deref() == Some(code))
        });
        exact
            .or_else(|| catches.iter().find(|(_, error)| error.error_code.is_none()))
            .map(|(boundary, _)| *boundary)
    }

    /// The error boundary fires: the error goes into its variable (default `error`).
    fn fire_error_boundary(
        &mut self,
        boundary: &'m ElementSpec,
        scope: Option<Uuid>,
        value: Value,
    ) -> Outcome {
        self.count_execution(&boundary.id)?;
        let variable = error_caught_by(boundary).and_then(|error| error.variable.clone());
        let guid = self.new_task(boundary, scope, TaskState::Ready);
        self.current = Some(guid);
        self.task_mut(guid).data = Some(value.clone());
        self.data_mut()
            .insert(variable.unwrap_or_else(|| "error".to_string()), value);
        self.pre_script(boundary)?;
        self.complete_activity(guid)
    }

    /// A waiting message or signal boundary fires: the attached task is interrupted.
    pub fn fire_boundary(&mut self, guid: Uuid) -> Outcome {
        let boundary = self.element_of(guid);
        self.count_execution(&boundary.id)?;
        if let Some(attached) = self.state.internal.boundaries.remove(&guid) {
            self.cancel_task(attached);
        }
        self.current = Some(guid);
        self.pre_script(boundary)?;
        self.complete_activity(guid)
    }

    /// A non-interrupting boundary fires: its task completes and a token follows its flows,
    /// while the activity goes on and the boundary waits again (for the next message or
    /// signal, or the cycle's `next` occurrence; a one-off timer does not wait again).
    pub fn fire_non_interrupting(&mut self, guid: Uuid, next: Option<Cycle>) -> Outcome {
        let boundary = self.element_of(guid);
        self.count_execution(&boundary.id)?;
        let attached = self.state.internal.boundaries.remove(&guid);
        if let Some(attached) = attached {
            self.start_branch(guid, attached);
        }
        let scope = self.task(guid).scope;
        let waits_again = boundary
            .trigger()
            .is_some_and(|trigger| waits_again(trigger, next.is_some()));
        if let Some(attached) = attached.filter(|a| waits_again && self.is_live(*a)) {
            self.arm_boundary(boundary, Some(attached), scope, next)?;
        }
        self.current = Some(guid);
        self.pre_script(boundary)?;
        self.complete_activity(guid)
    }

    /// The escalation event `guid` throws (with its payload) goes to the nearest catch.
    pub fn throw_escalation(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        scope: Option<Uuid>,
        escalation: &'m EscalationRef,
    ) -> Outcome {
        let payload = self.evaluate_payload(element, escalation.payload.as_ref())?;
        let code = escalation.escalation_code.as_deref();
        self.escalate(scope, code, payload)?;
        self.current = Some(guid); // what the thrower throws next sees its data
        Ok(())
    }

    /// Offer an escalation to the escalation event subprocesses and boundaries of the
    /// enclosing subprocesses, from `scope` outwards. Uncaught, it does nothing.
    fn escalate(&mut self, scope: Option<Uuid>, code: Option<&str>, payload: Value) -> Outcome {
        // at each level: the escalation event subprocesses of the (sub)process, then the
        // boundaries of the subprocess itself
        let mut level = scope;
        loop {
            let around_instances = level.is_some_and(|guid| self.is_multi_activity(guid));
            if let Some(start) = self
                .escalation_event_subprocess(level, code)
                .filter(|_| !around_instances)
            {
                return self.run_event_subprocess(start, None, level, Some(payload));
            }
            let Some(subprocess) = level else {
                return Ok(());
            };
            let element = self.element_of(subprocess);
            // an instance of a multi-instance activity: the activity's boundaries catch
            let boundary = (!self.is_instance(subprocess))
                .then(|| self.escalation_boundary_for(element, code))
                .flatten();
            if let Some(boundary) = boundary {
                return self.fire_escalation_boundary(boundary, subprocess, &payload);
            }
            level = self.task(subprocess).scope;
        }
    }

    /// The boundary catching exactly this code, else a catch-all one.
    fn escalation_boundary_for(
        &self,
        element: &'m ElementSpec,
        code: Option<&str>,
    ) -> Option<&'m ElementSpec> {
        let catches: Vec<(&'m ElementSpec, &'m EscalationRef)> = element
            .boundaries
            .iter()
            .map(|id| self.element(id))
            .filter_map(|boundary| match &boundary.kind {
                ElementKind::Boundary(spec) => match &spec.trigger {
                    BoundaryTrigger::Escalation(escalation) => Some((boundary, escalation)),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let exact = code.and_then(|code| {
            catches.iter().find(|(_, e)| {
                e.escalation_ref.is_some() && e.escalation_code.as_deref() == Some(code)
            })
        });
        exact
            .or_else(|| catches.iter().find(|(_, e)| e.escalation_ref.is_none()))
            .map(|(boundary, _)| *boundary)
    }

    /// An escalation boundary catches: interrupting, its activity is cancelled; either way a
    /// token follows the boundary's flows, with the payload in the boundary's variable.
    fn fire_escalation_boundary(
        &mut self,
        boundary: &'m ElementSpec,
        attached: Uuid,
        payload: &Value,
    ) -> Outcome {
        self.count_execution(&boundary.id)?;
        let scope = self.task(attached).scope;
        if !boundary.is_non_interrupting_boundary() {
            self.cancel_task(attached);
        }
        let guid = self.new_task(boundary, scope, TaskState::Ready);
        if boundary.is_non_interrupting_boundary() {
            self.start_branch(guid, attached);
        }
        self.current = Some(guid);
        if let Some(BoundaryTrigger::Escalation(caught)) = boundary.trigger() {
            self.store_payload(caught.variable.as_deref(), payload);
        }
        self.pre_script(boundary)?;
        self.complete_activity(guid)
    }
}

/// Whether a non-interrupting trigger that fired waits again: for the next message or signal,
/// a cycle's next occurrence; not a one-off timer, nor a condition (one that still holds
/// would fire again at once).
pub fn waits_again(trigger: &BoundaryTrigger, next_occurrence: bool) -> bool {
    match trigger {
        BoundaryTrigger::Message(_) | BoundaryTrigger::Signal(_) => true,
        BoundaryTrigger::Timer(_) => next_occurrence,
        BoundaryTrigger::Multiple(set) => {
            set.triggers.iter().any(|t| waits_again(t, next_occurrence))
        }
        BoundaryTrigger::Error(_)
        | BoundaryTrigger::Escalation(_)
        | BoundaryTrigger::Cancel
        | BoundaryTrigger::Conditional(_) => false,
    }
}

fn error_caught_by(boundary: &ElementSpec) -> Option<&ErrorRef> {
    match &boundary.kind {
        ElementKind::Boundary(spec) => match &spec.trigger {
            BoundaryTrigger::Error(error) => Some(error),
            _ => None,
        },
        _ => None,
    }
}
