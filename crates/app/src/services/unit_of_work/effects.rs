//! Effects: the work queue run until every instance this unit touched waits or has ended,
//! and what each effect of a step does (messages sent and awaited, connector calls due or
//! cancelled, timers, signals, data store writes).

use super::super::Result;
use super::engine_runs::StepOutcome;
use super::starts::StartedBy;
use super::{HandedJob, OutgoingMessage, UnitOfWork, Unmatched, Work};
use crate::correlation::canonical_key;
use crate::engine::{Effect, Event};
use crate::ids::{InstanceId, MessageId, TaskGuid};
use crate::store;
use crate::telemetry::traces;
use anyhow::anyhow;
use serde_json::{Map, Value};
use uuid::Uuid;

impl<'c> UnitOfWork<'c> {
    /// Runs queued steps and effects until every touched instance waits or has ended.
    pub async fn run_queued(&mut self) -> Result<()> {
        while let Some(work) = self.queue.pop_front() {
            match work {
                Work::Step(id, event) => self.step_queued(id, event).await?,
                Work::Effects(id, effects) => {
                    for effect in effects {
                        self.handle_effect(id, effect).await?;
                    }
                }
                Work::MatchBuffer {
                    id,
                    task_guid,
                    receive_id,
                    name,
                    key,
                } => {
                    self.match_buffer_if_waiting(id, task_guid, receive_id, &name, key)
                        .await?
                }
                Work::Signal(id, name, payload) => self.deliver_signal(id, name, payload).await?,
            }
        }
        Ok(())
    }

    /// Steps an instance with an event of this unit's own (a message delivered, a signal):
    /// the engine refusing it is an internal error.
    async fn step_queued(&mut self, id: InstanceId, event: Event) -> Result<()> {
        if !self.load(id).await? {
            return Ok(());
        }
        let effects = match self.step_engine(id, event).await? {
            StepOutcome::Stepped(effects) => effects,
            StepOutcome::Refused(refused) => {
                return Err(anyhow!("instance {id} refused an internal event: {refused}").into())
            }
        };
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        Ok(())
    }

    /// Looks in the buffer for a message for a receive of a task, if the task still waits for
    /// it (its correlation key read now when not given).
    async fn match_buffer_if_waiting(
        &mut self,
        id: InstanceId,
        task_guid: Uuid,
        receive_id: MessageId,
        name: &str,
        key: Option<String>,
    ) -> Result<()> {
        let still_waits = self.instances.get(&id).is_some_and(|loaded| {
            loaded.state.task(task_guid).is_some_and(|task| {
                let process = loaded.spec.process(&loaded.state.process_id);
                process
                    .and_then(|p| p.element(&task.element_id))
                    .is_some_and(|element| {
                        task.waits_for_message(element)
                            && element.message_catch_named(name).is_some()
                    })
            })
        });
        let key = match key {
            Some(key) => Some(key),
            None => {
                store::messages::receive_key(self.db_without_new_rows(), id, receive_id).await?
            }
        };
        if let (true, Some(key)) = (still_waits, key) {
            self.match_buffer(id, task_guid, receive_id, name, &key)
                .await?;
        }
        Ok(())
    }

    /// Delivers a signal to an instance that waited for it when it was thrown, if it still
    /// does (its waits taken under its lock, so exactly once).
    async fn deliver_signal(&mut self, id: InstanceId, name: String, payload: Value) -> Result<()> {
        if !self.load(id).await? || !self.takes_events(id) {
            return Ok(());
        }
        if store::timers::take_signal_waits(self.db().await?, id, &name).await? {
            self.signal_deliveries.push((name.clone(), id));
            self.queue
                .push_front(Work::Step(id, Event::Signal { name, payload }));
        }
        Ok(())
    }

    async fn handle_effect(&mut self, id: InstanceId, effect: Effect) -> Result<()> {
        match effect {
            Effect::SendMessage {
                task_guid,
                name,
                payload,
                ..
            } => {
                // a message an instance throws goes out with the values it has (the API
                // refuses a payload lacking one; an instance is not refused)
                let (values, _) = self.correlation_values(&name, &payload).await?;
                let bucket = store::shards::bucket_of_message(&canonical_key(&values), None);
                let routed = self
                    .route_send(&name, &payload, &values, bucket, Unmatched::Buffer)
                    .await?;
                let sent = OutgoingMessage {
                    id: None,
                    bucket,
                    name: &name,
                    payload: &payload,
                    sender: Some((id, task_guid)),
                    created_by: None,
                };
                self.record_send(&sent, &values, &routed, None).await?;
            }
            Effect::WaitForMessage {
                task_guid,
                name,
                expected,
            } => {
                self.wait_for_message(id, task_guid, &name, &expected)
                    .await?;
            }
            Effect::CancelMessageWait { task_guid } => {
                store::messages::cancel_receives_of_task(
                    self.db_with_receives().await?,
                    id,
                    TaskGuid(task_guid),
                )
                .await?;
            }
            Effect::CallService { task_guid } => {
                self.schedule_call(id, TaskGuid(task_guid)).await?;
            }
            Effect::CancelServiceCall { task_guid } => {
                self.write_handed_calls().await?;
                self.handed_calls
                    .retain(|(_, job)| job.task_guid().0 != task_guid);
                store::jobs::cancel_for_task(self.db().await?, id, TaskGuid(task_guid)).await?;
            }
            Effect::StartTimer {
                task_guid,
                element_id,
                due,
            } => {
                store::timers::insert(self.db().await?, id, TaskGuid(task_guid), &element_id, due)
                    .await?;
            }
            Effect::CancelTimer { task_guid } => {
                store::timers::delete_for_task(self.db().await?, id, TaskGuid(task_guid)).await?;
            }
            Effect::WaitForSignal { task_guid, name } => {
                store::timers::wait_for_signal(self.db().await?, id, TaskGuid(task_guid), &name)
                    .await?;
            }
            Effect::CancelSignalWait { task_guid } => {
                store::timers::cancel_signal_wait(self.db().await?, id, TaskGuid(task_guid))
                    .await?;
            }
            Effect::ThrowSignal { name, payload, .. } => {
                self.broadcast_signal(Some(id), &name, &payload).await?;
            }
            Effect::CloseWaitsOfInstance => {
                store::messages::cancel_receives_of_instance(self.db_with_receives().await?, id)
                    .await?;
                self.write_handed_calls().await?;
                self.handed_calls.retain(|(_, job)| job.instance() != id);
                store::jobs::cancel_for_instance(self.db().await?, id).await?;
                store::timers::delete_waits_of_instance(self.db().await?, id).await?;
            }
            Effect::WriteDataStore {
                store, kind, value, ..
            } => {
                self.write_data_store(id, &store, kind, value).await?;
            }
        }
        Ok(())
    }

    /// Queues a signal (with its payload) for every instance (but `thrower`) that waits for
    /// it, and starts an instance of every model with a signal start event of that name; they
    /// step in this unit of work.
    pub async fn broadcast_signal(
        &mut self,
        thrower: Option<InstanceId>,
        name: &str,
        payload: &Value,
    ) -> Result<()> {
        let waiting =
            store::timers::instances_waiting_for_signal(self.db().await?, name, thrower).await?;
        for instance in &waiting {
            let work = Work::Signal(*instance, name.to_string(), payload.clone());
            self.queue.push_back(work);
        }
        let starts = store::timers::signal_starts_for(self.db().await?, name).await?;
        for (model, process_id, start_event_id) in starts {
            let id = self
                .create_instance(
                    &model,
                    Some(&process_id),
                    Some(start_event_id),
                    Map::new(),
                    StartedBy::Signal(payload.clone()),
                    super::starts::NewRow::default(),
                )
                .await?;
            self.signal_starts.push((name.to_string(), id));
        }
        Ok(())
    }
}

impl UnitOfWork<'_> {
    /// Records a task's connector call, due now. While this replica's dispatcher has a slot
    /// free, the job is recorded leased and handed to it at the commit (no claim, no
    /// `NOTIFY`); otherwise every replica's dispatcher is woken to claim it.
    async fn schedule_call(&mut self, id: InstanceId, task_guid: TaskGuid) -> Result<()> {
        self.delete_done_job(id, task_guid).await?;
        let traceparent = traces::current_traceparent();
        let traceparent = traceparent.as_deref();
        match self.cache.reserve_call_slot() {
            Some(slot) => {
                // its job is written with the instances (a statement fewer); one of the same
                // task recorded earlier in this unit is moved by it (or never written)
                let call = store::jobs::LeasedCall::new(
                    id,
                    task_guid,
                    traceparent,
                    crate::services::service_tasks::LEASE,
                );
                self.handed_calls
                    .retain(|(_, handed)| handed.task_guid() != task_guid);
                self.handed_calls.push((slot, HandedJob::Unwritten(call)));
            }
            None => {
                self.write_handed_calls().await?;
                store::jobs::enqueue_connector_call(
                    self.db().await?,
                    id,
                    task_guid,
                    None,
                    traceparent,
                )
                .await?
            }
        }
        Ok(())
    }

    /// Writes now the jobs of the calls handed so far that are not written yet (one statement
    /// each, as they were before being kept for the flush), before another statement on jobs,
    /// which must find them as if each had been written when it was recorded.
    pub(super) async fn write_handed_calls(&mut self) -> Result<()> {
        // (their instances' rows first: a job refers to its instance)
        self.db().await?;
        for (_, handed) in &mut self.handed_calls {
            if let HandedJob::Unwritten(call) = handed {
                let job = store::jobs::enqueue_leased_call(
                    &mut self.tx,
                    call.process_instance_id,
                    call.task_guid,
                    call.traceparent.as_deref(),
                    crate::services::service_tasks::LEASE,
                )
                .await?;
                *handed = HandedJob::Written(job);
            }
        }
        Ok(())
    }
}
