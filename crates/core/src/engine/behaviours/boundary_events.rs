//! Boundary events. They do not start from a token: the activity they are attached to arms
//! them (`start_boundaries`) and their trigger fires them (`fire_trigger`). A token that
//! reaches one anyway passes through.

use super::{ElementBehaviour, ElementTask};
use crate::engine::interpreter::{Interpreter, Outcome};

pub(super) struct BoundaryEvents;

impl ElementBehaviour for BoundaryEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        run.complete_activity(task.guid)
    }
}
