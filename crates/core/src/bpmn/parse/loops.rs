//! Loop characteristics of an activity: a standard loop (`standardLoopCharacteristics`) or a
//! multi-instance activity (`multiInstanceLoopCharacteristics`), in SpiffArena's dialect.
use super::nodes::{bpmn_child, bpmn_children, nonempty_attr, nonempty_text};
use super::*;

impl Parser<'_> {
    /// `standardLoopCharacteristics` with a `loopCondition` (Python), a `loopMaximum`, or
    /// both; with neither it would never end, and SpiffWorkflow refuses it too.
    pub(super) fn standard_loop(
        &self,
        node: Node,
        id: &str,
    ) -> Result<Option<StandardLoop>, ModelError> {
        let Some(characteristics) = bpmn_child(node, "standardLoopCharacteristics") else {
            return Ok(None);
        };
        let condition = match bpmn_child(characteristics, "loopCondition").and_then(nonempty_text) {
            Some(source) => Some(self.expr(id, "the loopCondition", &source)?),
            None => None,
        };
        let maximum = match nonempty_attr(characteristics, "loopMaximum") {
            Some(text) => Some(text.parse::<u32>().map_err(|_| {
                self.err(
                    Some(id),
                    format!("loopMaximum '{text}' is not a whole number"),
                )
            })?),
            None => None,
        };
        if condition.is_none() && maximum.is_none() {
            return Err(self.err(
                Some(id),
                "a standard loop needs a loopCondition or a loopMaximum",
            ));
        }
        Ok(Some(StandardLoop {
            condition,
            maximum,
            test_before: characteristics.attribute("testBefore").map(str::trim) == Some("true"),
        }))
    }

    /// `multiInstanceLoopCharacteristics`: exactly one of `loopCardinality` (a Python
    /// expression) and `loopDataInputRef` (a task data variable); the items are named by the
    /// `id` of `inputDataItem` / `outputDataItem`, as SpiffWorkflow names them.
    pub(super) fn multi_instance(
        &self,
        node: Node,
        id: &str,
    ) -> Result<Option<MultiInstance>, ModelError> {
        let Some(characteristics) = bpmn_child(node, "multiInstanceLoopCharacteristics") else {
            return Ok(None);
        };
        if bpmn_child(node, "standardLoopCharacteristics").is_some() {
            return Err(self.err(
                Some(id),
                "an activity has either standard or multi-instance loop characteristics, not both",
            ));
        }
        let text_of = |name: &str| bpmn_child(characteristics, name).and_then(nonempty_text);
        let items = match (text_of("loopCardinality"), text_of("loopDataInputRef")) {
            (Some(cardinality), None) => {
                MultiItems::Cardinality(self.expr(id, "the loopCardinality", &cardinality)?)
            }
            (None, Some(input)) => MultiItems::Collection(input),
            (Some(_), Some(_)) => {
                return Err(self.err(
                    Some(id),
                    "a multi-instance activity must specify exactly one of loopCardinality and loopDataInputRef",
                ))
            }
            (None, None) => {
                return Err(self.err(
                    Some(id),
                    "a multi-instance activity must specify a loopCardinality or a loopDataInputRef",
                ))
            }
        };
        let item_id = |name: &str| {
            bpmn_children(characteristics)
                .find(|c| c.tag_name().name() == name)
                .and_then(|item| nonempty_attr(item, "id"))
        };
        let completion_condition = match text_of("completionCondition") {
            Some(source) => Some(self.expr(id, "the completionCondition", &source)?),
            None => None,
        };
        Ok(Some(MultiInstance {
            sequential: characteristics.attribute("isSequential").map(str::trim) == Some("true"),
            items,
            output: text_of("loopDataOutputRef"),
            input_item: item_id("inputDataItem"),
            output_item: item_id("outputDataItem"),
            completion_condition,
            scripts_on_instances: characteristics
                .attributes()
                .any(|a| a.name() == "scriptsOnInstances" && a.value().trim() == "true"),
        }))
    }
}
