//! Signals: a signal catch event or boundary waits for its signal (the shell records the wait,
//! so that other instances' throws find it); a throw reaches this instance's waiting catches
//! at once and is handed to the shell for every other instance and the models it starts.

use super::boundaries::Fired;
use super::interpreter::{Interpreter, Outcome};
use super::{Effect, TaskState};
use crate::bpmn::SignalRef;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    pub fn wait_for_signal(&mut self, guid: Uuid, signal: &'m SignalRef) {
        self.set_state(guid, TaskState::Waiting);
        self.effects.push(Effect::WaitForSignal {
            task_guid: guid,
            name: signal.signal_name.clone(),
        });
    }

    /// A signal throw event or end event: this instance catches it first.
    pub fn throw_signal(&mut self, guid: Uuid, signal: &'m SignalRef) -> Outcome {
        self.catch_signal(&signal.signal_name)?;
        self.effects.push(Effect::ThrowSignal {
            task_guid: guid,
            name: signal.signal_name.clone(),
        });
        Ok(())
    }

    /// Every task of this instance waiting for the signal when it arrives catches it (a wait
    /// that a catch starts, such as a re-armed non-interrupting boundary, waits for the next).
    pub fn catch_signal(&mut self, name: &str) -> Outcome {
        let waiting: Vec<Uuid> = self
            .state
            .live_tasks()
            .filter(|task| {
                let element = self.element(&task.element_id);
                task.waits_for_signal(element)
                    && element
                        .signal_catch()
                        .is_some_and(|s| s.signal_name == name)
            })
            .map(|task| task.guid)
            .collect();
        for guid in waiting {
            // an earlier catch may have cancelled this one
            if !self.is_live(guid) {
                continue;
            }
            self.effects
                .push(Effect::CancelSignalWait { task_guid: guid });
            self.fire_trigger(guid, None, Fired::Signal(name))?;
        }
        Ok(())
    }

    /// A signal from outside the instance (another instance's throw, the API).
    pub fn broadcast_signal(&mut self, name: &str) -> Outcome {
        self.catch_signal(name)?;
        self.run_until_waiting()
    }
}
