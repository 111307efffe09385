//! Whether an instance can move to another version of its model (SpiffArena's "migrate"):
//! every live task's element must exist in the target with the same kind, and an element
//! waiting for a message must wait for the same message there, so the instance's waits,
//! pending calls and stored receives mean the same thing after the move. An instance in error
//! moves too, its failed task checked as a live one: a retry then runs it as the target has it.

use super::{InstanceState, Task, TaskState};
use crate::bpmn::ModelSpec;

/// A live task whose element the target version cannot carry, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationBlocker {
    pub element_id: String,
    pub reason: String,
}

/// Every reason `state` cannot step against `target`; empty when it can.
pub fn migration_blockers(state: &InstanceState, target: &ModelSpec) -> Vec<MigrationBlocker> {
    let Some(process) = target.process(&state.process_id) else {
        return vec![MigrationBlocker {
            element_id: state.process_id.clone(),
            reason: format!("the target version has no process '{}'", state.process_id),
        }];
    };
    tasks_to_carry(state)
        .filter_map(|task| {
            let blocked = |reason: String| {
                Some(MigrationBlocker {
                    element_id: task.element_id.clone(),
                    reason,
                })
            };
            let Some(element) = process.elements.get(&task.element_id) else {
                return blocked("the element is not in the target version".into());
            };
            if element.element_type != task.element_type {
                return blocked(format!(
                    "the element is a {} in the target version, not a {}",
                    element.element_type, task.element_type
                ));
            }
            None
        })
        .collect()
}

/// The tasks the target must have: the live ones, and a failed one that a retry runs again
/// (in the state of an instance in error only, put back by the caller).
fn tasks_to_carry(state: &InstanceState) -> impl Iterator<Item = &Task> {
    state
        .tasks
        .iter()
        .filter(|task| task.state.is_live() || task.state == TaskState::Error)
}

/// As [`migration_blockers`], also comparing the message each waiting element waits for in
/// the current and the target version.
pub fn migration_blockers_between(
    state: &InstanceState,
    current: &ModelSpec,
    target: &ModelSpec,
) -> Vec<MigrationBlocker> {
    let mut blockers = migration_blockers(state, target);
    let (Some(now), Some(then)) = (
        current.process(&state.process_id),
        target.process(&state.process_id),
    ) else {
        return blockers;
    };
    for task in tasks_to_carry(state) {
        let waits = |p: &crate::bpmn::ProcessSpec| {
            p.elements
                .get(&task.element_id)
                .and_then(|e| e.message_catch())
                .map(|m| m.message_name.clone())
        };
        let (before, after) = (waits(now), waits(then));
        let already = blockers.iter().any(|b| b.element_id == task.element_id);
        if before != after && !already {
            blockers.push(MigrationBlocker {
                element_id: task.element_id.clone(),
                reason: format!(
                    "the element waits for message {:?} here and {:?} in the target version",
                    before.unwrap_or_default(),
                    after.unwrap_or_default()
                ),
            });
        }
    }
    blockers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Event, Map};

    const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">"#;

    /// start -> `{waiting}` (a `{kind}`) -> end, in process `P`.
    fn model(waiting: &str, kind: &str) -> ModelSpec {
        let xml = format!(
            "{HEADER}<bpmn:message id=\"m\" name=\"ping\" /><bpmn:process id=\"P\" isExecutable=\"true\">\
             <bpmn:startEvent id=\"s\" /><bpmn:sequenceFlow id=\"f\" sourceRef=\"s\" targetRef=\"{waiting}\" />\
             {kind}<bpmn:sequenceFlow id=\"g\" sourceRef=\"{waiting}\" targetRef=\"e\" />\
             <bpmn:endEvent id=\"e\" /></bpmn:process></bpmn:definitions>"
        );
        crate::bpmn::build_model(&[("p.bpmn".into(), xml)], Some("P")).expect("model")
    }

    fn user_task(id: &str) -> ModelSpec {
        model(id, &format!("<bpmn:userTask id=\"{id}\" />"))
    }

    fn waiting_at(spec: &ModelSpec) -> InstanceState {
        let start = Event::Start {
            start_event_id: None,
            data: Map::new(),
            message: None,
            signal: None,
        };
        let mut context = crate::engine::StepContext::new(
            chrono::DateTime::UNIX_EPOCH,
            crate::engine::TaskIds::from_seed(uuid::Uuid::nil()),
            std::sync::Arc::new(crate::engine::context::NoScripts),
        );
        crate::engine::start(spec, "P", start, &mut context)
            .expect("started")
            .0
    }

    #[test]
    fn a_target_with_the_same_live_elements_carries_the_instance() {
        let v1 = user_task("approve");
        let state = waiting_at(&v1);
        assert!(migration_blockers_between(&state, &v1, &user_task("approve")).is_empty());
    }

    #[test]
    fn a_missing_or_changed_element_blocks_the_move() {
        let v1 = user_task("approve");
        let state = waiting_at(&v1);
        let renamed = migration_blockers_between(&state, &v1, &user_task("approve2"));
        assert_eq!(renamed.len(), 1);
        assert_eq!(renamed[0].element_id, "approve");
        assert!(
            renamed[0].reason.contains("not in the target"),
            "{renamed:?}"
        );

        let manual = model("approve", "<bpmn:manualTask id=\"approve\" />");
        let changed = migration_blockers_between(&state, &v1, &manual);
        assert_eq!(changed.len(), 1);
        assert!(changed[0].reason.contains("manualTask"), "{changed:?}");

        let other_process = crate::bpmn::build_model(
            &[(
                "q.bpmn".into(),
                format!("{HEADER}<bpmn:process id=\"Q\" isExecutable=\"true\"><bpmn:startEvent id=\"s\" /></bpmn:process></bpmn:definitions>"),
            )],
            Some("Q"),
        )
        .expect("model");
        let gone = migration_blockers_between(&state, &v1, &other_process);
        assert_eq!(gone[0].element_id, "P");
    }

    /// An instance in error: its failed task (put back in the state) must be in the target.
    #[test]
    fn the_failed_task_of_an_instance_in_error_must_be_in_the_target() {
        let v1 = user_task("approve");
        let mut state = waiting_at(&v1);
        for task in state.tasks.iter_mut().filter(|t| t.element_id == "approve") {
            task.state = TaskState::Error;
        }
        assert!(migration_blockers_between(&state, &v1, &user_task("approve")).is_empty());
        let renamed = migration_blockers_between(&state, &v1, &user_task("approve2"));
        assert_eq!(renamed.len(), 1, "{renamed:?}");
        assert_eq!(renamed[0].element_id, "approve");
    }
}
