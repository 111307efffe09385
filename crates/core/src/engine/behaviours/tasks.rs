//! Tasks: script and business rule tasks do their work at once and complete; user and manual
//! tasks wait for a person; service tasks ask the shell for a connector call and wait for its
//! result (what moves a waiting task on is in `activities`); a plain task (or a none throw
//! event) has nothing to do.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::{Callee, ElementKind};
use crate::engine::interpreter::{Interpreter, ModelFailure, Outcome};
use crate::engine::multi_instance::deep_merge;
use crate::engine::{Effect, TaskState};
use crate::expr::Script;

pub(super) struct Tasks;

impl ElementBehaviour for Tasks {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        match &task.element.kind {
            ElementKind::ScriptTask { script } => run_script(run, task, script.as_ref()),
            ElementKind::BusinessRuleTask { decision_id } => decide(run, task, decision_id),
            ElementKind::UserTask | ElementKind::ManualTask => {
                run.set_state(task.guid, TaskState::Waiting);
                run.start_boundaries(task.guid, task.element, task.scope)
            }
            ElementKind::ServiceTask(_) => {
                run.effects.push(Effect::CallService {
                    task_guid: task.guid,
                });
                run.start_boundaries(task.guid, task.element, task.scope)
            }
            ElementKind::PassThrough => run.complete_activity(task.guid),
            _ => other_family(task.element),
        }
    }
}

fn run_script<'m>(
    run: &mut Interpreter<'m>,
    task: ElementTask<'m>,
    script: Option<&Script>,
) -> Outcome {
    if let Some(script) = script {
        run.run_script(task.element, script, "script")?;
    }
    run.complete_activity(task.guid)
}

/// Evaluates the decision with what an expression of the task sees, and merges the result
/// into the task data (SpiffWorkflow's deep merge).
fn decide<'m>(run: &mut Interpreter<'m>, task: ElementTask<'m>, decision_id: &str) -> Outcome {
    let element = task.element;
    let Some(decision) = run.model.decisions.get(decision_id) else {
        return Err(run.callee_missing(element, Callee::Decision(decision_id.to_string())));
    };
    let cx = run.context_of_current_task();
    let evaluation = crate::dmn::evaluate(decision, &run.expression_data(), &cx).map_err(|e| {
        let what = format!("the decision '{decision_id}'");
        ModelFailure::of_expression(&element.id, e, &what)
    })?;
    let owner = run.state.data_owner(run.current);
    deep_merge(run.state.data_of_mut(owner), evaluation.result);
    run.complete_activity(task.guid)
}
