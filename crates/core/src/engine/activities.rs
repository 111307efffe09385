//! Tasks once they wait (what they do when a token reaches them is their behaviour, see
//! `behaviours::tasks`): a person completes a user or manual task; the connector's answers
//! move a service task on, and its failure is thrown as an error. Also what the dispatcher
//! needs to make a service task's call (`service_call`).

use super::boundaries::Thrown;
use super::interpreter::{Interpreter, Outcome};
use super::{InstanceError, InstanceState, Map, ServiceCall, TaskState};
use crate::bpmn::{ElementKind, ElementSpec, ModelSpec, ServiceTaskSpec};
use crate::expr::{self, ErrorKind};
use serde_json::{json, Value};
use uuid::Uuid;

impl Interpreter<'_> {
    /// A person completed a waiting task: their answer is merged (top-level keys) into data.
    pub fn complete_human_task(&mut self, guid: Uuid, answer: Map) -> Outcome {
        self.current = Some(guid);
        self.record_completer(guid);
        self.data_mut().extend(answer);
        self.complete_activity(guid)?;
        self.run_until_waiting()
    }

    /// Who completed a human task, for `get_last_user_completing_task()` (only kept for
    /// models whose code asks).
    fn record_completer(&mut self, guid: Uuid) {
        let Some(user) = self.expr_context().env.user.clone() else {
            return;
        };
        if !self.model.uses_task_lookup {
            return;
        }
        let element = self.element_of(guid);
        let process = element
            .parent
            .clone()
            .unwrap_or_else(|| self.process.id.clone());
        self.state
            .internal
            .completed_by
            .entry(process)
            .or_default()
            .insert(element.id.clone(), user);
    }

    /// The proxy answered 202: the call is under way.
    pub fn service_accepted(&mut self, guid: Uuid) -> Outcome {
        self.set_state(guid, TaskState::Started);
        Ok(())
    }

    /// The result goes into the task's result variable (SpiffWorkflow's default name when the
    /// model names none); the task completes.
    pub fn service_succeeded(&mut self, guid: Uuid, result: Value) -> Outcome {
        self.current = Some(guid);
        let element = self.element_of(guid);
        if let ElementKind::ServiceTask(spec) = &element.kind {
            let variable = spec
                .result_variable
                .clone()
                .unwrap_or_else(|| default_result_variable(&element.id));
            self.data_mut().insert(variable, result);
        }
        self.complete_activity(guid)?;
        self.run_until_waiting()
    }

    /// The call failed for good: the task goes ERROR and the error is thrown from it.
    pub fn service_failed(&mut self, guid: Uuid, error_code: String, message: String) -> Outcome {
        self.current = Some(guid);
        let element_id = self.task(guid).element_id.clone();
        let task = self.task_mut(guid);
        task.state = TaskState::Error;
        task.data = Some(json!({"error_code": error_code, "message": message}));
        let scope = task.scope;
        let thrown = Thrown {
            code: Some(error_code),
            message,
            payload: None,
        };
        self.throw_error(Some(guid), scope, &element_id, thrown)?;
        self.run_until_waiting()
    }
}

/// `error_code` of a `service_call` that found no Python to evaluate its parameters: not the
/// model's fault; the call is due again later.
pub const SCRIPTS_UNAVAILABLE: &str = "scripts_unavailable";

/// For the dispatcher: operator id, evaluated parameters, result variable, retry config.
/// A parameter expression that fails, or a `required="true"` parameter that evaluates to
/// None, is an `InstanceError` naming the parameter (pass it to `fail`).
pub fn service_call(
    model: &ModelSpec,
    state: &InstanceState,
    task_guid: Uuid,
    cx: &expr::Context,
) -> Result<ServiceCall, InstanceError> {
    let task = state
        .task(task_guid)
        .ok_or_else(|| instance_error("", format!("task {task_guid} does not exist")))?;
    let element = model
        .process(&state.process_id)
        .and_then(|p| p.elements.get(&task.element_id))
        .ok_or_else(|| {
            instance_error(&task.element_id, "the task's element is not in the model")
        })?;
    let ElementKind::ServiceTask(spec) = &element.kind else {
        let message = format!("{} is not a service task", element.id);
        return Err(instance_error(&element.id, message));
    };
    Ok(ServiceCall {
        operator_id: spec.operator_id.clone(),
        params: service_parameters(
            element,
            spec,
            state.data_of(state.data_owner(Some(task_guid))),
            cx,
        )?,
        result_variable: spec.result_variable.clone(),
        retries: spec.retries,
        backoff_base: spec.backoff_base,
    })
}

fn service_parameters(
    element: &ElementSpec,
    spec: &ServiceTaskSpec,
    data: &Map,
    cx: &expr::Context,
) -> Result<Map, InstanceError> {
    let mut params = Map::new();
    for parameter in &spec.parameters {
        let value = match &parameter.value {
            Some(expression) => expression.eval(data, cx).map_err(|e| InstanceError {
                element_id: element.id.clone(),
                message: format!("{e} (in parameter '{}')", parameter.id),
                error_code: Some(
                    match e.kind {
                        ErrorKind::Unavailable => SCRIPTS_UNAVAILABLE,
                        _ => e.error_code().unwrap_or_default(),
                    }
                    .to_string(),
                )
                .filter(|code| !code.is_empty()),
                file: None,
            })?,
            None => Value::Null,
        };
        if parameter.required && value.is_null() {
            let message = format!("required parameter '{}' evaluated to None", parameter.id);
            return Err(instance_error(&element.id, message));
        }
        params.insert(parameter.id.clone(), value);
    }
    Ok(params)
}

fn instance_error(element_id: &str, message: impl Into<String>) -> InstanceError {
    InstanceError {
        element_id: element_id.to_string(),
        message: message.into(),
        error_code: None,
        file: None,
    }
}

/// Where SpiffWorkflow's spiff service task keeps a result when its operator names no
/// `resultVariable`: `spiff__<task id with "-" as "_">_result`.
fn default_result_variable(element_id: &str) -> String {
    format!("spiff__{}_result", element_id.replace('-', "_"))
}
