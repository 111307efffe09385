//! Conditional events: a conditional catch event or conditional boundary waits until its
//! condition holds. Conditions are checked when a step has run (the data can only change in a
//! step), over and over until none that waits holds any more: a condition met by what another
//! one's path did fires in the same step.

use super::interpreter::{Interpreter, Outcome};
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
                if !self.is_live(guid) || !self.condition_holds_for(guid)? {
                    continue;
                }
                fired = true;
                self.fire_trigger(guid, None)?;
            }
            if !fired {
                return Ok(());
            }
            self.run_until_waiting()?;
        }
    }

    /// A name the condition reads that the data does not hold yet (`NameError`) means the
    /// condition does not hold yet: it waits for the variable, as SpiffWorkflow's do. Any
    /// other failure is the model's.
    fn condition_holds_for(
        &mut self,
        guid: Uuid,
    ) -> Result<bool, super::interpreter::ModelFailure> {
        let element = self.element_of(guid);
        let condition = element.condition().expect("waits for a condition");
        self.current = Some(guid);
        match self.eval_bool(element, condition, "the condition") {
            Ok(holds) => Ok(holds),
            Err(failure) if failure.message.starts_with("NameError") => Ok(false),
            Err(failure) => Err(failure),
        }
    }
}
