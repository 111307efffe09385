//! Gateways: a token passes at once (a join has already held it back in `join_passes` until
//! it may); what sets a gateway apart is the flows it leaves by. A parallel gateway takes
//! every flow, an exclusive one the first whose condition holds, an inclusive one every one
//! whose condition holds; an event-based gateway takes every flow, and the catch events there
//! race: the first to complete cancels the others (`win_race`).

use super::{ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome};

pub(super) struct Gateways;

impl ElementBehaviour for Gateways {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        run.complete_activity(task.guid)
    }

    fn leave<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let gateway = task.element;
        let flows = match gateway.kind {
            ElementKind::ParallelGateway | ElementKind::EventGateway => {
                gateway.outgoing.iter().map(String::as_str).collect()
            }
            ElementKind::ExclusiveGateway => vec![run.exclusive_choice(gateway)?],
            _ => run.conditional_flows(gateway)?,
        };
        let race = matches!(gateway.kind, ElementKind::EventGateway).then_some(task.guid);
        run.follow(flows, task.scope, race);
        Ok(())
    }
}
