//! Signals: a signal catch event or boundary waits for its signal (the shell records the wait,
//! so that other instances' throws find it); a throw reaches this instance's waiting catches
//! at once and is handed to the shell for every other instance and the models it starts.
//!
//! Payloads, as SpiffWorkflow's spiff dialect has them on a `bpmn:signal`, `bpmn:error` or
//! `bpmn:escalation`: a throw evaluates the definition's `payloadExpression` with the
//! thrower's task data (null without one), and a catch whose definition names a
//! `variableName` stores what arrived there in its task data (a catch without one stores
//! nothing).

use super::boundaries::Fired;
use super::interpreter::{Interpreter, Outcome};
use super::{Effect, TaskState};
use crate::bpmn::{ElementSpec, SignalRef};
use crate::expr::Expression;
use serde_json::Value;
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
    pub fn throw_signal(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        signal: &'m SignalRef,
    ) -> Outcome {
        let payload = self.evaluate_payload(element, signal.payload.as_ref())?;
        self.catch_signal(&signal.signal_name, &payload)?;
        self.current = Some(guid); // what the thrower throws next sees its data
        self.effects.push(Effect::ThrowSignal {
            task_guid: guid,
            name: signal.signal_name.clone(),
            payload,
        });
        Ok(())
    }

    /// Every task of this instance waiting for the signal when it arrives catches it (a wait
    /// that a catch starts, such as a re-armed non-interrupting boundary, waits for the next).
    pub fn catch_signal(&mut self, name: &str, payload: &Value) -> Outcome {
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
            let variable = self
                .element_of(guid)
                .signal_catch()
                .and_then(|signal| signal.variable.as_deref());
            self.current = Some(guid);
            self.store_payload(variable, payload);
            self.fire_trigger(guid, None, Fired::Signal(name))?;
        }
        Ok(())
    }

    /// A signal from outside the instance (another instance's throw, the API).
    pub fn broadcast_signal(&mut self, name: &str, payload: &Value) -> Outcome {
        self.catch_signal(name, payload)?;
        self.run_until_waiting()
    }

    /// What a throw carries: its payload expression evaluated with the thrower's task data,
    /// else null.
    pub fn evaluate_payload(
        &self,
        element: &ElementSpec,
        expression: Option<&Expression>,
    ) -> Result<Value, super::interpreter::ModelFailure> {
        match expression {
            Some(expression) => self.eval(element, expression, "payloadExpression"),
            None => Ok(Value::Null),
        }
    }

    /// A catch stores what arrived in its variable, in the data of the current task.
    pub fn store_payload(&mut self, variable: Option<&str>, payload: &Value) {
        if let Some(variable) = variable {
            self.data_mut()
                .insert(variable.to_string(), payload.clone());
        }
    }
}
