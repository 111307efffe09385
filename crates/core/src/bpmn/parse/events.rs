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
    Timer(Node<'a, 'i>),
    Escalation(Node<'a, 'i>),
    Conditional(Node<'a, 'i>),
    Link(Node<'a, 'i>),
    Cancel,
    /// Several definitions on one event (the event's node).
    Several(Node<'a, 'i>),
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
            EventDefinition::Timer(_) => "timerEventDefinition",
            EventDefinition::Escalation(_) => "escalationEventDefinition",
            EventDefinition::Conditional(_) => "conditionalEventDefinition",
            EventDefinition::Link(_) => "linkEventDefinition",
            EventDefinition::Cancel => "cancelEventDefinition",
            EventDefinition::Several(_) => "several event definitions",
            EventDefinition::Terminate => "terminateEventDefinition",
            EventDefinition::Other(name) => name,
        }
    }
}

impl Parser<'_> {
    /// Looked up for every flow node, not only events: a task with an event definition is
    /// refused too.
    pub(super) fn event_definition<'a, 'i>(&self, node: Node<'a, 'i>) -> EventDefinition<'a, 'i> {
        let mut definitions = definition_nodes(node);
        match (definitions.next(), definitions.next()) {
            (None, _) => EventDefinition::Absent,
            (Some(definition), None) => classify(definition),
            (Some(_), Some(_)) => EventDefinition::Several(node),
        }
    }

    /// The triggers of a catch event with several definitions: messages, conditions, at most
    /// one timer and one signal (the shell keeps one timer and one signal wait per task).
    fn catch_set(&self, event: Node, id: &str) -> Result<CatchSet, ModelError> {
        let mut triggers = vec![];
        for definition in definition_nodes(event) {
            let trigger = match classify(definition) {
                EventDefinition::Message(def) => {
                    BoundaryTrigger::Message(self.message_catch(event, def, id)?)
                }
                EventDefinition::Timer(def) => BoundaryTrigger::Timer(self.timer(def, id)?),
                EventDefinition::Signal(def) => BoundaryTrigger::Signal(Self::signal_ref(def)),
                EventDefinition::Conditional(def) => {
                    BoundaryTrigger::Conditional(self.condition(def, id)?)
                }
                other => {
                    return Err(self.err(
                        Some(id),
                        format!(
                            "a {} cannot be one of several event definitions of a catch event (message, timer, signal and conditional can)",
                            other.local_name()
                        ),
                    ))
                }
            };
            triggers.push(trigger);
        }
        for (kind, is) in [
            (
                "timer",
                (|t: &BoundaryTrigger| matches!(t, BoundaryTrigger::Timer(_)))
                    as fn(&BoundaryTrigger) -> bool,
            ),
            ("signal", |t: &BoundaryTrigger| {
                matches!(t, BoundaryTrigger::Signal(_))
            }),
        ] {
            if triggers.iter().filter(|t| is(t)).count() > 1 {
                return Err(self.err(
                    Some(id),
                    format!("a catch event with several event definitions has at most one {kind}"),
                ));
            }
        }
        Ok(CatchSet {
            triggers,
            parallel: event.attribute("parallelMultiple").map(str::trim) == Some("true"),
        })
    }

    /// Every definition of a throw event with several: messages, signals and escalations.
    fn throw_set(&self, event: Node, id: &str) -> Result<Vec<Throw>, ModelError> {
        definition_nodes(event)
            .map(|definition| match classify(definition) {
                EventDefinition::Message(def) => {
                    Ok(Throw::Message(self.message_throw(event, def, id)?))
                }
                EventDefinition::Signal(def) => Ok(Throw::Signal(Self::signal_ref(def))),
                EventDefinition::Escalation(def) => Ok(Throw::Escalation(escalation_ref(def))),
                other => Err(self.err(
                    Some(id),
                    format!(
                        "a {} cannot be one of several event definitions of a throw event (message, signal and escalation can)",
                        other.local_name()
                    ),
                )),
            })
            .collect()
    }
}

fn definition_nodes<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    bpmn_children(node).filter(|c| {
        let name = c.tag_name().name();
        name.ends_with("EventDefinition") || name == "eventDefinitionRef"
    })
}

/// An event definition by what the engine does with it.
fn classify<'a, 'i>(definition: Node<'a, 'i>) -> EventDefinition<'a, 'i> {
    match definition.tag_name().name() {
        "messageEventDefinition" => EventDefinition::Message(definition),
        "errorEventDefinition" => EventDefinition::Error(definition),
        "signalEventDefinition" => EventDefinition::Signal(definition),
        "timerEventDefinition" => EventDefinition::Timer(definition),
        "escalationEventDefinition" => EventDefinition::Escalation(definition),
        "conditionalEventDefinition" => EventDefinition::Conditional(definition),
        "linkEventDefinition" => EventDefinition::Link(definition),
        "cancelEventDefinition" => EventDefinition::Cancel,
        "terminateEventDefinition" => EventDefinition::Terminate,
        other => EventDefinition::Other(other),
    }
}

impl Parser<'_> {
    /// The error for an event definition this element type cannot have.
    pub(super) fn unsupported_definition(
        &self,
        id: &str,
        element_type: &str,
        definition: EventDefinition,
    ) -> ModelError {
        let definition_name = definition.local_name();
        if definition_name == "compensateEventDefinition" {
            return self.err(
                Some(id),
                "compensation events are not supported (bpmn:compensateEventDefinition)",
            );
        }
        let article = if element_type.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        self.err(
            Some(id),
            format!("{article} {element_type} with a {definition_name} is not supported"),
        )
    }

    pub(super) fn start_event(
        &self,
        node: Node,
        id: &str,
        definition: EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        if node
            .parent()
            .is_some_and(super::subprocess::is_event_subprocess)
        {
            return self.event_subprocess_start(node, id, definition);
        }
        let message = match definition {
            EventDefinition::Absent => None,
            EventDefinition::Message(def) => Some(self.message_catch(node, def, id)?),
            EventDefinition::Timer(def) => {
                return Ok(ElementKind::TimerStart(self.timer(def, id)?))
            }
            EventDefinition::Signal(def) => {
                return Ok(ElementKind::SignalStart(Self::signal_ref(def)))
            }
            EventDefinition::Several(event) => {
                let set = self.catch_set(event, id)?;
                if !set
                    .triggers
                    .iter()
                    .all(|t| matches!(t, BoundaryTrigger::Message(_)))
                {
                    return Err(self.err(
                        Some(id),
                        "a process start event with several event definitions may only have messages",
                    ));
                }
                return Ok(ElementKind::MultipleStart(set));
            }
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
            EventDefinition::Signal(def) => EndKind::Signal(Self::signal_ref(def)),
            EventDefinition::Escalation(def) => EndKind::Escalation(escalation_ref(def)),
            EventDefinition::Several(event) => EndKind::Multiple(self.throw_set(event, id)?),
            EventDefinition::Cancel => {
                if node.parent().map(|p| p.tag_name().name()) != Some("transaction") {
                    return Err(self.err(
                        Some(id),
                        "a cancel end event belongs directly inside a transaction",
                    ));
                }
                EndKind::Cancel
            }
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
            EventDefinition::Signal(def) => Ok(ElementKind::SignalThrow(Self::signal_ref(def))),
            EventDefinition::Escalation(def) => {
                Ok(ElementKind::EscalationThrow(escalation_ref(def)))
            }
            EventDefinition::Several(event) => {
                Ok(ElementKind::MultipleThrow(self.throw_set(event, id)?))
            }
            EventDefinition::Link(def) => Ok(ElementKind::LinkThrow {
                name: self.link_name(def, id)?,
                // resolved once the whole (sub)process is read
                target: String::new(),
            }),
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
            EventDefinition::Timer(def) => Ok(ElementKind::TimerCatch(self.timer(def, id)?)),
            EventDefinition::Signal(def) => Ok(ElementKind::SignalCatch(Self::signal_ref(def))),
            EventDefinition::Conditional(def) => {
                Ok(ElementKind::ConditionalCatch(self.condition(def, id)?))
            }
            EventDefinition::Several(event) => {
                Ok(ElementKind::MultipleCatch(self.catch_set(event, id)?))
            }
            EventDefinition::Link(def) => Ok(ElementKind::LinkCatch {
                name: self.link_name(def, id)?,
            }),
            EventDefinition::Absent => Err(self.err(
                Some(id),
                "an intermediate catch event needs an event definition (message, timer or signal)",
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
        if !cancel_activity && matches!(trigger, BoundaryTrigger::Error(_)) {
            return Err(self.err(
                Some(id),
                "an error boundary event always interrupts: cancelActivity=\"false\" is not allowed",
            ));
        }
        Ok(ElementKind::Boundary(BoundarySpec {
            attached_to,
            cancel_activity,
            trigger,
        }))
    }

    pub(super) fn boundary_trigger(
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
            EventDefinition::Signal(def) => BoundaryTrigger::Signal(Self::signal_ref(def)),
            EventDefinition::Timer(def) => BoundaryTrigger::Timer(self.timer(def, id)?),
            EventDefinition::Escalation(def) => BoundaryTrigger::Escalation(escalation_ref(def)),
            EventDefinition::Conditional(def) => {
                BoundaryTrigger::Conditional(self.condition(def, id)?)
            }
            EventDefinition::Several(event) => {
                BoundaryTrigger::Multiple(Box::new(self.catch_set(event, id)?))
            }
            EventDefinition::Cancel => BoundaryTrigger::Cancel,
            EventDefinition::Absent => {
                return Err(self.err(
                    Some(id),
                    "a boundary event needs an event definition (error, escalation, message, signal, timer or condition)",
                ))
            }
            _ => return Err(self.unsupported_definition(id, "boundaryEvent", definition)),
        })
    }
}

impl Parser<'_> {
    /// The signal's name is resolved by `build_model`: it may be defined in another file.
    /// Without `signalRef` (a modeler's draft) the signal is unnamed, as SpiffWorkflow loads
    /// it: only an unnamed throw in a model reaches it.
    fn signal_ref(definition: Node) -> SignalRef {
        SignalRef {
            signal_ref: nonempty_attr(definition, "signalRef").unwrap_or_default(),
            ..SignalRef::default()
        }
    }

    /// The `bpmn:condition` of a conditional event: a Python expression.
    fn condition(&self, definition: Node, id: &str) -> Result<Expression, ModelError> {
        let source = bpmn_children(definition)
            .find(|c| c.tag_name().name() == "condition")
            .and_then(nonempty_text)
            .ok_or_else(|| self.err(Some(id), "a conditional event needs a bpmn:condition"))?;
        self.expr(id, "the condition", &source)
    }

    /// Link events pair up by name (SpiffArena's modeler writes it on the definition; the
    /// event's own name is the fallback).
    fn link_name(&self, definition: Node, id: &str) -> Result<String, ModelError> {
        nonempty_attr(definition, "name")
            .or_else(|| {
                definition
                    .parent()
                    .and_then(|event| nonempty_attr(event, "name"))
            })
            .ok_or_else(|| self.err(Some(id), "a link event needs a name"))
    }

    /// `timeDate`, `timeDuration` or `timeCycle`, whose text is a Python expression.
    fn timer(&self, definition: Node, id: &str) -> Result<TimerSpec, ModelError> {
        let mut specs = bpmn_children(definition).filter_map(|child| {
            let kind = match child.tag_name().name() {
                "timeDate" => TimerKind::Date,
                "timeDuration" => TimerKind::Duration,
                "timeCycle" => TimerKind::Cycle,
                _ => return None,
            };
            Some((kind, child))
        });
        let Some((kind, node)) = specs.next() else {
            return Err(self.err(
                Some(id),
                "a timer event needs a timeDate, timeDuration or timeCycle",
            ));
        };
        if specs.next().is_some() {
            return Err(self.err(
                Some(id),
                "a timer event has one of timeDate, timeDuration or timeCycle, not several",
            ));
        }
        let source = nonempty_text(node).ok_or_else(|| {
            self.err(
                Some(id),
                format!("the timer's {} is empty", node.tag_name().name()),
            )
        })?;
        let what = format!("the timer's {}", node.tag_name().name());
        let expression = self.expr(id, &what, &source)?;
        Ok(TimerSpec { kind, expression })
    }
}

/// Without `escalationRef` a catch takes every escalation. The code is filled in by
/// `build_model`.
fn escalation_ref(definition: Node) -> EscalationRef {
    EscalationRef {
        escalation_ref: nonempty_attr(definition, "escalationRef"),
        ..EscalationRef::default()
    }
}

/// Without `errorRef` a boundary event catches every error. Code and name are filled in
/// by `build_model`, which knows the `bpmn:error`s of every file.
fn error_ref(definition: Node) -> ErrorRef {
    ErrorRef {
        error_ref: nonempty_attr(definition, "errorRef"),
        variable: spiff_ext(definition, "variableName").find_map(nonempty_text),
        ..ErrorRef::default()
    }
}
