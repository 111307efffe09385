//! Event subprocesses and their start events. No token enters them: their start events
//! listen while the (sub)process around them runs (`arm_event_subprocesses`), and a trigger
//! runs the event subprocess (`run_event_subprocess`). A token that reaches one is the
//! model's error.

use super::{ElementBehaviour, ElementTask};
use crate::engine::interpreter::{Interpreter, ModelFailure, Outcome};

pub(super) struct EventSubProcesses;

impl ElementBehaviour for EventSubProcesses {
    fn activate<'m>(&self, _run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        Err(ModelFailure::new(
            &task.element.id,
            "an event subprocess is not entered by a sequence flow",
        ))
    }
}
