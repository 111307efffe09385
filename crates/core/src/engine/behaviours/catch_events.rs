//! Intermediate catch events (and receive tasks, which wait as a message catch does): each
//! starts waiting for its trigger, and completes when `fire_trigger` says it happened. A link
//! catch event waits for nothing: the link throw that sent the token was its trigger.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome};
use crate::engine::{Effect, TaskState};

pub(super) struct CatchEvents;

impl ElementBehaviour for CatchEvents {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        match &element.kind {
            ElementKind::TimerCatch(timer) => run.start_timer(guid, element, timer),
            ElementKind::SignalCatch(signal) => {
                run.wait_for_signal(guid, signal);
                Ok(())
            }
            ElementKind::MessageCatch(message) => {
                let expected = run.expected_correlation(element, message)?;
                run.set_state(guid, TaskState::Waiting);
                run.effects.push(Effect::WaitForMessage {
                    task_guid: guid,
                    name: message.message_name.clone(),
                    expected,
                });
                // a receive task is an activity: its boundaries wait with it
                run.start_boundaries(guid, element, scope)
            }
            ElementKind::ConditionalCatch(_) => {
                // no shell wait: the condition is checked when each step has run
                // (`fire_met_conditions`)
                run.set_state(guid, TaskState::Waiting);
                Ok(())
            }
            ElementKind::MultipleCatch(set) => {
                for trigger in &set.triggers {
                    run.wait_for_trigger(guid, element, trigger, None)?;
                }
                Ok(())
            }
            ElementKind::LinkCatch { .. } => run.complete_activity(guid),
            _ => other_family(element),
        }
    }
}
