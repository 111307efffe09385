//! The file-level items of `bpmn:definitions`: messages, errors, signals, correlation
//! properties and correlation keys. Processes are read by `process`.
use super::nodes::{bpmn_children, is_bpmn, nonempty_attr, nonempty_text, spiff_ext};
use super::*;

impl Parser<'_> {
    /// Children in document order, so the first bad one in the file is the one reported.
    pub(super) fn definitions(&self, root: Node) -> Result<Definitions, ModelError> {
        let mut definitions = Definitions {
            file: self.file.to_string(),
            processes: vec![],
            messages: vec![],
            errors: vec![],
            signals: vec![],
            escalations: vec![],
            correlation_properties: vec![],
            correlation_keys: vec![],
            data_stores: vec![],
            warnings: vec![],
        };
        for child in bpmn_children(root) {
            match child.tag_name().name() {
                "process" => definitions.processes.push(self.process(child)?),
                "message" => definitions.messages.push(self.message(child)?),
                "error" => definitions.errors.push(self.error(child)?),
                "signal" => definitions.signals.push(self.signal(child)?),
                "escalation" => definitions.escalations.push(self.escalation(child)?),
                "correlationProperty" => definitions
                    .correlation_properties
                    .push(self.correlation_property(child)?),
                "collaboration" => definitions
                    .correlation_keys
                    .extend(collaboration_keys(child)),
                "correlationKey" => definitions.correlation_keys.push(correlation_key(child)),
                "dataStore" => definitions.data_stores.push(self.data_store(child)?),
                _ => {} // itemDefinition, interface, ...: not executable
            }
        }
        definitions.warnings = self.faults.take();
        Ok(definitions)
    }

    fn message(&self, node: Node) -> Result<MessageSpec, ModelError> {
        let id = self.required_id(node)?;
        let name = nonempty_attr(node, "name").unwrap_or_else(|| id.clone());
        Ok(MessageSpec { id, name })
    }

    /// A `bpmn:dataStore`: its name says its kind, as SpiffWorkflow picks the store's class.
    fn data_store(&self, node: Node) -> Result<(String, DataStoreKind), ModelError> {
        let id = self.required_id(node)?;
        let known = || DataStoreKind::ALL.map(DataStoreKind::class_name).join(", ");
        let Some(name) = nonempty_attr(node, "name") else {
            return Err(self.err(
                Some(&id),
                format!(
                    "the data store has no name: its name says its kind, one of {}",
                    known()
                ),
            ));
        };
        match DataStoreKind::from_class_name(&name) {
            Some(kind) => Ok((id, kind)),
            None => Err(self.err(
                Some(&id),
                format!(
                    "data store name '{name}' is no data store kind here (the kinds are {})",
                    known()
                ),
            )),
        }
    }

    fn error(&self, node: Node) -> Result<ErrorSpec, ModelError> {
        let id = self.required_id(node)?;
        let (payload, variable) = self.payload_extensions(node, &id)?;
        Ok(ErrorSpec {
            name: nonempty_attr(node, "name"),
            error_code: nonempty_attr(node, "errorCode"),
            variable,
            payload,
            id,
        })
    }

    fn signal(&self, node: Node) -> Result<SignalSpec, ModelError> {
        let id = self.required_id(node)?;
        let name = nonempty_attr(node, "name").unwrap_or_else(|| id.clone());
        let (payload, variable) = self.payload_extensions(node, &id)?;
        Ok(SignalSpec {
            id,
            name,
            payload,
            variable,
        })
    }

    fn escalation(&self, node: Node) -> Result<EscalationSpec, ModelError> {
        let id = self.required_id(node)?;
        let (payload, variable) = self.payload_extensions(node, &id)?;
        Ok(EscalationSpec {
            name: nonempty_attr(node, "name"),
            escalation_code: nonempty_attr(node, "escalationCode"),
            payload,
            variable,
            id,
        })
    }

    /// SpiffWorkflow's `spiffworkflow:payloadExpression` (Python, what a throw carries) and
    /// `spiffworkflow:variableName` (where a catch stores it) of a signal, error or escalation.
    fn payload_extensions(
        &self,
        node: Node,
        id: &str,
    ) -> Result<(Option<Expression>, Option<String>), ModelError> {
        let payload = match spiff_ext(node, "payloadExpression").find_map(nonempty_text) {
            Some(source) => Some(self.expr(id, "payloadExpression", &source)?),
            None => None,
        };
        let variable = spiff_ext(node, "variableName").find_map(nonempty_text);
        Ok((payload, variable))
    }

    fn correlation_property(&self, node: Node) -> Result<RawCorrelationProperty, ModelError> {
        let id = self.required_id(node)?;
        let retrieval = node
            .children()
            .filter(|c| is_bpmn(c, "correlationPropertyRetrievalExpression"))
            .map(|r| self.retrieval_expression(&id, r))
            .collect::<Result<_, _>>()?;
        Ok(RawCorrelationProperty {
            name: nonempty_attr(node, "name"),
            id,
            retrieval,
        })
    }

    /// (message id, expression over the message payload) of one retrieval expression.
    fn retrieval_expression(
        &self,
        property_id: &str,
        node: Node,
    ) -> Result<(String, Expression), ModelError> {
        let Some(message_ref) = nonempty_attr(node, "messageRef") else {
            return Err(self.err(
                Some(property_id),
                "a correlationPropertyRetrievalExpression has no messageRef",
            ));
        };
        // Modelers write either form (messagePath is the standard one).
        // an empty one is loaded by SpiffWorkflow, and fails when evaluated (as here)
        let source = node
            .children()
            .find(|c| is_bpmn(c, "messagePath") || is_bpmn(c, "formalExpression"))
            .and_then(nonempty_text)
            .unwrap_or_default();
        let what = format!("retrieval expression for message '{message_ref}'");
        let expression = self.expr(property_id, &what, &source)?;
        Ok((message_ref, expression))
    }
}

/// Correlation keys as SpiffArena writes them: inside a `bpmn:collaboration`.
fn collaboration_keys(collaboration: Node) -> Vec<CorrelationKeySpec> {
    bpmn_children(collaboration)
        .filter(|c| c.tag_name().name() == "correlationKey")
        .map(correlation_key)
        .collect()
}

fn correlation_key(node: Node) -> CorrelationKeySpec {
    CorrelationKeySpec {
        // SpiffArena's modeler names its key MainCorrelationKey; a key with neither name nor
        // id is taken to be that one.
        name: nonempty_attr(node, "name")
            .or_else(|| nonempty_attr(node, "id"))
            .unwrap_or_else(|| "MainCorrelationKey".to_string()),
        property_refs: node
            .children()
            .filter(|c| is_bpmn(c, "correlationPropertyRef"))
            .filter_map(nonempty_text)
            .collect(),
    }
}
