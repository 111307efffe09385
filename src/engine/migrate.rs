//! Whether an instance can move to another version of its model (SpiffArena's "migrate"):
//! every live task's element must exist in the target with the same kind, and an element
//! waiting for a message must wait for the same message there, so the instance's waits,
//! pending calls and stored receives mean the same thing after the move.

use super::InstanceState;
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
    state
        .live_tasks()
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
    for task in state.live_tasks() {
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
