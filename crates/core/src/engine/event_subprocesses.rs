//! Event subprocesses: while a (sub)process runs, the start events of its event subprocesses
//! listen, each with a waiting task in that (sub)process, as a boundary would on it (error and
//! escalation starts have no task: a throw looks them up). When one fires, its event subprocess
//! runs there; an interrupting one first ends everything else in the (sub)process, a
//! non-interrupting one listens again. Listeners do not keep their (sub)process alive: they
//! end with it.

use super::interpreter::{Interpreter, Outcome};
use super::state::Cycle;
use super::{Task, TaskState};
use crate::bpmn::{BoundaryTrigger, ElementKind, ElementSpec};
use serde_json::Value;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// A (sub)process starts (`scope` None: the process): its event subprocesses listen.
    pub fn arm_event_subprocesses(&mut self, scope: Option<Uuid>) -> Outcome {
        for start in self.event_subprocess_starts(scope) {
            self.arm_boundary(start, None, scope, None)?;
        }
        Ok(())
    }

    /// The start events of the event subprocesses of a (sub)process, in element id order.
    fn event_subprocess_starts(&self, scope: Option<Uuid>) -> Vec<&'m ElementSpec> {
        let container = scope.map(|guid| self.task(guid).element_id.clone());
        let process = self.process;
        process
            .elements
            .values()
            .filter(|element| element.parent == container)
            .filter_map(|element| match &element.kind {
                ElementKind::EventSubProcess { start_event } => process.elements.get(start_event),
                _ => None,
            })
            .collect()
    }

    /// The error event subprocess of a (sub)process for this code (exact, else catch-all).
    pub fn error_event_subprocess(
        &self,
        scope: Option<Uuid>,
        code: Option<&str>,
    ) -> Option<&'m ElementSpec> {
        let starts = self.event_subprocess_starts(scope);
        let error_of = |start: &&'m ElementSpec| match start.trigger() {
            Some(BoundaryTrigger::Error(error)) => Some(error),
            _ => None,
        };
        let exact = starts.iter().find(|start| {
            error_of(start).is_some_and(|e| code.is_some() && e.error_code.as_deref() == code)
        });
        exact
            .or_else(|| {
                starts
                    .iter()
                    .find(|start| error_of(start).is_some_and(|e| e.error_ref.is_none()))
            })
            .copied()
    }

    /// The escalation event subprocess of a (sub)process for this code (exact, else
    /// catch-all).
    pub fn escalation_event_subprocess(
        &self,
        scope: Option<Uuid>,
        code: Option<&str>,
    ) -> Option<&'m ElementSpec> {
        let starts = self.event_subprocess_starts(scope);
        let escalation_of = |start: &&'m ElementSpec| match start.trigger() {
            Some(BoundaryTrigger::Escalation(escalation)) => Some(escalation),
            _ => None,
        };
        let exact = starts.iter().find(|start| {
            escalation_of(start).is_some_and(|e| {
                e.escalation_ref.is_some() && code.is_some() && e.escalation_code.as_deref() == code
            })
        });
        exact
            .or_else(|| {
                starts
                    .iter()
                    .find(|start| escalation_of(start).is_some_and(|e| e.escalation_ref.is_none()))
            })
            .copied()
    }

    /// A listener's trigger happened (message, signal, timer, condition).
    pub fn fire_listener(&mut self, guid: Uuid, next: Option<Cycle>) -> Outcome {
        let start = self.element_of(guid);
        let scope = self.task(guid).scope;
        self.run_event_subprocess(start, Some((guid, next)), scope, None)
    }

    /// Runs the event subprocess of `start` in `scope`: interrupting, everything else there
    /// ends first; otherwise its listener waits again. The listener's task (if it has one)
    /// becomes the start event inside it; what an error or escalation carried goes into the
    /// start's variable (an error's by default into `error`).
    pub fn run_event_subprocess(
        &mut self,
        start: &'m ElementSpec,
        listener: Option<(Uuid, Option<Cycle>)>,
        scope: Option<Uuid>,
        payload: Option<Value>,
    ) -> Outcome {
        self.count_execution(&start.id)?;
        let ElementKind::EventSubProcessStart {
            trigger,
            interrupting,
        } = &start.kind
        else {
            unreachable!("only event subprocess start events listen");
        };
        let event_subprocess = self.element(start.parent.as_deref().expect("inside one"));
        let running = self.new_task(event_subprocess, scope, TaskState::Started);
        let start_task = match listener {
            Some((guid, _)) => {
                self.task_mut(guid).scope = Some(running);
                guid
            }
            None => self.new_task(start, Some(running), TaskState::Ready),
        };
        if *interrupting {
            self.end_everything_else_in(scope, running);
        } else if let Some((_, next)) = listener {
            if super::boundaries::waits_again(trigger, next.is_some()) {
                self.arm_boundary(start, None, scope, next)?;
            }
        }
        self.current = Some(start_task);
        match (payload, start.trigger()) {
            (Some(value), Some(BoundaryTrigger::Error(caught))) => {
                let variable = caught.variable.as_deref().unwrap_or("error");
                self.task_mut(start_task).data = Some(value.clone());
                self.store_payload(Some(variable), &value);
            }
            (Some(value), Some(BoundaryTrigger::Escalation(caught))) => {
                self.store_payload(caught.variable.as_deref(), &value);
            }
            _ => {}
        }
        self.pre_script(start)?;
        self.arm_event_subprocesses(Some(running))?;
        self.complete_activity(start_task)
    }

    /// An interrupting event subprocess starts: every other live task of the (sub)process
    /// (listeners included) is cancelled, with its tokens and joins.
    fn end_everything_else_in(&mut self, scope: Option<Uuid>, keep: Uuid) {
        let others: Vec<Uuid> = self
            .state
            .tasks
            .iter()
            .filter(|task| task.scope == scope && task.state.is_live() && task.guid != keep)
            .map(|task| task.guid)
            .collect();
        for guid in others {
            self.cancel_task(guid);
        }
        self.tokens.retain(|token| token.scope != scope);
        match scope {
            Some(subprocess) => self.clear_joins(subprocess),
            None => self.forget_joins("-/"),
        }
    }

    /// A task that only listens for an event subprocess's trigger: it does not keep its
    /// (sub)process running.
    pub fn is_listener(&self, task: &Task) -> bool {
        task.state == TaskState::Waiting
            && self.element(&task.element_id).is_event_subprocess_start()
    }

    /// The process has nothing left to do but listen: its listeners end.
    pub fn end_idle_listeners(&mut self) {
        // (asked after every step: no allocation unless there is something to end)
        let idle = {
            let mut live = self.state.live_tasks().peekable();
            live.peek().is_some() && live.all(|task| self.is_listener(task))
        };
        if !idle {
            return;
        }
        let listeners: Vec<Uuid> = self.state.live_tasks().map(|task| task.guid).collect();
        for guid in listeners {
            self.cancel_task(guid);
        }
    }
}
