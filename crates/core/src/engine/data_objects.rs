//! Data objects, with SpiffWorkflow's scoping: process variables kept out of the task data.
//! A task that reads one (`dataInputAssociation`) finds it in its data when it starts (a
//! data object never written reads as None); when the task completes, the data objects it
//! writes (`dataOutputAssociation`) take their values from its data, and every data object it
//! read or wrote leaves its data again.

use super::interpreter::{Interpreter, ModelFailure, Outcome};
use crate::bpmn::ElementSpec;
use serde_json::Value;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// Before the task runs: the data objects it reads go into its data.
    pub fn read_data_objects(&mut self, guid: Uuid, element: &ElementSpec) {
        let owner = self.state.data_owner(Some(guid));
        for object in &element.reads {
            let value = self
                .state
                .internal
                .data_objects
                .get(object)
                .cloned()
                .unwrap_or(Value::Null);
            self.state.data_of_mut(owner).insert(object.clone(), value);
        }
    }

    /// When the task completes: the data objects it writes take their values out of its
    /// data (each must be there); those it only read leave its data.
    pub fn write_data_objects(&mut self, guid: Uuid, element: &ElementSpec) -> Outcome {
        let owner = self.state.data_owner(Some(guid));
        for object in &element.writes {
            let value =
                self.state
                    .data_of_mut(owner)
                    .remove(object)
                    .ok_or_else(|| {
                        ModelFailure::new(
                    &element.id,
                    format!("the data object '{object}' it writes is missing from the task data"),
                )
                    })?;
            self.state
                .internal
                .data_objects
                .insert(object.clone(), value);
        }
        for object in &element.reads {
            self.state.data_of_mut(owner).remove(object);
        }
        Ok(())
    }
}
