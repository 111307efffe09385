//! The engine's commands: start an instance, apply one event to it, put it in error from
//! outside. Each checks the caller's input first (an `EngineError` leaves the state
//! untouched), then runs the interpreter on a copy and hands back the new state and effects.

use super::context::{StepContext, TaskIds};
use super::interpreter::{process_of, Interpreter, ModelFailure, Outcome};
use super::paused::Run;
use super::{
    Effect, EngineError, Event, InstanceError, InstanceState, InstanceStatus, Task, TaskState,
};
use crate::bpmn::{ElementKind, ElementSpec, ModelSpec, ProcessSpec};
use serde_json::Value;
use std::sync::Arc;
use uuid::Uuid;

/// Create an instance and run it until every path waits or ends (or asks for a callee).
pub fn start(
    model: &ModelSpec,
    process_id: &str,
    event: Event,
    context: &mut StepContext,
) -> Result<Run<(InstanceState, Vec<Effect>)>, EngineError> {
    let Event::Start {
        start_event_id,
        data,
        message,
        signal,
    } = event
    else {
        return Err(EngineError::Invalid("start needs an Event::Start".into()));
    };
    let process = process_of(model, process_id)?;
    // SpiffWorkflow refuses to run it ("Process X is not executable."), so SpiffArena does
    if !process.is_executable {
        return Err(EngineError::Invalid(format!(
            "process '{}' is not executable (isExecutable=\"false\")",
            process.id
        )));
    }
    let starts = match (&start_event_id, &message) {
        (Some(id), _) => vec![named_start_event(process, id, message.as_ref())?],
        (None, Some((name, _))) => vec![message_start_event(process, name)?],
        (None, None) => none_start_events(process)?,
    };
    let state = InstanceState::new(process_id, data);
    let mut interpreter = Interpreter::new(model, process, state, context);
    let outcome = interpreter
        .arm_event_subprocesses(None)
        .and_then(|()| {
            starts.iter().try_for_each(|start| {
                interpreter.fire_start_event(start, message.as_ref(), signal.as_ref())
            })
        })
        .and_then(|()| interpreter.run_until_waiting())
        .and_then(|()| interpreter.fire_met_conditions());
    interpreter.pause_or_finish(outcome)
}

/// The start event the caller named; with a message it must be that message's start event.
fn named_start_event(
    process: &ProcessSpec,
    id: &str,
    message: Option<&(String, Value)>,
) -> Result<String, EngineError> {
    if !process.start_events.iter().any(|s| s == id) {
        return Err(EngineError::Invalid(format!(
            "'{id}' is not a start event of process '{}'",
            process.id
        )));
    }
    let element = &process.elements[id];
    if let (Some(awaited), Some((name, _))) = (start_message(element), message) {
        if element.message_catch_named(name).is_none() {
            return Err(EngineError::Invalid(format!(
                "start event '{id}' waits for message '{awaited}', not '{name}'"
            )));
        }
    }
    Ok(id.to_string())
}

fn message_start_event(process: &ProcessSpec, name: &str) -> Result<String, EngineError> {
    process
        .start_events
        .iter()
        .find(|s| {
            let element = &process.elements[*s];
            start_message(element).is_some() && element.message_catch_named(name).is_some()
        })
        .cloned()
        .ok_or_else(|| {
            EngineError::Invalid(format!(
                "process '{}' has no start event for message '{name}'",
                process.id
            ))
        })
}

/// Every none start event (a start by message, timer or signal is the service's to fire).
fn none_start_events(process: &ProcessSpec) -> Result<Vec<String>, EngineError> {
    let starts: Vec<String> = process
        .start_events
        .iter()
        .filter(|s| {
            matches!(
                process.elements[*s].kind,
                ElementKind::StartEvent { message: None }
            )
        })
        .cloned()
        .collect();
    if starts.is_empty() {
        return Err(EngineError::Invalid(format!(
            "process '{}' has no none start event: it starts by message, timer or signal",
            process.id
        )));
    }
    Ok(starts)
}

/// The (first) message a start event waits for (None for a none, timer or signal start).
fn start_message(element: &ElementSpec) -> Option<&str> {
    match &element.kind {
        ElementKind::StartEvent { message: Some(_) } | ElementKind::MultipleStart(_) => {
            element.message_catch().map(|m| m.message_name.as_str())
        }
        _ => None,
    }
}

/// Apply one event to a running instance. Err only for caller mistakes (state untouched);
/// a run that asks for a callee leaves the state untouched too (it is in the paused run).
pub fn step(
    model: &ModelSpec,
    state: &mut InstanceState,
    event: Event,
    context: &mut StepContext,
) -> Result<Run<Vec<Effect>>, EngineError> {
    if event == Event::Retry {
        return super::lifecycle::retry(model, state, context);
    }
    if state.status.is_final() || state.status == InstanceStatus::Suspended {
        return Err(EngineError::Invalid(format!(
            "the process instance is {}",
            state.status.as_str()
        )));
    }
    let process = process_of(model, &state.process_id)?;
    if validate(process, state, &event)? == Validity::NothingToDo {
        return Ok(Run::Done(vec![]));
    }
    let mut interpreter = Interpreter::new(model, process, state.clone(), context);
    let outcome = apply(&mut interpreter, event).and_then(|()| interpreter.fire_met_conditions());
    Ok(interpreter.pause_or_finish(outcome)?.into_state(state))
}

/// A service task whose call the proxy accepted (202) goes `STARTED`, as
/// [`Event::ServiceAccepted`] makes it, outside a step: the service records a 202 on the call's
/// job without taking the instance (its callback may hold it at that moment), and the state
/// catches up when the instance is next loaded. Nothing runs and nothing else changes. Whether
/// the task changed: a task that has moved on since (completed by its callback, cancelled) is
/// left as it is.
pub fn accept_call(model: &ModelSpec, state: &mut InstanceState, task_guid: Uuid) -> bool {
    let Ok(process) = process_of(model, &state.process_id) else {
        return false;
    };
    let event = Event::ServiceAccepted { task_guid };
    if !matches!(validate(process, state, &event), Ok(Validity::Apply)) {
        return false;
    }
    match state.tasks.iter_mut().find(|t| t.guid == task_guid) {
        Some(task) => {
            task.state = TaskState::Started;
            task.dirty = true;
            true
        }
        None => false,
    }
}

#[derive(PartialEq)]
enum Validity {
    Apply,
    /// Valid, but it changes nothing (a repeated 202 from the proxy).
    NothingToDo,
}

/// Check the event against the instance before touching anything.
fn validate(
    process: &ProcessSpec,
    state: &InstanceState,
    event: &Event,
) -> Result<Validity, EngineError> {
    let not_waiting = |guid| Err(EngineError::NotWaiting { task_guid: guid });
    match event {
        Event::Start { .. } => Err(EngineError::Invalid(
            "the instance is already started".into(),
        )),
        Event::CompleteTask { task_guid, .. } => {
            let (task, element) = target(process, state, *task_guid)?;
            if !(element.is_human_task() && task.state == TaskState::Waiting) {
                return not_waiting(*task_guid);
            }
            Ok(Validity::Apply)
        }
        Event::MessageDelivered {
            task_guid, name, ..
        } => {
            let (task, element) = target(process, state, *task_guid)?;
            if !task.waits_for_message(element) {
                return not_waiting(*task_guid);
            }
            if element.message_catch_named(name).is_none() {
                let awaited: Vec<&str> = element
                    .message_catches()
                    .iter()
                    .map(|m| m.message_name.as_str())
                    .collect();
                return Err(EngineError::Invalid(format!(
                    "task {task_guid} waits for message '{}', not '{name}'",
                    awaited.join("' or '")
                )));
            }
            Ok(Validity::Apply)
        }
        Event::ServiceAccepted { task_guid } => {
            let (task, element) = target(process, state, *task_guid)?;
            if !task.has_service_call(element) {
                return not_waiting(*task_guid);
            }
            Ok(match task.state {
                TaskState::Started => Validity::NothingToDo,
                _ => Validity::Apply,
            })
        }
        Event::ServiceSucceeded { task_guid, .. } | Event::ServiceFailed { task_guid, .. } => {
            let (task, element) = target(process, state, *task_guid)?;
            if !task.has_service_call(element) {
                return not_waiting(*task_guid);
            }
            Ok(Validity::Apply)
        }
        Event::Signal { .. } => Ok(Validity::Apply),
        Event::Retry => Err(EngineError::Invalid(
            "a retry is not an event of a step".into(),
        )),
        Event::TimerFired { task_guid } => {
            let (task, element) = target(process, state, *task_guid)?;
            if !task.waits_for_timer(element) {
                return not_waiting(*task_guid);
            }
            Ok(Validity::Apply)
        }
    }
}

/// The task an event is for, and its element.
fn target<'a>(
    process: &'a ProcessSpec,
    state: &'a InstanceState,
    guid: Uuid,
) -> Result<(&'a Task, &'a ElementSpec), EngineError> {
    let task = state
        .task(guid)
        .ok_or(EngineError::UnknownTask { task_guid: guid })?;
    if state.internal.multi.contains_key(&guid) {
        // a multi-instance activity's own task waits for nothing: its instances do
        return Err(EngineError::NotWaiting { task_guid: guid });
    }
    let element = process.elements.get(&task.element_id).ok_or_else(|| {
        EngineError::Invalid(format!(
            "task {guid}: element '{}' is not in the model",
            task.element_id
        ))
    })?;
    Ok((task, element))
}

/// Hand a validated event to the element family it concerns.
fn apply(interpreter: &mut Interpreter, event: Event) -> Outcome {
    match event {
        Event::Start { .. } | Event::Retry => unreachable!("refused by validate"),
        Event::CompleteTask { task_guid, data } => interpreter.complete_human_task(task_guid, data),
        Event::MessageDelivered {
            task_guid,
            name,
            payload,
        } => interpreter.deliver_message(task_guid, &name, &payload),
        Event::ServiceAccepted { task_guid } => interpreter.service_accepted(task_guid),
        Event::ServiceSucceeded { task_guid, result } => {
            interpreter.service_succeeded(task_guid, result)
        }
        Event::ServiceFailed {
            task_guid,
            error_code,
            message,
        } => interpreter.service_failed(task_guid, error_code, message),
        Event::Signal { name, payload } => interpreter.broadcast_signal(&name, &payload),
        Event::TimerFired { task_guid } => interpreter.timer_fired(task_guid),
    }
}

/// Put the instance in `Error` from outside a step (e.g. `service_call` failed): the task (if
/// given) goes ERROR, and the effects cancel the instance's pending message waits and service
/// calls. No-op (no effects) when the instance is already final.
pub fn fail(
    model: &ModelSpec,
    state: &mut InstanceState,
    task_guid: Option<Uuid>,
    error: InstanceError,
) -> Vec<Effect> {
    if state.status.is_final() {
        return vec![];
    }
    let Some(process) = model.process(&state.process_id) else {
        state.status = InstanceStatus::Error;
        state.error = Some(error);
        return vec![Effect::CloseWaitsOfInstance];
    };
    // Failing creates no task and evaluates nothing: this context is never read.
    let mut unused = StepContext::new(
        chrono::DateTime::UNIX_EPOCH,
        TaskIds::from_seed(Uuid::nil()),
        Arc::new(super::context::NoScripts),
    );
    let mut interpreter = Interpreter::new(model, process, state.clone(), &mut unused);
    interpreter.current = task_guid.filter(|guid| interpreter.has_task(*guid));
    let (new_state, effects) = interpreter.finish(Err(ModelFailure {
        element_id: error.element_id,
        message: error.message,
        error_code: error.error_code,
        abort: None,
    }));
    *state = new_state;
    effects
}
