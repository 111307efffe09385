//! The element behaviours: what a task does over its life, one type per element family, behind
//! one small lifecycle (Zeebe's element processors and restate's command handlers are the
//! models). `flow` creates a task when a token enters an element and hands it to
//! [`behaviour_of`] its element to `activate`; a task that waits is `triggered` when what it
//! waits for happens; `complete_activity` does what every completion shares, then lets the
//! family `leave` (choose the flows the tokens take); `cancel_task` does what every
//! cancellation shares (the waits of `waits`, the boundaries), then lets the family `terminate`
//! what is its own. The families keep calling the interpreter's helpers: the trait only says
//! *which* of them a family's task goes through, and when.
//!
//! A multi-instance activity is no family of its own: its body (`multi_instance`) wraps the
//! element's behaviour, whatever the element.

mod boundary_events;
mod catch_events;
mod end_events;
mod event_subprocesses;
mod gateways;
mod start_events;
mod subprocesses;
mod tasks;
mod throw_events;

use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::Cycle;
use crate::bpmn::{ElementKind, ElementSpec};
use boundary_events::BoundaryEvents;
use catch_events::CatchEvents;
use end_events::EndEvents;
use event_subprocesses::EventSubProcesses;
use gateways::Gateways;
use start_events::StartEvents;
use subprocesses::SubProcesses;
use tasks::Tasks;
use throw_events::ThrowEvents;
use uuid::Uuid;

/// A task of an element: the narrow view a behaviour is handed instead of loose parameters.
#[derive(Clone, Copy)]
pub(super) struct ElementTask<'m> {
    pub guid: Uuid,
    pub element: &'m ElementSpec,
    /// The subprocess task it runs in (None at top level).
    pub scope: Option<Uuid>,
}

/// The lifecycle every element family follows. Its methods are generic over the model's
/// lifetime only, so that a family is a `&'static dyn ElementBehaviour`: no allocation per
/// element on the hot path.
pub(super) trait ElementBehaviour {
    /// The task exists (inputs passed, pre-script run): what the element does now — complete
    /// at once, start waiting, or start what runs inside it.
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome;

    /// The trigger the waiting task waited for happened (`fire_trigger` closed what else it
    /// waited for); `next` is a cycle timer's next occurrence. The task completes: it waited
    /// for just this. Boundary events and event subprocesses do more.
    fn triggered<'m>(
        &self,
        run: &mut Interpreter<'m>,
        guid: Uuid,
        _next: Option<Cycle>,
    ) -> Outcome {
        run.count_execution(&run.task(guid).element_id.clone())?;
        run.complete_activity(guid)
    }

    /// The task completed (`complete_activity` did the shared part): tokens go on along the
    /// flows it takes. Every flow whose condition holds, else the default flow; gateways
    /// choose otherwise.
    fn leave<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let flows = run.conditional_flows(task.element)?;
        run.follow(flows, task.scope, None);
        Ok(())
    }

    /// The live task was cancelled (`cancel_task` closed its waits and its boundaries): what
    /// else of the family goes with it. Most hold nothing more.
    fn terminate(&self, _run: &mut Interpreter<'_>, _guid: Uuid) {}
}

/// The behaviour of an element's family.
pub(super) fn behaviour_of(kind: &ElementKind) -> &'static dyn ElementBehaviour {
    match kind {
        ElementKind::ScriptTask { .. }
        | ElementKind::BusinessRuleTask { .. }
        | ElementKind::UserTask
        | ElementKind::ManualTask
        | ElementKind::ServiceTask(_)
        | ElementKind::PassThrough => &Tasks,
        ElementKind::StartEvent { .. }
        | ElementKind::TimerStart(_)
        | ElementKind::SignalStart(_)
        | ElementKind::MultipleStart(_) => &StartEvents,
        ElementKind::TimerCatch(_)
        | ElementKind::SignalCatch(_)
        | ElementKind::MessageCatch(_)
        | ElementKind::ConditionalCatch(_)
        | ElementKind::MultipleCatch(_)
        | ElementKind::LinkCatch { .. } => &CatchEvents,
        ElementKind::SignalThrow(_)
        | ElementKind::EscalationThrow(_)
        | ElementKind::MessageThrow(_)
        | ElementKind::MultipleThrow(_)
        | ElementKind::LinkThrow { .. } => &ThrowEvents,
        ElementKind::EndEvent(_) => &EndEvents,
        ElementKind::Boundary(_) => &BoundaryEvents,
        ElementKind::ExclusiveGateway
        | ElementKind::ParallelGateway
        | ElementKind::InclusiveGateway
        | ElementKind::EventGateway => &Gateways,
        ElementKind::SubProcess { .. } | ElementKind::CallActivity { .. } => &SubProcesses,
        ElementKind::EventSubProcess { .. } | ElementKind::EventSubProcessStart { .. } => {
            &EventSubProcesses
        }
        ElementKind::Faulty { .. } => &FaultyElements,
    }
}

/// Elements the model loaded but cannot run (see `ElementKind::Faulty`): a token reaching one
/// puts the instance in error, as SpiffArena's run does.
struct FaultyElements;

impl ElementBehaviour for FaultyElements {
    fn activate<'m>(&self, _run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementKind::Faulty { reason } = &task.element.kind else {
            other_family(task.element)
        };
        Err(ModelFailure::new(&task.element.id, reason.clone()))
    }
}

/// A family was handed an element of another: `behaviour_of` and the family disagree.
fn other_family(element: &ElementSpec) -> ! {
    unreachable!(
        "element '{}' was handed to a family it is not of",
        element.id
    )
}
