//! End events: the path ends here, after the event's result (a message, an error, a
//! termination of the scope...), see `reach_end_event`. Nothing leaves an end event, and its
//! task never waits.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome};

pub(super) struct EndEvents;

impl ElementBehaviour for EndEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementKind::EndEvent(kind) = &task.element.kind else {
            other_family(task.element)
        };
        run.reach_end_event(task.guid, task.element, kind, task.scope)
    }
}
