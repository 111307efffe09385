//! Subprocesses (embedded, transaction, and call activities whose process was copied in): the
//! task starts its start events inside its own scope and completes when nothing inside is
//! live (`finished_subprocess`); cancelled, it takes everything inside with it. A call
//! activity still left as a call here has no process to run.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::{Callee, ElementKind};
use crate::engine::interpreter::{Interpreter, Outcome};
use uuid::Uuid;

pub(super) struct SubProcesses;

impl ElementBehaviour for SubProcesses {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        match &element.kind {
            ElementKind::SubProcess {
                start_events, io, ..
            } => run.start_subprocess(guid, element, start_events, io.as_ref(), scope),
            ElementKind::CallActivity { called_element } => {
                // met where the run could not stop for it (see `paused`): a process of the
                // model left as a call is a recursive call, copied in when reached
                let callee = if run.model.processes.contains_key(called_element) {
                    Callee::Recursion(element.id.clone())
                } else {
                    Callee::Process(called_element.clone())
                };
                Err(run.callee_missing(element, callee))
            }
            _ => other_family(element),
        }
    }

    fn terminate(&self, run: &mut Interpreter<'_>, guid: Uuid) {
        run.cancel_children(guid);
    }
}
