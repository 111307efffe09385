//! Tasks: script and business rule tasks do their work at once and complete; user and manual
//! tasks wait for a person; service tasks ask the shell for a connector call and wait for its
//! result; a plain task (or a none throw event) has nothing to do.

use super::{other_family, ElementBehaviour, ElementTask};
use crate::bpmn::ElementKind;
use crate::engine::interpreter::{Interpreter, Outcome};

pub(super) struct Tasks;

impl ElementBehaviour for Tasks {
    fn activate<'m>(&self, run: &mut Interpreter<'m>, task: ElementTask<'m>) -> Outcome {
        let ElementTask {
            guid,
            element,
            scope,
        } = task;
        match &element.kind {
            ElementKind::ScriptTask { script } => run.run_script_task(guid, element, script),
            ElementKind::BusinessRuleTask { decision_id } => {
                run.run_business_rule_task(guid, element, decision_id)
            }
            ElementKind::UserTask | ElementKind::ManualTask => {
                run.wait_for_person(guid, element, scope)
            }
            ElementKind::ServiceTask(_) => run.call_service(guid, element, scope),
            ElementKind::PassThrough => run.complete_activity(guid),
            _ => other_family(element),
        }
    }
}
