//! What an operator does to an instance from outside its model: suspend it, resume it,
//! terminate it, retry the task that put it in error. Each checks the instance's status
//! first (an `EngineError` leaves the state untouched).
//!
//! Suspension itself is the shell's business (no message, timer or connector call reaches a
//! suspended instance); the engine only records the status and, on resume, works out the
//! status the instance's live tasks give it.

use super::behaviours::ElementTask;
use super::context::{StepContext, TaskIds};
use super::interpreter::{process_of, Interpreter, Outcome};
use super::paused::Run;
use super::waits::HeldWait;
use super::{Effect, EngineError, InstanceState, InstanceStatus, TaskState};
use crate::bpmn::ModelSpec;
use std::sync::Arc;
use uuid::Uuid;

/// A live instance (not final, not already suspended) stops taking events.
pub fn suspend(state: &mut InstanceState) -> Result<(), EngineError> {
    if state.status.is_final() || state.status == InstanceStatus::Suspended {
        return Err(refusal(state, "suspended"));
    }
    state.status = InstanceStatus::Suspended;
    Ok(())
}

/// A suspended instance takes events again; its status is what its live tasks make it
/// (waiting, or user input required).
pub fn resume(model: &ModelSpec, state: &mut InstanceState) -> Result<(), EngineError> {
    if state.status != InstanceStatus::Suspended {
        return Err(refusal(state, "resumed"));
    }
    let process = process_of(model, &state.process_id)?;
    let mut unused = inert_context();
    let interpreter = Interpreter::new(model, process, state.clone(), &mut unused);
    state.status = interpreter.status_of_live_tasks();
    Ok(())
}

/// Every live task is cancelled (with the waits and calls the shell recorded for them) and the
/// instance is terminated. An instance in error or suspended may be terminated too.
pub fn terminate(model: &ModelSpec, state: &mut InstanceState) -> Result<Vec<Effect>, EngineError> {
    if matches!(
        state.status,
        InstanceStatus::Complete | InstanceStatus::Terminated
    ) {
        return Err(refusal(state, "terminated"));
    }
    let process = process_of(model, &state.process_id)?;
    let mut unused = inert_context();
    let mut interpreter = Interpreter::new(model, process, state.clone(), &mut unused);
    interpreter.terminate(None);
    let (mut new_state, effects) = interpreter.into_parts();
    new_state.status = InstanceStatus::Terminated;
    *state = new_state;
    Ok(effects)
}

/// The task whose failure put the instance in error runs again, from its start (inputs,
/// pre-script, what the element does), and the instance runs on from there; the waits and
/// calls of its other live tasks, closed when it failed, are opened again. If the task fails
/// again the instance is back in error with the new cause.
pub(super) fn retry(
    model: &ModelSpec,
    state: &mut InstanceState,
    context: &mut StepContext,
) -> Result<Run<Vec<Effect>>, EngineError> {
    if state.status != InstanceStatus::Error {
        return Err(refusal(state, "retried"));
    }
    let failed = failed_task(state).ok_or_else(|| {
        EngineError::Invalid(
            "no task of the process instance failed (its error came from outside a task): \
             there is nothing to run again"
                .into(),
        )
    })?;
    let process = process_of(model, &state.process_id)?;
    let mut retried = state.clone();
    retried.status = InstanceStatus::Running;
    retried.error = None;
    let mut interpreter = Interpreter::new(model, process, retried, context);
    let outcome = interpreter
        .retry_task(failed)
        .and_then(|()| interpreter.run_until_waiting())
        .and_then(|()| interpreter.fire_met_conditions());
    Ok(interpreter.pause_or_finish(outcome)?.into_state(state))
}

/// The task whose failure the instance's error names (the shell puts it back in the state:
/// finished tasks are not kept there), else the last task in error.
fn failed_task(state: &InstanceState) -> Option<Uuid> {
    let named = state.error.as_ref().map(|e| e.element_id.as_str());
    let failed = || {
        state
            .tasks
            .iter()
            .rev()
            .filter(|t| t.state == TaskState::Error)
    };
    failed()
        .find(|task| Some(task.element_id.as_str()) == named)
        .or_else(|| failed().next())
        .map(|task| task.guid)
}

fn refusal(state: &InstanceState, what: &str) -> EngineError {
    EngineError::Invalid(format!(
        "a {} process instance cannot be {what}",
        state.status.as_str()
    ))
}

/// Suspending, resuming and terminating create no task and evaluate nothing: the context of
/// their interpreter is never read.
fn inert_context() -> StepContext {
    StepContext::new(
        chrono::DateTime::UNIX_EPOCH,
        TaskIds::from_seed(Uuid::nil()),
        Arc::new(super::context::NoScripts),
    )
}

impl Interpreter<'_> {
    /// Runs a failed task again from its start, after opening again the waits and calls of
    /// the other live tasks.
    fn retry_task(&mut self, failed: Uuid) -> Outcome {
        self.reopen_waits_of_live_tasks()?;
        let element = self.element_of(failed);
        let scope = self.task(failed).scope;
        self.task_mut(failed).data = None;
        self.set_state(failed, TaskState::Ready);
        self.current = Some(failed);
        self.activate(ElementTask {
            guid: failed,
            element,
            scope,
        })
    }

    /// The effects that open again what a failure closed for the tasks still live: message
    /// waits (their expected values worked out again), signal waits, due connector calls and
    /// timers (a cycle's next occurrence as recorded; any other timer evaluated again, so a
    /// duration counts from the retry).
    fn reopen_waits_of_live_tasks(&mut self) -> Outcome {
        let live: Vec<Uuid> = self.state.live_tasks().map(|task| task.guid).collect();
        for guid in live {
            let element = self.element_of(guid);
            for wait in self.waits_held_by(guid) {
                match wait {
                    HeldWait::Message => {
                        for catch in element.message_catches() {
                            let expected = self.expected_correlation(element, catch)?;
                            self.effects.push(Effect::WaitForMessage {
                                task_guid: guid,
                                name: catch.message_name.clone(),
                                expected,
                            });
                        }
                    }
                    // a call under way when the instance failed is not made again
                    HeldWait::ServiceCall if self.task(guid).state != TaskState::Ready => {}
                    HeldWait::ServiceCall => {
                        self.effects.push(Effect::CallService { task_guid: guid });
                    }
                    HeldWait::Signal => {
                        if let Some(signal) = element.signal_catch() {
                            self.effects.push(Effect::WaitForSignal {
                                task_guid: guid,
                                name: signal.signal_name.clone(),
                            });
                        }
                    }
                    HeldWait::Timer => {
                        let cycle = match self.state.internal.cycles.get(&guid) {
                            Some(cycle) => cycle.clone(),
                            None => match element.timer() {
                                Some(timer) => self.evaluate_timer(element, timer)?,
                                None => continue,
                            },
                        };
                        self.wait_for_occurrence(guid, element, cycle);
                    }
                }
            }
        }
        Ok(())
    }
}
