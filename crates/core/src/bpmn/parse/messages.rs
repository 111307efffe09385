//! What message events and send/receive tasks share: the message they throw or catch.
//!
//! For an event the message is on its `bpmn:messageEventDefinition`; for a send/receive
//! task on the task itself. SpiffArena's extensions (payload, variable, correlations) may
//! be on either the definition or the element, so both are read.
use super::nodes::{bpmn_child, is_spiff, nonempty_attr, nonempty_text, spiff_ext};
use super::*;

impl Parser<'_> {
    /// `definition` is the event's messageEventDefinition, or the task itself.
    pub(super) fn message_throw(
        &self,
        element: Node,
        definition: Node,
        id: &str,
    ) -> Result<MessageThrowSpec, ModelError> {
        let definition = task_message_definition(element, definition);
        let message_ref = self.message_ref(definition, id)?;
        let source = spiff_ext(definition, "messagePayload")
            .chain(spiff_ext(element, "messagePayload"))
            .find_map(nonempty_text);
        let payload = match source {
            Some(source) => Some(self.expr(id, "messagePayload", &source)?),
            None => None,
        };
        Ok(MessageThrowSpec {
            message_ref,
            message_name: String::new(), // resolved by `build_model`
            payload,
        })
    }

    /// `definition` is the event's messageEventDefinition, or the task itself.
    pub(super) fn message_catch(
        &self,
        element: Node,
        definition: Node,
        id: &str,
    ) -> Result<MessageCatchSpec, ModelError> {
        let definition = task_message_definition(element, definition);
        let message_ref = self.message_ref(definition, id)?;
        let variable = spiff_ext(definition, "messageVariable")
            .chain(spiff_ext(element, "messageVariable"))
            .find_map(nonempty_text);
        // Definition and element are the same node for a task: read its correlations once.
        let correlation_nodes: Vec<Node> = if definition == element {
            spiff_ext(element, "processVariableCorrelation").collect()
        } else {
            spiff_ext(definition, "processVariableCorrelation")
                .chain(spiff_ext(element, "processVariableCorrelation"))
                .collect()
        };
        let process_correlations = correlation_nodes
            .into_iter()
            .map(|node| self.process_variable_correlation(node, id))
            .collect::<Result<_, _>>()?;
        Ok(MessageCatchSpec {
            message_ref,
            message_name: String::new(), // resolved by `build_model`
            variable,
            process_correlations,
        })
    }

    fn message_ref(&self, definition: Node, id: &str) -> Result<String, ModelError> {
        // SpiffWorkflow's parser loads it (a message without a name)
        nonempty_attr(definition, "messageRef").ok_or_else(|| {
            self.fault(
                id,
                "the message event has no messageRef: no message to wait for or send",
            )
        })
    }

    /// (property id, expression over task data). Each part is a child element, else an
    /// attribute of the same name.
    fn process_variable_correlation(
        &self,
        node: Node,
        id: &str,
    ) -> Result<(String, Expression), ModelError> {
        let part = |name: &str| {
            node.children()
                .find(|c| is_spiff(c, name))
                .and_then(nonempty_text)
                .or_else(|| nonempty_attr(node, name))
        };
        let Some(property) = part("propertyId") else {
            return Err(self.err(Some(id), "processVariableCorrelation without propertyId"));
        };
        let Some(source) = part("expression") else {
            return Err(self.err(
                Some(id),
                format!("processVariableCorrelation for '{property}' has no expression"),
            ));
        };
        let what = format!("processVariableCorrelation for '{property}'");
        let expression = self.expr(id, &what, &source)?;
        Ok((property, expression))
    }
}

/// For send/receive tasks the message is on the task; SpiffWorkflow also accepts a child
/// messageEventDefinition when the task has no messageRef. (Today `kind` refuses a task
/// with an event definition before this is reached, so the fallback never applies.)
fn task_message_definition<'a, 'i>(
    element: Node<'a, 'i>,
    definition: Node<'a, 'i>,
) -> Node<'a, 'i> {
    if definition == element && element.attribute("messageRef").is_none() {
        if let Some(child) = bpmn_child(element, "messageEventDefinition") {
            return child;
        }
    }
    definition
}
