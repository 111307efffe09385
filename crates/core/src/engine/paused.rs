//! A run that stops for a callee and goes on where it stopped. When a token reaches a call
//! activity whose process, or a business rule task whose decision, is in no model the run was
//! given, the token goes back to the front of the queue and the run stops *before* the element
//! does anything: what ran before it (scripts included) is kept in a [`PausedRun`]. The caller
//! links the callee (`ModelSpec::with_callees`) and calls [`continue_run`], which runs the
//! remaining tokens against the linked model. Nothing runs twice.
//!
//! A callee met elsewhere than at a token's arrival (a failed call activity run again by a
//! retry) still stops the run as a whole (`EngineError::CalleeNeeded`): the caller runs it again.

use super::context::StepContext;
use super::interpreter::{
    process_of, refuse_aborted, Abort, Interpreter, ModelFailure, Outcome, Token,
};
use super::{DataStoreContents, Effect, EngineError, InstanceState, StoreContent};
use crate::bpmn::{Callee, ElementKind, ElementSpec, ModelSpec};
use std::collections::{BTreeMap, HashSet, VecDeque};

/// What a run of the engine came to when it may stop for a callee.
#[derive(Debug)]
pub enum Run<T> {
    /// It ran to the end: what it gave.
    Done(T),
    /// A token reached an element that needs this process or decision: link it and
    /// [`continue_run`] the paused run.
    AsksFor(Callee, Box<PausedRun>),
}

/// Where a run stopped for a callee: the instance as the run left it, the effects so far, and
/// the tokens still to run (the first one at the element that asked).
#[derive(Debug)]
pub struct PausedRun {
    state: InstanceState,
    effects: Vec<Effect>,
    tokens: VecDeque<Token>,
    live_before: HashSet<uuid::Uuid>,
    store_writes: BTreeMap<String, StoreContent>,
    executions: usize,
}

impl<T> Run<T> {
    /// What a finished run gave; one that asked for a callee is `EngineError::CalleeNeeded`.
    pub fn done(self) -> Result<T, EngineError> {
        match self {
            Run::Done(done) => Ok(done),
            Run::AsksFor(callee, _) => Err(EngineError::CalleeNeeded(callee)),
        }
    }
}

impl Run<(InstanceState, Vec<Effect>)> {
    /// A finished run's state written into `state` (a paused one leaves it untouched).
    pub fn into_state(self, state: &mut InstanceState) -> Run<Vec<Effect>> {
        match self {
            Run::Done((new_state, effects)) => {
                *state = new_state;
                Run::Done(effects)
            }
            Run::AsksFor(callee, paused) => Run::AsksFor(callee, paused),
        }
    }
}

impl PausedRun {
    /// The instance's process (the model it goes on with must define it).
    pub fn process_id(&self) -> &str {
        &self.state.process_id
    }
}

impl<'m> Interpreter<'m> {
    /// The callee a token reaching `element` must have before the element runs, if the run
    /// may ask for it: None when it is there, or known not to be usable (the element then fails
    /// the instance when it runs).
    pub(super) fn callee_to_ask_for(&self, element: &ElementSpec) -> Option<Callee> {
        let callee = self.callee_lacking(element)?;
        (!self.model.unavailable_callees.contains_key(&callee.key())).then_some(callee)
    }

    /// What `element` needs that the model lacks: the process of a call activity left
    /// unlinked, the decision of a business rule task the model does not define.
    pub(super) fn callee_lacking(&self, element: &ElementSpec) -> Option<Callee> {
        let callee = match &element.kind {
            // a process of the model left as a call is a recursive call, copied in when reached
            ElementKind::CallActivity { called_element }
                if self.model.processes.contains_key(called_element) =>
            {
                Callee::Recursion(element.id.clone())
            }
            ElementKind::CallActivity { called_element } => Callee::Process(called_element.clone()),
            ElementKind::BusinessRuleTask { decision_id }
                if !self.model.decisions.contains_key(decision_id) =>
            {
                Callee::Decision(decision_id.clone())
            }
            _ => return None,
        };
        Some(callee)
    }

    /// Puts `token` back first in the queue and stops the run for `callee`.
    pub(super) fn ask_for(&mut self, token: Token, callee: Callee) -> Outcome {
        let element_id = token.element.clone();
        self.tokens.push_front(token);
        let mut failure = ModelFailure::new(&element_id, "the run asks for a callee");
        failure.abort = Some(Abort::AsksFor(callee));
        Err(failure)
    }

    /// The run as it ends: paused when it asked for a callee, else finished (an abort that
    /// cannot be resumed is the caller's `EngineError`).
    pub(super) fn pause_or_finish(
        self,
        outcome: Outcome,
    ) -> Result<Run<(InstanceState, Vec<Effect>)>, EngineError> {
        if let Err(ModelFailure {
            abort: Some(Abort::AsksFor(callee)),
            ..
        }) = &outcome
        {
            let callee = callee.clone();
            return Ok(Run::AsksFor(callee, Box::new(self.pause())));
        }
        refuse_aborted(&outcome)?;
        Ok(Run::Done(self.finish(outcome)))
    }

    fn pause(self) -> PausedRun {
        PausedRun {
            state: self.state,
            effects: self.effects,
            tokens: self.tokens,
            live_before: self.live_before,
            store_writes: self.store_writes,
            executions: self.executions,
        }
    }
}

/// Goes on with a paused run against `model` (the one it ran with, with the callee it asked
/// for linked), given the same context (its task ids go on from where they were), the data
/// stores read again (the callee may read others).
pub fn continue_run(
    model: &ModelSpec,
    paused: Box<PausedRun>,
    context: &mut StepContext,
    stores: DataStoreContents,
) -> Result<Run<(InstanceState, Vec<Effect>)>, EngineError> {
    let paused = *paused;
    let process = process_of(model, &paused.state.process_id)?;
    context.data_stores = std::sync::Arc::new(stores);
    let mut interpreter = Interpreter::resumed(
        model,
        process,
        paused.state,
        context,
        paused.effects,
        paused.tokens,
        paused.live_before,
        paused.store_writes,
        paused.executions,
    );
    let outcome = interpreter
        .run_until_waiting()
        .and_then(|()| interpreter.fire_met_conditions());
    interpreter.pause_or_finish(outcome)
}
