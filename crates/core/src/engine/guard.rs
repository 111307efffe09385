//! The engine's public entry points, with panics caught. A panic in the interpreter is a
//! defect, but it must not escape into an HTTP request (no answer) or a worker (a silently
//! ended loop): the instance goes to `Error` with a readable cause instead, and the step's
//! state changes are dropped (the interpreter works on a copy until it finishes).

use super::paused::{self, PausedRun, Run};
use super::{activities, commands, lifecycle, DataStoreContents};
use super::{
    Effect, EngineError, Event, InstanceError, InstanceState, InstanceStatus, ServiceCall,
    StepContext,
};
use crate::bpmn::ModelSpec;
use crate::expr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use uuid::Uuid;

/// `error_code` of an instance error caused by a panic in the engine.
pub const ENGINE_PANIC: &str = "engine_panic";

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown cause".into())
}

fn panic_error(panic: &(dyn std::any::Any + Send)) -> InstanceError {
    InstanceError {
        element_id: String::new(),
        message: format!("internal engine error: {}", panic_message(panic)),
        error_code: Some(ENGINE_PANIC.into()),
        file: None,
    }
}

/// Create an instance and run it until every path waits or ends, or a token reaches an
/// element whose callee the model lacks (see [`paused`](super::paused)).
pub fn start_run(
    model: &ModelSpec,
    process_id: &str,
    event: Event,
    context: &mut StepContext,
) -> Result<Run<(InstanceState, Vec<Effect>)>, EngineError> {
    catch_unwind(AssertUnwindSafe(|| {
        commands::start(model, process_id, event, context)
    }))
    .unwrap_or_else(|panic| Err(EngineError::Invalid(panic_error(&*panic).message)))
}

/// Goes on with a start that asked for a callee, against the model with it linked.
pub fn continue_start(
    model: &ModelSpec,
    paused: Box<PausedRun>,
    context: &mut StepContext,
    stores: DataStoreContents,
) -> Result<Run<(InstanceState, Vec<Effect>)>, EngineError> {
    catch_unwind(AssertUnwindSafe(|| {
        paused::continue_run(model, paused, context, stores)
    }))
    .unwrap_or_else(|panic| Err(EngineError::Invalid(panic_error(&*panic).message)))
}

/// Apply one event to a running instance. Err only for caller mistakes (state untouched); a
/// run that asks for a callee leaves the state untouched too.
pub fn step_run(
    model: &ModelSpec,
    state: &mut InstanceState,
    event: Event,
    context: &mut StepContext,
) -> Result<Run<Vec<Effect>>, EngineError> {
    match catch_unwind(AssertUnwindSafe(|| {
        commands::step(model, state, event, context)
    })) {
        Ok(result) => result,
        Err(panic) => Ok(Run::Done(fail(model, state, None, panic_error(&*panic)))),
    }
}

/// Goes on with a step of `state` that asked for a callee, against the model with it linked;
/// a finished run's state is written into `state`.
pub fn continue_step(
    model: &ModelSpec,
    state: &mut InstanceState,
    paused: Box<PausedRun>,
    context: &mut StepContext,
    stores: DataStoreContents,
) -> Result<Run<Vec<Effect>>, EngineError> {
    match catch_unwind(AssertUnwindSafe(|| {
        paused::continue_run(model, paused, context, stores)
    })) {
        Ok(run) => Ok(run?.into_state(state)),
        Err(panic) => Ok(Run::Done(fail(model, state, None, panic_error(&*panic)))),
    }
}

/// [`start_run`] for a caller that links no callee: a run that asks for one is
/// `EngineError::CalleeNeeded`.
pub fn start(
    model: &ModelSpec,
    process_id: &str,
    event: Event,
    context: &mut StepContext,
) -> Result<(InstanceState, Vec<Effect>), EngineError> {
    start_run(model, process_id, event, context)?.done()
}

/// [`step_run`] for a caller that links no callee: a run that asks for one is
/// `EngineError::CalleeNeeded` (the state untouched).
pub fn step(
    model: &ModelSpec,
    state: &mut InstanceState,
    event: Event,
    context: &mut StepContext,
) -> Result<Vec<Effect>, EngineError> {
    step_run(model, state, event, context)?.done()
}

/// Terminate an instance; see [`lifecycle::terminate`].
pub fn terminate(model: &ModelSpec, state: &mut InstanceState) -> Result<Vec<Effect>, EngineError> {
    catch_unwind(AssertUnwindSafe(|| lifecycle::terminate(model, state)))
        .unwrap_or_else(|panic| Err(EngineError::Invalid(panic_error(&*panic).message)))
}

/// For the dispatcher: operator id, evaluated parameters, result variable, retry config.
pub fn service_call(
    model: &ModelSpec,
    state: &InstanceState,
    task_guid: Uuid,
    cx: &expr::Context,
) -> Result<ServiceCall, InstanceError> {
    catch_unwind(AssertUnwindSafe(|| {
        activities::service_call(model, state, task_guid, cx)
    }))
    .unwrap_or_else(|panic| Err(panic_error(&*panic)))
}

/// Put the instance in `Error` from outside a step; see [`commands::fail`]. If even that panics,
/// the instance is marked `Error` directly, and every wait it holds is closed.
pub fn fail(
    model: &ModelSpec,
    state: &mut InstanceState,
    task_guid: Option<Uuid>,
    error: InstanceError,
) -> Vec<Effect> {
    let fallback = error.clone();
    match catch_unwind(AssertUnwindSafe(|| {
        commands::fail(model, state, task_guid, error)
    })) {
        Ok(effects) => effects,
        Err(_) => {
            state.status = InstanceStatus::Error;
            state.error = Some(fallback);
            vec![Effect::CloseWaitsOfInstance]
        }
    }
}
