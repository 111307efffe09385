//! Conditional events: a conditional catch event or conditional boundary waits until its
//! condition holds. Conditions are checked when a step has run (the data can only change in a
//! step), over and over until none that waits holds any more: a condition met by what another
//! one's path did fires in the same step.

use super::boundaries::Fired;
use super::interpreter::{Interpreter, ModelFailure, Outcome};
use crate::bpmn::BoundaryTrigger;
use crate::expr::Expression;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// Fires every waiting conditional event whose condition holds, until none does.
    pub fn fire_met_conditions(&mut self) -> Outcome {
        loop {
            let waiting: Vec<Uuid> = self
                .state
                .live_tasks()
                .filter(|task| task.waits_for_condition(self.element(&task.element_id)))
                .map(|task| task.guid)
                .collect();
            let mut fired = false;
            for guid in waiting {
                if !self.is_live(guid) {
                    continue;
                }
                let Some(index) = self.met_condition(guid)? else {
                    continue;
                };
                fired = true;
                self.fire_trigger(guid, None, Fired::Condition(index))?;
            }
            if !fired {
                return Ok(());
            }
            self.run_until_waiting()?;
        }
    }

    /// The index of a condition of the task that holds (in its catch set; 0 for a lone
    /// one), skipping those an all-of set has already seen happen. A name the condition reads
    /// that the data does not hold yet (`NameError`) means it does not hold yet: it waits for
    /// the variable, as SpiffWorkflow's do. Any other failure is the model's.
    fn met_condition(&mut self, guid: Uuid) -> Result<Option<usize>, ModelFailure> {
        let element = self.element_of(guid);
        self.current = Some(guid);
        let seen = self
            .state
            .internal
            .fired
            .get(&guid)
            .cloned()
            .unwrap_or_default();
        let candidates: Vec<(usize, &'m Expression)> = match element.catch_set() {
            Some(set) => set
                .triggers
                .iter()
                .enumerate()
                .filter(|(index, _)| !seen.contains(index))
                .filter_map(|(index, trigger)| match trigger {
                    BoundaryTrigger::Conditional(condition) => Some((index, condition)),
                    _ => None,
                })
                .collect(),
            None => element.conditions().map(|c| (0, c)).collect(),
        };
        for (index, condition) in candidates {
            match self.eval_bool(element, condition, "the condition") {
                Ok(true) => return Ok(Some(index)),
                Ok(false) => {}
                Err(failure) if failure.message.starts_with("NameError") => {}
                Err(failure) => return Err(failure),
            }
        }
        Ok(None)
    }
}
