//! Start events reached by a token: those of a subprocess, which its start sent a token to.
//! Whatever trigger they name was the subprocess starting, so they complete at once. (A
//! process's own start events are fired from outside, see `fire_start_event`.)

use super::{ElementBehaviour, ElementTask};
use crate::engine::interpreter::{Interpreter, Outcome};

pub(super) struct StartEvents;

impl ElementBehaviour for StartEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        run.complete_activity(task.guid)
    }
}
