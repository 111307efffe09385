//! Event subprocesses and their start events. No token enters them: their start events
//! listen while the (sub)process around them runs (`arm_event_subprocesses`), and a trigger
//! runs the event subprocess (`run_event_subprocess`). A token that reaches one is the
//! model's error.

use super::{ElementBehaviour, ElementTask};
use crate::engine::interpreter::{Interpreter, ModelFailure, Outcome};
use crate::engine::Cycle;
use uuid::Uuid;

pub(super) struct EventSubProcesses;

impl ElementBehaviour for EventSubProcesses {
    fn activate<'m>(&self, _run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        Err(ModelFailure::new(
            &task.element.id,
            "an event subprocess is not entered by a sequence flow",
        ))
    }

    /// Only an event subprocess's start event waits (it listens): its event subprocess runs.
    fn triggered<'m>(&self, run: &mut Interpreter<'m>, guid: Uuid, next: Option<Cycle>) -> Outcome {
        run.fire_listener(guid, next)
    }

    /// An event subprocess under way goes with everything inside it (an interrupting one
    /// around it ended its process): nothing of it may be left waiting. A listener holds
    /// nothing inside.
    fn terminate(&self, run: &mut Interpreter<'_>, guid: Uuid) {
        run.cancel_children(guid);
    }
}
