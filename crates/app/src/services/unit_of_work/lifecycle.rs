//! Operator commands on a held instance: suspend, resume, terminate. (A retry is an engine
//! event applied like any other: `Event::Retry`.)
//!
//! Suspension holds what the instance waits for instead of closing it: its receives leave
//! correlation, its timers and connector calls are passed by the workers. Resuming releases
//! them: timers and calls that came due meanwhile fire or are made at once, and each receive
//! looks in the buffer for a message that arrived meanwhile.

use super::super::Result;
use super::{Applied, UnitOfWork, Work};
use crate::engine;
use crate::ids::InstanceId;
use crate::store;
use std::collections::BTreeSet;

impl<'c> UnitOfWork<'c> {
    /// Suspends a held instance (the caller has loaded it).
    pub async fn suspend(&mut self, id: InstanceId) -> Result<Applied> {
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        if let Err(refused) = engine::suspend(&mut loaded.state) {
            return Ok(Applied::Refused(refused));
        }
        self.mark_stepped(id)?;
        store::messages::suspend_receives_of_instance(self.db_with_receives().await?, id).await?;
        store::timers::hold_of_instance(self.db().await?, id, true).await?;
        self.write_handed_calls().await?;
        store::jobs::hold_of_instance(self.db().await?, id, true).await?;
        Ok(Applied::Stepped)
    }

    /// Resumes a held, suspended instance and delivers what waited for it in the buffer.
    pub async fn resume(&mut self, id: InstanceId) -> Result<Applied> {
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        let spec = loaded.spec.clone();
        if let Err(refused) = engine::resume(&spec, &mut loaded.state) {
            return Ok(Applied::Refused(refused));
        }
        self.mark_stepped(id)?;
        store::timers::hold_of_instance(self.db().await?, id, false).await?;
        self.write_handed_calls().await?;
        store::jobs::hold_of_instance(self.db().await?, id, false).await?;
        let receives =
            store::messages::resume_receives_of_instance(self.db_with_receives().await?, id)
                .await?;
        // as a new receive does (`wait_for_message`): a send about to be buffered under one of
        // these names waits for this transaction, then finds the receive waiting
        let names: BTreeSet<&str> = receives.iter().map(|r| r.name.as_str()).collect();
        for name in names {
            store::messages::lock_name(self.db_without_new_rows(), name, false).await?;
        }
        for receive in receives {
            self.queue.push_back(Work::MatchBuffer {
                id,
                task_guid: receive.task_guid.0,
                receive_id: receive.id,
                name: receive.name,
                key: Some(receive.correlation_key),
            });
        }
        self.run_queued().await?;
        Ok(Applied::Stepped)
    }

    /// Terminates a held instance: every live task, timer, connector call and waiting receive
    /// is cancelled in this transaction.
    pub async fn terminate(&mut self, id: InstanceId) -> Result<Applied> {
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        let spec = loaded.spec.clone();
        match engine::terminate(&spec, &mut loaded.state) {
            Err(refused) => Ok(Applied::Refused(refused)),
            Ok(effects) => {
                self.mark_stepped(id)?;
                self.queue.push_back(Work::Effects(id, effects));
                self.run_queued().await?;
                Ok(Applied::Stepped)
            }
        }
    }

    /// Gives a held instance in error back the task that failed, which the engine no longer
    /// holds (finished tasks are stored, not kept in its state), so that `Event::Retry` can run
    /// it again. Nothing when the error names no element or no such task is stored.
    pub async fn restore_failed_task(&mut self, id: InstanceId) -> Result<()> {
        let loaded = self.instances.get(&id).expect("loaded by the caller");
        let Some(element_id) = loaded.state.error.as_ref().map(|e| e.element_id.clone()) else {
            return Ok(());
        };
        if element_id.is_empty() {
            return Ok(());
        }
        let Some(row) =
            store::instances::last_failed_task(self.db().await?, id, &element_id).await?
        else {
            return Ok(());
        };
        let task = engine::Task {
            guid: row.guid.0,
            element_id: row.element_id,
            element_type: row.element_type,
            name: row.name,
            state: engine::TaskState::Error,
            scope: row.scope.map(|scope| scope.0),
            data: row.data.map(|d| d.0),
            dirty: false,
        };
        let state = &mut self.instances.get_mut(&id).expect("held").state;
        if state.task(task.guid).is_none() {
            state.tasks.push(task);
        }
        Ok(())
    }

    /// Whether a held instance is suspended.
    pub fn is_suspended(&self, id: InstanceId) -> bool {
        self.state(id)
            .is_some_and(|state| state.status == engine::InstanceStatus::Suspended)
    }
}
