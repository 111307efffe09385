//! Subprocesses (embedded, transaction, and call activities whose process was copied in): the
//! task starts the start events inside its own scope, and completes when nothing inside is
//! live (`finished_subprocess`); cancelled, it takes everything inside with it. A call
//! activity still left as a call here has no process to run.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::{ElementKind, SubProcessForm};
use crate::engine::interpreter::{Interpreter, Outcome, Token};
use crate::engine::TaskState;
use uuid::Uuid;

pub(super) struct SubProcesses;

impl ElementBehaviour for SubProcesses {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        match &task.element.kind {
            ElementKind::SubProcess { .. } => start(run, task),
            ElementKind::CallActivity { .. } => {
                // met where the run could not stop for it (see `paused`), or known missing
                let callee = run
                    .callee_lacking(task.element)
                    .expect("a call activity left unlinked lacks its process");
                Err(run.callee_missing(task.element, callee))
            }
            _ => other_family(task.element),
        }
    }

    fn terminate(&self, run: &mut Interpreter<'_>, guid: Uuid) {
        run.cancel_children(guid);
    }
}

/// The subprocess starts: its data (its inputs only, a copy for a call, what a transaction
/// undoes to), its boundaries and event subprocesses, and a token at each start event inside.
fn start<'m>(run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
    let ElementTask {
        guid,
        element,
        scope,
    } = task;
    let ElementKind::SubProcess {
        form,
        start_events,
        io,
    } = &element.kind
    else {
        other_family(element)
    };
    run.set_state(guid, TaskState::Started);
    if let Some(io) = io {
        run.pass_inputs(guid, element, io)?;
    } else if run.copies_data(guid, element) {
        // SpiffWorkflow's rule for a call: the child starts on a copy of the caller's data,
        // which becomes the caller's when it completes
        let copy = run.data().clone();
        run.state.internal.local_data.insert(guid, copy);
    }
    if *form == SubProcessForm::Transaction {
        // what a cancel end event undoes
        let before = run.data().clone();
        run.state.internal.transactions.insert(guid, before);
    }
    run.start_boundaries(guid, element, scope)?;
    run.arm_event_subprocesses(Some(guid))?;
    for start in start_events {
        run.tokens.push_back(Token {
            element: start.clone(),
            scope: Some(guid),
            flow: None,
            race: None,
            joined: false,
            repeat: false,
            branch: None,
        });
    }
    Ok(())
}
