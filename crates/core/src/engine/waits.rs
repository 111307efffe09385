//! Which waits a live task holds in the shell, and the effect that closes each: the one rule
//! that cancelling a task, failing an instance and retrying it (which opens them again) follow.
//! A multi-instance activity's own task holds none (its instances do).

use super::interpreter::Interpreter;
use super::{Effect, Task};
use crate::bpmn::ElementSpec;
use uuid::Uuid;

/// A wait or call the shell keeps for a task (a message receive, a connector job, a timer, a
/// signal subscription) until the task is done with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldWait {
    Message,
    ServiceCall,
    Timer,
    Signal,
}

impl HeldWait {
    const ALL: [HeldWait; 4] = [
        HeldWait::Message,
        HeldWait::ServiceCall,
        HeldWait::Timer,
        HeldWait::Signal,
    ];

    fn is_held_by(self, task: &Task, element: &ElementSpec) -> bool {
        match self {
            HeldWait::Message => task.waits_for_message(element),
            HeldWait::ServiceCall => task.has_service_call(element),
            HeldWait::Timer => task.waits_for_timer(element),
            HeldWait::Signal => task.waits_for_signal(element),
        }
    }

    /// The effect that closes this wait of `task_guid`.
    pub fn cancellation(self, task_guid: Uuid) -> Effect {
        match self {
            HeldWait::Message => Effect::CancelMessageWait { task_guid },
            HeldWait::ServiceCall => Effect::CancelServiceCall { task_guid },
            HeldWait::Timer => Effect::CancelTimer { task_guid },
            HeldWait::Signal => Effect::CancelSignalWait { task_guid },
        }
    }
}

/// The waits `task` (of `element`) holds, by its state and its element alone.
pub fn held_waits(task: &Task, element: &ElementSpec) -> Vec<HeldWait> {
    HeldWait::ALL
        .into_iter()
        .filter(|wait| wait.is_held_by(task, element))
        .collect()
}

impl Interpreter<'_> {
    /// The waits task `guid` holds (none for a multi-instance activity's own task).
    pub(super) fn waits_held_by(&self, guid: Uuid) -> Vec<HeldWait> {
        if self.is_multi_activity(guid) {
            return vec![];
        }
        held_waits(self.task(guid), self.element_of(guid))
    }

    /// The effects that close every wait task `guid` holds.
    pub(super) fn cancellations_of(&self, guid: Uuid) -> impl Iterator<Item = Effect> {
        self.waits_held_by(guid)
            .into_iter()
            .map(move |wait| wait.cancellation(guid))
    }
}
