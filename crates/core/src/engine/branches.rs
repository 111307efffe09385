//! The paths a non-interrupting boundary event starts work on their own copy of the task
//! data, as in SpiffWorkflow, where every task has its own data, inherited from its parent: a
//! boundary event's data is the data its activity was reached with, and what its path writes
//! does not reach the activity's path. The paths' data come together as SpiffWorkflow's do
//! when its process ends: merged in the order the paths ended, the last on top (see
//! `end_finished_branches`). Merging is SpiffWorkflow's DeepMerge: objects key by key, lists
//! gain the items they lack, other values are replaced.

use super::interpreter::Interpreter;
use super::Map;
use crate::bpmn::ElementSpec;
use serde_json::Value;
use uuid::Uuid;

impl Interpreter<'_> {
    /// The activity `attached` starts waiting with non-interrupting boundaries: the data it
    /// was reached with is kept for their branches.
    pub fn keep_branch_origin(&mut self, attached: Uuid, element: &ElementSpec) {
        let has_branches = element
            .boundaries
            .iter()
            .any(|id| self.element(id).is_non_interrupting_boundary());
        if has_branches {
            let origin = self.data_of_task(attached).clone();
            self.state.internal.branch_origins.insert(attached, origin);
        }
    }

    /// A non-interrupting boundary `guid` of `attached` is armed (or an escalation boundary
    /// catches): it works on its own copy of the data `attached` was reached with.
    pub fn open_branch(&mut self, guid: Uuid, attached: Uuid) {
        let origin = match self.state.internal.branch_origins.get(&attached) {
            Some(origin) => origin.clone(),
            None => self.data_of_task(attached).clone(),
        };
        let internal = &mut self.state.internal;
        internal.local_data.insert(guid, origin);
        internal.branch_of.insert(guid, guid);
    }

    /// The boundary `guid` fired: its branch runs until no task of it is live, then merges
    /// into the data of `attached`'s path.
    pub fn start_branch(&mut self, guid: Uuid, attached: Uuid) {
        if !self.state.internal.local_data.contains_key(&guid) {
            self.open_branch(guid, attached);
        }
        let target = self.state.data_owner(Some(attached));
        self.state.internal.branches.insert(guid, target);
    }

    /// The branch a token leaving the current task runs on.
    pub fn current_branch(&self) -> Option<Uuid> {
        let current = self.current?;
        self.state.internal.branch_of.get(&current).copied()
    }

    /// A task created for a token of `branch` runs on it.
    pub fn join_branch(&mut self, guid: Uuid, branch: Option<Uuid>) {
        if let Some(branch) = branch {
            self.state.internal.branch_of.insert(guid, branch);
        }
    }

    /// Forget the branch bookkeeping of a task that is cancelled.
    pub fn leave_branch(&mut self, guid: Uuid) {
        self.state.internal.branch_of.remove(&guid);
        self.state.internal.branch_origins.remove(&guid);
    }

    /// Merge the paths that ended into the data of the path they came from, in the order
    /// they ended, as SpiffWorkflow merges the data of every path when its process ends
    /// (DeepMerge, the path that ended last on top): a branch that ends while that path runs
    /// waits in `ended_branches` until that path ends; one that ends after it is merged over it.
    pub fn end_finished_branches(&mut self) {
        if self.state.internal.branches.is_empty() && self.state.internal.ended_branches.is_empty()
        {
            return;
        }
        let ended: Vec<(Uuid, Option<Uuid>)> = self
            .state
            .internal
            .branches
            .iter()
            .filter(|(branch, _)| !self.branch_runs(**branch))
            .map(|(branch, target)| (*branch, *target))
            .collect();
        for (branch, target) in ended {
            let internal = &mut self.state.internal;
            internal.branches.remove(&branch);
            internal.branch_of.retain(|_, b| *b != branch);
            let data = internal.local_data.remove(&branch).unwrap_or_default();
            let key = target.unwrap_or(Uuid::nil());
            let pending = internal.ended_branches.entry(key).or_default();
            deep_merge(pending, data);
            if !self.path_runs(target) {
                // that path ended before this branch: the branch's data goes over it
                let pending = self
                    .state
                    .internal
                    .ended_branches
                    .remove(&key)
                    .unwrap_or_default();
                deep_merge(self.state.data_of_mut(target), pending);
            }
        }
        let done: Vec<Uuid> = self
            .state
            .internal
            .ended_branches
            .keys()
            .copied()
            .filter(|key| !self.path_runs(Some(*key).filter(|k| !k.is_nil())))
            .collect();
        for key in done {
            // that path ended after these branches: its data goes over theirs
            let target = Some(key).filter(|k| !k.is_nil());
            let mut merged = self
                .state
                .internal
                .ended_branches
                .remove(&key)
                .unwrap_or_default();
            let own = std::mem::take(self.state.data_of_mut(target));
            deep_merge(&mut merged, own);
            *self.state.data_of_mut(target) = merged;
        }
    }

    /// Whether a task of `branch` is live.
    fn branch_runs(&self, branch: Uuid) -> bool {
        self.state.live_tasks().any(|task| {
            self.state.internal.branch_of.get(&task.guid) == Some(&branch)
                && !self.is_listener(task)
        })
    }

    /// Whether the path working on the data of `owner` (not a branch of it) has a live task.
    fn path_runs(&self, owner: Option<Uuid>) -> bool {
        self.state.live_tasks().any(|task| {
            !self.is_listener(task)
                && !self.state.internal.branch_of.contains_key(&task.guid)
                && self.state.data_owner(Some(task.guid)) == owner
        })
    }

    fn data_of_task(&self, guid: Uuid) -> &Map {
        self.state.data_of(self.state.data_owner(Some(guid)))
    }
}

/// SpiffWorkflow's DeepMerge of `from` into `into`.
pub fn deep_merge(into: &mut Map, from: Map) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(a)), Value::Object(b)) => deep_merge(a, b),
            (Some(Value::Array(a)), Value::Array(b)) => merge_lists(a, b),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// DeepMerge of lists: objects merge by position, other items are added when missing.
fn merge_lists(into: &mut Vec<Value>, from: Vec<Value>) {
    for (index, value) in from.into_iter().enumerate() {
        match (into.get_mut(index), value) {
            (Some(Value::Object(a)), Value::Object(b)) => deep_merge(a, b),
            (None, value @ Value::Object(_)) => into.push(value),
            (_, Value::Object(_)) => {}
            (_, value) => {
                if !into.contains(&value) {
                    into.push(value);
                }
            }
        }
    }
}
