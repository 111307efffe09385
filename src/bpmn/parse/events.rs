//! Events: start, end, intermediate throw/catch and boundary events, told apart by their
//! event definition.
use super::nodes::{bpmn_children, nonempty_attr, nonempty_text, spiff_ext};
use super::*;

/// The event definition of an element, by what the engine does with it. An element has at
/// most one (several are refused by `event_definition`).
#[derive(Clone, Copy)]
pub(super) enum EventDefinition<'a, 'i> {
    Absent,
    Message(Node<'a, 'i>),
    Error(Node<'a, 'i>),
    Signal(Node<'a, 'i>),
    Terminate,
    /// Any other (timer, escalation, conditional, `eventDefinitionRef`, ...), by local name:
    /// refused wherever it occurs.
    Other(&'i str),
}

impl<'i> EventDefinition<'_, 'i> {
    pub(super) fn is_present(self) -> bool {
        !matches!(self, EventDefinition::Absent)
    }

    /// The BPMN local name, for error messages ("" when absent).
    fn local_name(self) -> &'i str {
        match self {
            EventDefinition::Absent => "",
            EventDefinition::Message(_) => "messageEventDefinition",
            EventDefinition::Error(_) => "errorEventDefinition",
            EventDefinition::Signal(_) => "signalEventDefinition",
            EventDefinition::Terminate => "terminateEventDefinition",
            EventDefinition::Other(name) => name,
        }
    }
}

impl Parser<'_> {
    /// Looked up for every flow node, not only events: a task with an event definition is
    /// refused too.
    pub(super) fn event_definition<'a, 'i>(
        &self,
        node: Node<'a, 'i>,
        id: &str,
    ) -> Result<EventDefinition<'a, 'i>, ModelError> {
        let mut definitions = bpmn_children(node).filter(|c| {
            let name = c.tag_name().name();
            name.ends_with("EventDefinition") || name == "eventDefinitionRef"
        });
        let first = definitions.next();
        if definitions.next().is_some() {
            return Err(self.err(
                Some(id),
                "events with several event definitions are not supported",
            ));
        }
        let Some(definition) = first else {
            return Ok(EventDefinition::Absent);
        };
        Ok(match definition.tag_name().name() {
            "messageEventDefinition" => EventDefinition::Message(definition),
            "errorEventDefinition" => EventDefinition::Error(definition),
            "signalEventDefinition" => EventDefinition::Signal(definition),
            "terminateEventDefinition" => EventDefinition::Terminate,
            other => EventDefinition::Other(other),
        })
    }

    /// The error for an event definition this element type cannot have.
    pub(super) fn unsupported_definition(
        &self,
        id: &str,
        element_type: &str,
        definition: EventDefinition,
    ) -> ModelError {
        let definition_name = definition.local_name();
        // Timers are refused whatever the event: say so plainly.
        let reason = if definition_name.trim_end_matches("EventDefinition") == "timer" {
            "timer events are not supported".to_string()
        } else {
            format!("a {element_type} with a {definition_name} is not supported")
        };
        self.err(Some(id), reason)
    }

    pub(super) fn start_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        let message = match definition {
            EventDefinition::Absent => None,
            EventDefinition::Message(def) => Some(self.message_catch(node, def, id)?),
            _ => return Err(self.unsupported_definition(id, "startEvent", definition)),
        };
        Ok(ElementKind::StartEvent { message })
    }

    pub(super) fn end_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        let end = match definition {
            EventDefinition::Absent => EndKind::None,
            EventDefinition::Terminate => EndKind::Terminate,
            EventDefinition::Error(def) => EndKind::Error(error_ref(def)),
            EventDefinition::Message(def) => EndKind::Message(self.message_throw(node, def, id)?),
            _ => return Err(self.unsupported_definition(id, "endEvent", definition)),
        };
        Ok(ElementKind::EndEvent(end))
    }

    pub(super) fn intermediate_throw_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        match definition {
            EventDefinition::Absent => Ok(ElementKind::PassThrough),
            EventDefinition::Message(def) => Ok(ElementKind::MessageThrow(
                self.message_throw(node, def, id)?,
            )),
            _ => Err(self.unsupported_definition(id, "intermediateThrowEvent", definition)),
        }
    }

    pub(super) fn intermediate_catch_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        match definition {
            EventDefinition::Message(def) => Ok(ElementKind::MessageCatch(
                self.message_catch(node, def, id)?,
            )),
            EventDefinition::Absent => Err(self.err(
                Some(id),
                "an intermediate catch event needs an event definition (message)",
            )),
            _ => Err(self.unsupported_definition(id, "intermediateCatchEvent", definition)),
        }
    }

    /// The trigger is read before `cancelActivity` is looked at, so a missing or unsupported
    /// event definition is the error reported first.
    pub(super) fn boundary_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        let attached_to = nonempty_attr(node, "attachedToRef")
            .ok_or_else(|| self.err(Some(id), "boundary event without attachedToRef"))?;
        let cancel_activity = node.attribute("cancelActivity").map(str::trim) != Some("false");
        let trigger = self.boundary_trigger(node, id, definition)?;
        if !cancel_activity {
            return Err(self.err(
                Some(id),
                "non-interrupting boundary events (cancelActivity=\"false\") are not supported",
            ));
        }
        Ok(ElementKind::Boundary(BoundarySpec {
            attached_to,
            cancel_activity,
            trigger,
        }))
    }

    fn boundary_trigger(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<BoundaryTrigger, ModelError> {
        Ok(match definition {
            EventDefinition::Error(def) => BoundaryTrigger::Error(error_ref(def)),
            EventDefinition::Message(def) => {
                BoundaryTrigger::Message(self.message_catch(node, def, id)?)
            }
            EventDefinition::Signal(def) => BoundaryTrigger::Signal {
                signal_ref: nonempty_attr(def, "signalRef")
                    .ok_or_else(|| self.err(Some(id), "signal boundary event without signalRef"))?,
                // Resolved by `build_model`: the signal may be defined in another file.
                signal_name: String::new(),
            },
            EventDefinition::Absent => {
                return Err(self.err(
                    Some(id),
                    "a boundary event needs an event definition (error, message or signal)",
                ))
            }
            _ => return Err(self.unsupported_definition(id, "boundaryEvent", definition)),
        })
    }
}

/// Without `errorRef` a boundary event catches every error. Code and name are filled in
/// by `build_model`, which knows the `bpmn:error`s of every file.
fn error_ref(definition: Node) -> ErrorRef {
    ErrorRef {
        error_ref: nonempty_attr(definition, "errorRef"),
        error_code: None,
        error_name: None,
        variable: spiff_ext(definition, "variableName").find_map(nonempty_text),
    }
}
