//! The processes of a model: each process id once, and every reference of its elements
//! (messageRef, errorRef, signalRef) resolved against the definitions all files share.
use super::shared::SharedDefinitions;
use crate::bpmn::*;

/// The model's processes by id, and their ids in file order then document order.
pub(super) struct Processes {
    pub(super) by_id: BTreeMap<String, ProcessSpec>,
    pub(super) order: Vec<String>,
}

/// Processes with no flow node at all (empty pools of a collaboration) are skipped.
pub(super) fn resolve_processes(
    files: &[Definitions],
    shared: &SharedDefinitions,
) -> Result<Processes, ModelError> {
    let mut processes = Processes {
        by_id: BTreeMap::new(),
        order: vec![],
    };
    for file in files {
        for process in file.processes.iter().filter(|p| !p.elements.is_empty()) {
            if let Some(first) = processes.by_id.get(&process.id) {
                return Err(ModelError::new(
                    &file.file,
                    Some(&process.id),
                    format!(
                        "process id '{}' is also defined in {}",
                        process.id, first.file
                    ),
                ));
            }
            let mut process = process.clone();
            resolve_process(&mut process, shared)?;
            processes.order.push(process.id.clone());
            processes.by_id.insert(process.id.clone(), process);
        }
    }
    if processes.by_id.is_empty() {
        return Err(ModelError::new(
            &files[0].file,
            None,
            "the model has no process with flow nodes",
        ));
    }
    Ok(processes)
}

/// Fills in the names (and error codes) the parser left empty, in element id order.
fn resolve_process(
    process: &mut ProcessSpec,
    shared: &SharedDefinitions,
) -> Result<(), ModelError> {
    let resolver = Resolver {
        file: &process.file,
        shared,
    };
    for element in process.elements.values_mut() {
        resolver.resolve_element(element)?;
    }
    Ok(())
}

/// Looks references of one file's elements up; errors name that file and the element.
struct Resolver<'a> {
    file: &'a str,
    shared: &'a SharedDefinitions,
}

impl Resolver<'_> {
    fn resolve_element(&self, element: &mut ElementSpec) -> Result<(), ModelError> {
        let id = element.id.as_str();
        match &mut element.kind {
            ElementKind::StartEvent {
                message: Some(catch),
            }
            | ElementKind::MessageCatch(catch) => {
                catch.message_name = self.message_name(id, &catch.message_ref)?;
            }
            ElementKind::MessageThrow(throw) | ElementKind::EndEvent(EndKind::Message(throw)) => {
                throw.message_name = self.message_name(id, &throw.message_ref)?;
            }
            ElementKind::EndEvent(EndKind::Error(error)) => self.resolve_error(id, error)?,
            ElementKind::SignalCatch(signal)
            | ElementKind::SignalStart(signal)
            | ElementKind::SignalThrow(signal)
            | ElementKind::EndEvent(EndKind::Signal(signal)) => self.resolve_signal(id, signal)?,
            ElementKind::EscalationThrow(escalation)
            | ElementKind::EndEvent(EndKind::Escalation(escalation)) => {
                self.resolve_escalation(id, escalation)?;
            }
            ElementKind::Boundary(BoundarySpec { trigger, .. })
            | ElementKind::EventSubProcessStart { trigger, .. } => {
                self.resolve_trigger(id, trigger)?
            }
            ElementKind::MultipleCatch(set) | ElementKind::MultipleStart(set) => {
                for trigger in &mut set.triggers {
                    self.resolve_trigger(id, trigger)?;
                }
            }
            ElementKind::MultipleThrow(throws)
            | ElementKind::EndEvent(EndKind::Multiple(throws)) => {
                for throw in throws {
                    match throw {
                        Throw::Message(message) => {
                            message.message_name = self.message_name(id, &message.message_ref)?;
                        }
                        Throw::Signal(signal) => self.resolve_signal(id, signal)?,
                        Throw::Escalation(escalation) => self.resolve_escalation(id, escalation)?,
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn resolve_trigger(&self, id: &str, trigger: &mut BoundaryTrigger) -> Result<(), ModelError> {
        match trigger {
            BoundaryTrigger::Error(error) => self.resolve_error(id, error)?,
            BoundaryTrigger::Message(catch) => {
                catch.message_name = self.message_name(id, &catch.message_ref)?;
            }
            BoundaryTrigger::Signal(signal) => self.resolve_signal(id, signal)?,
            BoundaryTrigger::Escalation(escalation) => {
                self.resolve_escalation(id, escalation)?;
            }
            BoundaryTrigger::Multiple(set) => {
                for trigger in &mut set.triggers {
                    self.resolve_trigger(id, trigger)?;
                }
            }
            BoundaryTrigger::Timer(_)
            | BoundaryTrigger::Conditional(_)
            | BoundaryTrigger::Cancel => {}
        }
        Ok(())
    }

    fn message_name(&self, element_id: &str, message_ref: &str) -> Result<String, ModelError> {
        let Some(message) = self.shared.messages.get(message_ref) else {
            return Err(ModelError::new(
                self.file,
                Some(element_id),
                format!("messageRef '{message_ref}' is not a bpmn:message of this model"),
            ));
        };
        Ok(message.name.clone())
    }

    /// Without an errorRef (catch-all) there is nothing to resolve. The `bpmn:error`'s
    /// variable, when it has one, wins over the event definition's.
    fn resolve_error(&self, element_id: &str, error: &mut ErrorRef) -> Result<(), ModelError> {
        let Some(error_ref) = &error.error_ref else {
            return Ok(());
        };
        let Some(spec) = self.shared.errors.get(error_ref) else {
            return Err(ModelError::new(
                self.file,
                Some(element_id),
                format!("errorRef '{error_ref}' is not a bpmn:error of this model"),
            ));
        };
        error.error_code = spec.error_code.clone();
        error.error_name = spec.name.clone();
        error.payload = spec.payload.clone();
        if spec.variable.is_some() {
            error.variable = spec.variable.clone();
        }
        Ok(())
    }

    /// A throw without an escalationRef throws no code; a catch without one takes every
    /// escalation.
    fn resolve_escalation(
        &self,
        element_id: &str,
        escalation: &mut EscalationRef,
    ) -> Result<(), ModelError> {
        let Some(escalation_ref) = &escalation.escalation_ref else {
            return Ok(());
        };
        let Some(spec) = self.shared.escalations.get(escalation_ref) else {
            return Err(ModelError::new(
                self.file,
                Some(element_id),
                format!("escalationRef '{escalation_ref}' is not a bpmn:escalation of this model"),
            ));
        };
        // SpiffWorkflow matches escalations by code, falling back on the name.
        escalation.escalation_code = spec
            .escalation_code
            .clone()
            .or_else(|| spec.name.clone())
            .or_else(|| Some(escalation_ref.clone()));
        escalation.payload = spec.payload.clone();
        escalation.variable = spec.variable.clone();
        Ok(())
    }

    /// The signal's name, payload expression and variable (an unnamed signal has none).
    fn resolve_signal(&self, element_id: &str, signal: &mut SignalRef) -> Result<(), ModelError> {
        if signal.signal_ref.is_empty() {
            return Ok(()); // unnamed
        }
        let Some(spec) = self.shared.signals.get(&signal.signal_ref) else {
            return Err(ModelError::new(
                self.file,
                Some(element_id),
                format!(
                    "signalRef '{}' is not a bpmn:signal of this model",
                    signal.signal_ref
                ),
            ));
        };
        signal.signal_name = spec.name.clone();
        signal.payload = spec.payload.clone();
        signal.variable = spec.variable.clone();
        Ok(())
    }
}
