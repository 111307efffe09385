//! Standard loops: the activity runs again while its `loopCondition` holds (checked after each
//! run, and before the first with `testBefore`), at most `loopMaximum` times. The iterations
//! done are counted in the instance's engine state, per (sub)process and activity.

use super::gateways::join_key;
use super::interpreter::{Interpreter, ModelFailure};
use crate::bpmn::{ElementSpec, StandardLoop};
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// A token reaches a looping activity: its count starts again; with `testBefore` the
    /// condition decides whether it runs at all.
    pub fn loop_starts(
        &mut self,
        element: &'m ElementSpec,
        standard_loop: &'m StandardLoop,
        scope: Option<Uuid>,
    ) -> Result<bool, ModelFailure> {
        self.state
            .internal
            .loops
            .insert(join_key(scope, &element.id), 0);
        if !standard_loop.test_before || standard_loop.maximum == Some(0) {
            return Ok(standard_loop.maximum != Some(0));
        }
        let runs = self.loop_condition_holds(element, standard_loop)?;
        if !runs {
            self.state
                .internal
                .loops
                .remove(&join_key(scope, &element.id));
        }
        Ok(runs)
    }

    /// A run of a looping activity completed: whether it runs again.
    pub fn loops_again(
        &mut self,
        element: &'m ElementSpec,
        standard_loop: &'m StandardLoop,
        scope: Option<Uuid>,
    ) -> Result<bool, ModelFailure> {
        let key = join_key(scope, &element.id);
        let done = {
            let count = self.state.internal.loops.entry(key.clone()).or_insert(0);
            *count += 1;
            *count
        };
        let again = match standard_loop.maximum {
            Some(maximum) if done >= maximum => false,
            _ => self.loop_condition_holds(element, standard_loop)?,
        };
        if !again {
            self.state.internal.loops.remove(&key);
        }
        Ok(again)
    }

    /// Without a condition, only the maximum ends the loop.
    fn loop_condition_holds(
        &self,
        element: &ElementSpec,
        standard_loop: &StandardLoop,
    ) -> Result<bool, ModelFailure> {
        match &standard_loop.condition {
            Some(condition) => self.eval_bool(element, condition, "the loopCondition"),
            None => Ok(true),
        }
    }
}
