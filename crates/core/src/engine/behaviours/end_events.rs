//! End events: the path ends here, with the event's result — a message sent, a signal or an
//! escalation thrown, an error thrown, the scope terminated, or the transaction around it
//! cancelled. The task is completed before the result, so that a termination, or a catch that
//! ends the scope, does not cancel it as a live task. Nothing leaves an end event.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::{ElementKind, EndKind, ErrorRef};
use crate::engine::boundaries::Thrown;
use crate::engine::interpreter::{Interpreter, Outcome};
use crate::engine::TaskState;

pub(super) struct EndEvents;

impl ElementBehaviour for EndEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        let ElementKind::EndEvent(kind) = &element.kind else {
            other_family(element)
        };
        match kind {
            EndKind::Message(message) => run.send_message(guid, element, message)?,
            EndKind::Multiple(throws) => run.throw_all(guid, element, throws, scope)?,
            _ => {}
        }
        run.post_script(element)?;
        run.set_state(guid, TaskState::Completed);
        match kind {
            EndKind::Terminate => {
                run.terminate(scope);
                Ok(())
            }
            EndKind::Error(error) => throw_error(run, task, error),
            EndKind::Signal(signal) => run.throw_signal(guid, element, signal),
            EndKind::Escalation(escalation) => {
                run.throw_escalation(guid, element, scope, escalation)
            }
            EndKind::Cancel => run.cancel_transaction(scope, &element.id),
            EndKind::None | EndKind::Message(_) | EndKind::Multiple(_) => Ok(()),
        }
    }
}

/// An error end event throws its error (named by its name, else its code) with its payload.
fn throw_error<'m>(run: &mut Interpreter<'m>, task: ElementTask<'m>, error: &ErrorRef) -> Outcome {
    let message = error
        .error_name
        .clone()
        .or_else(|| error.error_code.clone())
        .unwrap_or_else(|| "error end event".to_string());
    let payload = match &error.payload {
        Some(expression) => Some(run.eval(task.element, expression, "payloadExpression")?),
        None => None,
    };
    let thrown = Thrown {
        code: error.error_code.clone(),
        message,
        payload,
    };
    run.throw_error(None, task.scope, &task.element.id, thrown)
}
