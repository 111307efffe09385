//! Intermediate throw events (and send tasks, which throw as a message throw does): each
//! throws its event, then goes on. A signal or escalation is caught within the same step, and
//! what caught it may have interrupted the thrower's (sub)process: then it does not go on. A
//! link throw goes on at its link catch event instead of along a flow.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome, Token};
use uuid::Uuid;

pub(super) struct ThrowEvents;

impl ElementBehaviour for ThrowEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        match &element.kind {
            ElementKind::MessageThrow(message) => {
                // the shell correlates a message after the step: nothing here is interrupted
                run.send_message(guid, element, message)?;
                run.complete_activity(guid)
            }
            ElementKind::SignalThrow(signal) => {
                run.throw_signal(guid, element, signal)?;
                go_on_unless_interrupted(run, guid)
            }
            ElementKind::EscalationThrow(escalation) => {
                run.throw_escalation(guid, element, scope, escalation)?;
                go_on_unless_interrupted(run, guid)
            }
            ElementKind::MultipleThrow(throws) => {
                run.throw_all(guid, element, throws, scope)?;
                go_on_unless_interrupted(run, guid)
            }
            ElementKind::LinkThrow { target, .. } => {
                run.complete_activity(guid)?;
                run.tokens.push_back(Token {
                    element: target.clone(),
                    scope,
                    flow: None,
                    race: None,
                    joined: false,
                    repeat: false,
                    branch: run.current_branch(),
                });
                Ok(())
            }
            _ => other_family(element),
        }
    }
}

/// A throw event goes on after its event was caught, unless what caught it interrupted the
/// (sub)process it is in (which cancelled the thrower).
fn go_on_unless_interrupted(run: &mut Interpreter<'_>, guid: Uuid) -> Outcome {
    if run.is_live(guid) {
        run.complete_activity(guid)
    } else {
        Ok(())
    }
}
