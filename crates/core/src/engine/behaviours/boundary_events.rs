//! Boundary events. They do not start from a token: the activity they are attached to arms
//! them (`start_boundaries`), and when their trigger happens an interrupting one cancels the
//! activity, a non-interrupting one opens a path beside it and waits again. A token that
//! reaches one anyway passes through.

use super::{ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome};
use crate::engine::Cycle;
use uuid::Uuid;

pub(super) struct BoundaryEvents;

impl ElementBehaviour for BoundaryEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        run.complete_activity(task.guid)
    }

    fn triggered<'m>(&self, run: &mut Interpreter<'m>, guid: Uuid, next: Option<Cycle>) -> Outcome {
        match &run.element_of(guid).kind {
            ElementKind::Boundary(boundary) if !boundary.cancel_activity => {
                run.fire_non_interrupting(guid, next)
            }
            _ => run.fire_boundary(guid),
        }
    }
}
