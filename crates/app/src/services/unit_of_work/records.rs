//! The rows a use case reads or writes beside the instances, in the unit's transaction: the
//! message it is sending, the connector job and logs of a service task, the model's current
//! version. Each method says what it does; none hands out the connection.

use super::super::Result;
use super::UnitOfWork;
use crate::ids::ModelId;
use crate::ids::{InstanceId, MessageId, TaskGuid};
use crate::store::{
    self,
    instances::{InstanceRow, TaskRow},
    messages::{MessageRow, NewMessage},
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

impl UnitOfWork<'_> {
    /// Locks a model's timer start for firing; None when it is gone or not due at `now`
    /// (another worker fired this occurrence, or a new version replaced it).
    pub async fn lock_due_start_timer(
        &mut self,
        identifier: &ModelId,
        start_event_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<store::timers::StartTimer>> {
        Ok(
            store::timers::lock_due_start(self.db().await?, identifier, start_event_id, now)
                .await?,
        )
    }

    /// Moves a fired timer start to its next occurrence, or ends it after its last.
    pub async fn advance_start_timer(
        &mut self,
        identifier: &ModelId,
        start_event_id: &str,
        next: Option<(DateTime<Utc>, Option<i32>)>,
    ) -> Result<()> {
        Ok(
            store::timers::advance_start(self.db().await?, identifier, start_event_id, next)
                .await?,
        )
    }

    /// Stores a message that carries an idempotency uuid; `None` when the uuid is taken (the
    /// transaction that took it has committed once this returns).
    pub async fn claim_message_uuid(
        &mut self,
        message: &NewMessage<'_>,
    ) -> Result<Option<MessageId>> {
        Ok(store::messages::insert(self.db_without_new_rows(), message).await?)
    }

    pub async fn message(&mut self, id: MessageId) -> Result<Option<MessageRow>> {
        Ok(match self.recorded_sends.get(&id).copied() {
            Some(shard) => store::messages::find_in(self.db_without_new_rows(), id, shard).await?,
            None => store::messages::find(self.db_without_new_rows(), id).await?,
        })
    }

    /// The message stored under `uuid`, and whether its payload equals `payload`.
    pub async fn message_by_uuid(
        &mut self,
        uuid: Uuid,
        payload: &Value,
    ) -> Result<Option<(MessageRow, bool)>> {
        Ok(store::messages::find_by_uuid(self.db_without_new_rows(), uuid, payload).await?)
    }

    /// An instance's row as stored, without locking it (for answers that step nothing).
    pub async fn stored_instance(&mut self, id: InstanceId) -> Result<Option<InstanceRow>> {
        Ok(store::instances::find(self.db().await?, id).await?)
    }

    /// A task of an instance as stored, finished ones included (the engine holds live ones).
    pub async fn stored_task(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
    ) -> Result<Option<TaskRow>> {
        Ok(store::instances::task(self.db().await?, id, task_guid).await?)
    }

    /// The version a model's new instances start on; `None` when the model does not exist.
    pub async fn current_version(&mut self, model: &ModelId) -> Result<Option<String>> {
        let row = store::models::find(self.db_without_new_rows(), model).await?;
        Ok(row.map(|row| row.version_sha))
    }

    /// The task's connector call is no longer due (done, failed, or waiting for a callback):
    /// its job is deleted when the unit writes its instances back.
    pub fn drop_connector_job(&mut self, id: InstanceId, task_guid: TaskGuid) {
        if !self.done_jobs.contains(&(id, task_guid)) {
            self.done_jobs.push((id, task_guid));
        }
    }

    /// Deletes now the job of a task this unit was done with, before a call of the task is
    /// recorded again: the new call must not go with the old job.
    pub(super) async fn delete_done_job(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
    ) -> Result<()> {
        if let Some(at) = self
            .done_jobs
            .iter()
            .position(|done| *done == (id, task_guid))
        {
            self.done_jobs.remove(at);
            self.write_handed_calls().await?;
            store::jobs::cancel_for_task(self.db().await?, id, task_guid).await?;
        }
        Ok(())
    }

    /// A leased connector call of a suspended instance waits for the resume.
    pub async fn requeue_connector_job(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
    ) -> Result<()> {
        self.write_handed_calls().await?;
        Ok(store::jobs::requeue(self.db().await?, id, task_guid).await?)
    }

    pub async fn record_connector_logs(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
        logs: &[String],
    ) -> Result<()> {
        Ok(store::connector_logs::insert(self.db().await?, id, task_guid, logs).await?)
    }

    /// Every secret's value, for the steps of a model whose code calls `get_secret`.
    pub(super) async fn secret_values(
        &mut self,
    ) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(
            super::super::secrets::all_values(self.db_without_new_rows())
                .await?
                .into_map(),
        )
    }

    /// Who started an instance (a token subject), for `get_process_initiator_user()`.
    pub(super) async fn started_by(&mut self, id: InstanceId) -> Result<Option<String>> {
        Ok(store::instances::started_by(self.db().await?, id).await?)
    }

    /// Attempts of a service task that have failed and were retried.
    pub async fn retries_attempted(&mut self, id: InstanceId, task_guid: TaskGuid) -> Result<i32> {
        Ok(store::instances::retries_attempted(self.db().await?, id, task_guid).await?)
    }

    /// Counts a retry of a service task, puts the task back to READY and makes its call due
    /// again after `delay`; returns when.
    pub async fn schedule_retry(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
        delay: Duration,
    ) -> Result<DateTime<Utc>> {
        self.delete_done_job(id, task_guid).await?;
        let retry_at =
            store::instances::schedule_retry(self.db().await?, id, task_guid, delay).await?;
        // not made now, even if a step of this unit scheduled it
        self.write_handed_calls().await?;
        self.handed_calls
            .retain(|(_, job)| job.task_guid() != task_guid);
        let traceparent = crate::telemetry::traces::current_traceparent();
        store::jobs::enqueue_connector_call(
            self.db().await?,
            id,
            task_guid,
            Some(retry_at),
            traceparent.as_deref(),
        )
        .await?;
        self.reset_for_retry(id, task_guid.0);
        Ok(retry_at)
    }
}
