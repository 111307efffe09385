//! What all files of a model share: messages, errors and signals (by id), correlation
//! properties and correlation keys. A file may use what another file defines.
use crate::bpmn::*;

/// Messages, errors and signals of all files, by id.
pub(super) struct SharedDefinitions {
    pub(super) messages: BTreeMap<String, MessageSpec>,
    pub(super) errors: BTreeMap<String, ErrorSpec>,
    pub(super) signals: BTreeMap<String, SignalSpec>,
    pub(super) escalations: BTreeMap<String, EscalationSpec>,
}

impl SharedDefinitions {
    /// File by file (messages, errors, then signals of each), so that the first conflict in
    /// file order is the one reported.
    pub(super) fn merge(files: &[Definitions]) -> Result<Self, ModelError> {
        let mut shared = SharedDefinitions {
            messages: BTreeMap::new(),
            errors: BTreeMap::new(),
            signals: BTreeMap::new(),
            escalations: BTreeMap::new(),
        };
        for file in files {
            shared.add_messages(file)?;
            shared.add_errors(file)?;
            shared.add_signals(file);
            shared.add_escalations(file);
        }
        Ok(shared)
    }

    /// A message id defined in several files must have one name: the name is what
    /// senders, receivers and correlation match on.
    fn add_messages(&mut self, file: &Definitions) -> Result<(), ModelError> {
        for message in &file.messages {
            match self.messages.get(&message.id) {
                Some(first) if first.name != message.name => {
                    return Err(ModelError::new(
                        &file.file,
                        Some(&message.id),
                        format!(
                            "message '{}' is named '{}' here and '{}' in another file of the model",
                            message.id, message.name, first.name
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    self.messages.insert(message.id.clone(), message.clone());
                }
            }
        }
        Ok(())
    }

    /// An error id defined in several files must have one errorCode: catching matches on it.
    fn add_errors(&mut self, file: &Definitions) -> Result<(), ModelError> {
        for error in &file.errors {
            match self.errors.get(&error.id) {
                Some(first) if first.error_code != error.error_code => {
                    return Err(ModelError::new(
                        &file.file,
                        Some(&error.id),
                        "this error is defined with another errorCode in another file of the model",
                    ));
                }
                Some(_) => {}
                None => {
                    self.errors.insert(error.id.clone(), error.clone());
                }
            }
        }
        Ok(())
    }

    /// The first file (in name order) that defines an escalation id gives its code.
    fn add_escalations(&mut self, file: &Definitions) {
        for escalation in &file.escalations {
            self.escalations
                .entry(escalation.id.clone())
                .or_insert_with(|| escalation.clone());
        }
    }

    /// The first file (in name order) that defines a signal id gives its name.
    fn add_signals(&mut self, file: &Definitions) {
        for signal in &file.signals {
            self.signals
                .entry(signal.id.clone())
                .or_insert_with(|| signal.clone());
        }
    }
}

/// Properties with the same id are merged; their retrieval expressions are keyed by
/// message **name** (what arrives at run time), the first one for a name winning.
pub(super) fn merge_correlation_properties(
    files: &[Definitions],
    messages: &BTreeMap<String, MessageSpec>,
) -> Result<Vec<CorrelationProperty>, ModelError> {
    let mut merged: Vec<CorrelationProperty> = vec![];
    for file in files {
        for raw in &file.correlation_properties {
            let property = property_slot(&mut merged, raw);
            for (message_ref, expression) in &raw.retrieval {
                let Some(message) = messages.get(message_ref) else {
                    return Err(ModelError::new(
                        &file.file,
                        Some(&raw.id),
                        format!("retrieval expression: messageRef '{message_ref}' is not a bpmn:message of this model"),
                    ));
                };
                property
                    .retrieval
                    .entry(message.name.clone())
                    .or_insert_with(|| expression.clone());
            }
        }
    }
    Ok(merged)
}

/// The merged property with this id, added (named after the first file that defines it)
/// if it is new. Kept in order of first appearance.
fn property_slot<'a>(
    merged: &'a mut Vec<CorrelationProperty>,
    raw: &RawCorrelationProperty,
) -> &'a mut CorrelationProperty {
    let index = match merged.iter().position(|p| p.id == raw.id) {
        Some(index) => index,
        None => {
            merged.push(CorrelationProperty {
                id: raw.id.clone(),
                name: raw.name.clone().unwrap_or_else(|| raw.id.clone()),
                retrieval: BTreeMap::new(),
            });
            merged.len() - 1
        }
    };
    &mut merged[index]
}

/// Every distinct key once, in order of first appearance.
pub(super) fn merge_correlation_keys(files: &[Definitions]) -> Vec<CorrelationKeySpec> {
    let mut keys: Vec<CorrelationKeySpec> = vec![];
    for key in files.iter().flat_map(|file| &file.correlation_keys) {
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    keys
}
