//! Steps: applying events to held instances (a caller's task completion or callback, a
//! timer firing, a failure from outside a step), and the bookkeeping of each step: the tasks
//! it changed, and the bound on steps in one transaction.

use super::super::{Error, Result};
use super::engine_runs::StepOutcome;
use super::{Applied, UnitOfWork, Work, MAX_STEPS};
use crate::bpmn::ModelSpec;
use crate::engine::{self, Event, InstanceError, TaskState};
use crate::ids::{InstanceId, TaskGuid};
use crate::store;
use anyhow::anyhow;
use std::sync::Arc;
use uuid::Uuid;

impl<'c> UnitOfWork<'c> {
    /// Applies a caller's event (task completion, callback) to an instance and runs on.
    /// A caller mistake (task not waiting, unknown task) is `Applied::Refused`, with nothing
    /// changed.
    pub async fn apply(&mut self, id: InstanceId, event: Event) -> Result<Applied> {
        if !self.load(id).await? {
            return Err(super::super::instances::instance_not_found(id));
        }
        match self.step_engine(id, event).await? {
            StepOutcome::Stepped(effects) => {
                self.mark_stepped(id)?;
                self.queue.push_back(Work::Effects(id, effects));
                self.run_queued().await?;
                Ok(Applied::Stepped)
            }
            StepOutcome::Refused(refused) => Ok(Applied::Refused(refused)),
        }
    }

    /// Puts an instance in `error` from outside a step (a service call that cannot be made):
    /// its task goes ERROR and its waits and calls are closed.
    pub async fn fail_instance_at_task(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
        error: InstanceError,
    ) -> Result<()> {
        if !self.load(id).await? {
            return Ok(());
        }
        let loaded = self.instances.get_mut(&id).expect("loaded above");
        let effects = engine::fail(&loaded.spec, &mut loaded.state, Some(task_guid.0), error);
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        self.run_queued().await
    }

    /// Puts a failed service task back to READY for its next attempt (no engine step: the
    /// task simply has not run yet).
    pub(super) fn reset_for_retry(&mut self, id: InstanceId, task_guid: Uuid) {
        if let Some(loaded) = self.instances.get_mut(&id) {
            if let Some(task) = loaded.state.tasks.iter_mut().find(|t| t.guid == task_guid) {
                task.state = TaskState::Ready;
                let task = task.clone();
                loaded.remember(task);
                loaded.dirty = true;
            }
        }
    }

    /// Moves a held instance to another version of its model (the caller has checked that the
    /// version carries its live tasks); its later steps in this unit use that version.
    pub async fn move_to_version(
        &mut self,
        id: InstanceId,
        version_sha: &str,
        spec: Arc<ModelSpec>,
    ) -> Result<()> {
        let updated_at =
            store::instances::set_model_version(self.db().await?, id, version_sha).await?;
        // the processes it pinned from other models stay as they were
        let spec = match self.instances.get(&id) {
            Some(loaded) if !loaded.callees.pins.is_empty() => {
                let (model, callees) = (
                    loaded.process_model_identifier.clone(),
                    loaded.callees.clone(),
                );
                let cache = self.cache;
                super::callees::linked_spec(
                    self.db_without_new_rows(),
                    cache,
                    &model,
                    version_sha,
                    &callees,
                )
                .await?
            }
            _ => spec,
        };
        if let Some(loaded) = self.instances.get_mut(&id) {
            loaded.model_version = version_sha.to_string();
            loaded.spec = spec;
            loaded.updated_at = updated_at;
        }
        Ok(())
    }

    /// Whether a held instance can step (not final, not suspended).
    pub(super) fn takes_events(&self, id: InstanceId) -> bool {
        self.state(id).is_some_and(|state| {
            !state.status.is_final() && state.status != crate::engine::InstanceStatus::Suspended
        })
    }

    pub(super) fn mark_stepped(&mut self, id: InstanceId) -> Result<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Error::Internal(anyhow!(
                "more than {MAX_STEPS} steps in one transaction: instances keep messaging each other"
            )));
        }
        if let Some(loaded) = self.instances.get_mut(&id) {
            loaded.dirty = true;
            // The changed tasks are written at the flush; finished ones are history from
            // then on, no longer the engine's business (moved out, not copied: a step may
            // have run thousands).
            let tasks = std::mem::take(&mut loaded.state.tasks);
            for task in tasks {
                match (task.dirty, task.state.is_live()) {
                    (true, true) => {
                        loaded.remember(task.clone());
                        loaded.state.tasks.push(task);
                    }
                    (true, false) => loaded.remember(task),
                    (false, true) => loaded.state.tasks.push(task),
                    (false, false) => {}
                }
            }
        }
        Ok(())
    }

    /// Fires a claimed timer: locks its instance, takes the timer (gone: another worker fired
    /// it or a step cancelled it, and nothing happens) and steps the instance. Whether it fired.
    pub async fn fire_timer(&mut self, instance_id: InstanceId, timer_id: i64) -> Result<bool> {
        // suspended after the claim: its timer is held now, and fires once it is resumed
        if !self.load(instance_id).await? || !self.takes_events(instance_id) {
            return Ok(false);
        }
        let Some(task_guid) = store::timers::take(self.db().await?, instance_id, timer_id).await?
        else {
            return Ok(false);
        };
        match self
            .apply(
                instance_id,
                Event::TimerFired {
                    task_guid: task_guid.0,
                },
            )
            .await?
        {
            Applied::Stepped => Ok(true),
            Applied::Refused(why) => {
                tracing::warn!(instance = instance_id.0, task = %task_guid, error = %why, "a due timer's task no longer waits for it; the timer is dropped");
                Ok(false)
            }
        }
    }
}
