//! Tasks with something to read beyond the common attributes: script tasks and service
//! tasks (connector operator, parameters, retry policy). Send/receive tasks are in
//! `messages`; user, manual and plain tasks need nothing more.
use super::nodes::{bpmn_child, is_spiff, nonempty_attr, spiff_ext};
use super::*;
use crate::bpmn::CAMUNDA_NS;

/// Retry policy when the model says nothing: no retry; doubling delays if retries are set.
const DEFAULT_RETRIES: u32 = 0;
const DEFAULT_BACKOFF_BASE: f64 = 2.0;

impl Parser<'_> {
    /// A script task with a blank script does nothing (it is not refused).
    pub(super) fn script_task(&self, node: Node, id: &str) -> Result<ElementKind, ModelError> {
        Ok(ElementKind::ScriptTask {
            script: self.opt_script(id, "script", bpmn_child(node, "script"))?,
        })
    }

    /// The decision comes from `spiffworkflow:calledDecisionId` (SpiffArena's modeler) or
    /// Camunda's `decisionRef` attribute.
    pub(super) fn business_rule_task(
        &self,
        node: Node,
        id: &str,
    ) -> Result<ElementKind, ModelError> {
        let spiff = spiff_ext(node, "calledDecisionId")
            .filter_map(|n| n.text())
            .map(str::trim)
            .find(|t| !t.is_empty())
            .map(str::to_string);
        let camunda = node
            .attributes()
            .find(|a| a.name() == "decisionRef" && a.namespace() == Some(CAMUNDA_NS))
            .map(|a| a.value().trim().to_string())
            .filter(|v| !v.is_empty());
        let decision_id = spiff.or(camunda).ok_or_else(|| {
            self.err(
                Some(id),
                "a business rule task needs spiffworkflow:calledDecisionId (the decision it evaluates)",
            )
        })?;
        Ok(ElementKind::BusinessRuleTask { decision_id })
    }

    pub(super) fn service_task(&self, node: Node, id: &str) -> Result<ServiceTaskSpec, ModelError> {
        let Some(operator) = spiff_ext(node, "serviceTaskOperator").next() else {
            return Err(self.err(
                Some(id),
                "service task without spiffworkflow:serviceTaskOperator (choose a connector command)",
            ));
        };
        let operator_id = nonempty_attr(operator, "id")
            .ok_or_else(|| self.err(Some(id), "spiffworkflow:serviceTaskOperator without id"))?;
        let parameters = self.service_parameters(operator, id)?;
        let (retries, backoff_base) = self.retry_policy(operator, id)?;
        Ok(ServiceTaskSpec {
            operator_id,
            result_variable: nonempty_attr(operator, "resultVariable"),
            parameters,
            retries,
            backoff_base,
        })
    }

    /// Every `spiffworkflow:parameter` of every `spiffworkflow:parameters` block, in order.
    fn service_parameters(
        &self,
        operator: Node,
        id: &str,
    ) -> Result<Vec<ServiceParameter>, ModelError> {
        operator
            .children()
            .filter(|c| is_spiff(c, "parameters"))
            .flat_map(|block| block.children().filter(|c| is_spiff(c, "parameter")))
            .map(|parameter| self.service_parameter(parameter, id))
            .collect()
    }

    fn service_parameter(&self, node: Node, id: &str) -> Result<ServiceParameter, ModelError> {
        let parameter_id = nonempty_attr(node, "id")
            .ok_or_else(|| self.err(Some(id), "a spiffworkflow:parameter has no id"))?;
        // SpiffWorkflow evaluates a value given, even an empty one (which fails when it runs)
        let value = match node.attribute("value") {
            Some(source) => {
                let what = format!("parameter '{parameter_id}'");
                Some(self.expr(id, &what, source)?)
            }
            None => None,
        };
        Ok(ServiceParameter {
            type_name: nonempty_attr(node, "type"),
            required: node.attribute("required").map(str::trim) == Some("true"),
            value,
            id: parameter_id,
        })
    }

    /// (retries, backoff base) from `spiffworkflow:retry`.
    fn retry_policy(&self, operator: Node, id: &str) -> Result<(u32, f64), ModelError> {
        let Some(retry) = operator.children().find(|c| is_spiff(c, "retry")) else {
            return Ok((DEFAULT_RETRIES, DEFAULT_BACKOFF_BASE));
        };
        let retries = match nonempty_attr(retry, "retries") {
            Some(v) => v.parse::<u32>().map_err(|_| {
                self.err(
                    Some(id),
                    format!("retry retries=\"{v}\" is not a non-negative integer"),
                )
            })?,
            None => DEFAULT_RETRIES,
        };
        let backoff_base = match nonempty_attr(retry, "backoff_base") {
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite() && *b >= 0.0)
                .ok_or_else(|| {
                    self.err(
                        Some(id),
                        format!("retry backoff_base=\"{v}\" is not a non-negative number"),
                    )
                })?,
            None => DEFAULT_BACKOFF_BASE,
        };
        Ok((retries, backoff_base))
    }
}
