//! Start and message events: firing a process's start events, sending messages with their
//! correlation values, what a waiting receive expects, and receiving messages (catch events,
//! receive tasks, boundaries). What a catch, throw or end event does when a token reaches it is
//! its behaviour (see `behaviours`).

use super::boundaries::Fired;
use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::{Effect, TaskState};
use crate::bpmn::{
    BoundaryTrigger, CatchSet, ElementKind, ElementSpec, MessageCatchSpec, MessageThrowSpec, Throw,
};
use serde_json::Value;
use std::collections::BTreeMap;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// A start event of the process fires (with the message or the signal's payload that
    /// started it, if any).
    pub fn fire_start_event(
        &mut self,
        start_id: &str,
        message: Option<&(String, Value)>,
        signal: Option<&Value>,
    ) -> Outcome {
        self.count_execution(start_id)?;
        let element = self.element(start_id);
        let guid = self.new_task(element, None, TaskState::Ready);
        self.current = Some(guid);
        if let (ElementKind::SignalStart(caught), Some(payload)) = (&element.kind, signal) {
            self.store_payload(caught.variable.as_deref(), payload);
        }
        self.pre_script(element)?;
        if let Some((name, payload)) = message {
            if let Some(catch) = element.message_catch_named(name) {
                self.receive_message(catch, name, payload);
            }
            if let ElementKind::MultipleStart(set) = &element.kind {
                if set.parallel {
                    return self.wait_for_the_other_start_messages(guid, element, set, name);
                }
            }
        }
        self.complete_activity(guid)
    }

    /// A `parallelMultiple` start event that one of its messages started: the instance waits
    /// at it for the others (correlated by what the first one established).
    fn wait_for_the_other_start_messages(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        set: &'m CatchSet,
        arrived: &str,
    ) -> Outcome {
        let mut fired = std::collections::BTreeSet::new();
        for (index, trigger) in set.triggers.iter().enumerate() {
            match trigger {
                BoundaryTrigger::Message(m) if m.message_name == arrived => {
                    fired.insert(index);
                }
                _ => self.wait_for_trigger(guid, element, trigger, None)?,
            }
        }
        self.set_state(guid, TaskState::Waiting);
        self.state.internal.fired.insert(guid, fired);
        Ok(())
    }

    /// A throw event with several definitions throws every one, in document order.
    pub fn throw_all(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        throws: &'m [Throw],
        scope: Option<Uuid>,
    ) -> Outcome {
        for throw in throws {
            match throw {
                Throw::Message(message) => self.send_message(guid, element, message)?,
                Throw::Signal(signal) => self.throw_signal(guid, element, signal)?,
                Throw::Escalation(escalation) => {
                    self.throw_escalation(guid, element, scope, escalation)?
                }
            }
        }
        Ok(())
    }

    /// The payload (its expression, else all of data) goes out with the correlation values it
    /// carries, which the instance now holds as established.
    pub fn send_message(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        message: &'m MessageThrowSpec,
    ) -> Outcome {
        let payload = match &message.payload {
            Some(expression) => self.eval(element, expression, "messagePayload")?,
            None => Value::Object(self.data().clone()),
        };
        // SpiffArena's messages compute correlations only from a payload expression's value
        // (and fail with it); a message without one carries what the task data gives
        let correlation_values = if message.payload.is_some() {
            self.thrown_correlation_values(element, &message.message_name, &payload)?
        } else {
            self.model
                .correlation_values(&message.message_name, &payload, self.expr_context())
        };
        for (property, value) in &correlation_values {
            self.state
                .correlations
                .insert(property.clone(), value.clone());
        }
        self.effects.push(Effect::SendMessage {
            task_guid: guid,
            name: message.message_name.clone(),
            payload,
            correlation_values,
        });
        Ok(())
    }

    /// The correlation values a thrown message carries: the model's retrieval expressions for
    /// its name over the payload. As in SpiffWorkflow, an expression that raises (the payload
    /// lacks its key) fails the throwing task: no message goes out without its value. One that
    /// gives null is no value.
    fn thrown_correlation_values(
        &self,
        element: &ElementSpec,
        message_name: &str,
        payload: &Value,
    ) -> Result<BTreeMap<String, Value>, ModelFailure> {
        let empty = serde_json::Map::new();
        let vars = payload.as_object().unwrap_or(&empty);
        let mut values = BTreeMap::new();
        for property in &self.model.correlation_properties {
            let Some(expression) = property.retrieval.get(message_name) else {
                continue;
            };
            let value = expression.eval(vars, self.expr_context()).map_err(|e| {
                let what = format!(
                    "the retrieval expression of correlation property '{}' for message '{message_name}'",
                    property.id
                );
                ModelFailure::of_expression(&element.id, e, &what)
            })?;
            if !value.is_null() {
                values.insert(property.id.clone(), value);
            }
        }
        Ok(values)
    }

    /// What a waiting receive requires of a message: the established values of the
    /// properties the message can carry, overridden by `processVariableCorrelation`
    /// expressions over data (a null result constrains nothing). Every such expression is
    /// evaluated, also for a property the message cannot carry (whose value constrains
    /// nothing): SpiffWorkflow computes them all when the catch event is reached, so one that
    /// raises errs the instance there.
    pub fn expected_correlation(
        &self,
        element: &ElementSpec,
        message: &MessageCatchSpec,
    ) -> Result<BTreeMap<String, Value>, ModelFailure> {
        let properties = self.model.correlation_properties_for(&message.message_name);
        let mut expected = BTreeMap::new();
        for property in &properties {
            if let Some(value) = self.state.correlations.get(*property) {
                expected.insert(property.to_string(), value.clone());
            }
        }
        for (property, expression) in &message.process_correlations {
            let what = format!("processVariableCorrelation for '{property}'");
            let value = self.eval(element, expression, &what)?;
            if properties.contains(&property.as_str()) && !value.is_null() {
                expected.insert(property.clone(), value);
            }
        }
        Ok(expected)
    }

    /// The payload goes into the message variable; its correlation values become established.
    pub fn receive_message(&mut self, catch: &MessageCatchSpec, name: &str, payload: &Value) {
        if let Some(variable) = &catch.variable {
            self.data_mut().insert(variable.clone(), payload.clone());
        }
        let values = self
            .model
            .correlation_values(name, payload, self.expr_context());
        self.state.correlations.extend(values);
    }

    /// A message for a waiting catch event, receive task or message boundary event.
    pub fn deliver_message(&mut self, guid: Uuid, name: &str, payload: &Value) -> Outcome {
        self.current = Some(guid);
        let element = self.element_of(guid);
        let catch = element
            .message_catch_named(name)
            .expect("validated: the task waits for this message");
        self.receive_message(catch, name, payload);
        self.fire_trigger(guid, None, Fired::Message(name))?;
        self.run_until_waiting()
    }
}
