//! Steps: creating and starting instances, applying events to them, and carrying out the
//! effects each step returns (messages sent and awaited, connector calls due or cancelled)
//! until every instance this unit touched waits or has ended.

use super::super::clock::{expr_context, step_context};
use super::super::{Error, Result};
use super::callees::{Callees, MAX_CALLEE_LOOKUPS};
use super::{Applied, OutgoingMessage, UnitOfWork, Unmatched, Work, MAX_STEPS};
use crate::bpmn::ModelSpec;
use crate::engine::{
    self, DataStoreContents, Effect, EngineError, Event, InstanceError, InstanceState, ServiceCall,
    TaskState,
};
use crate::expr::ScriptEnv;
use crate::services::ErrorCode;
use crate::store;
use crate::telemetry::traces::{self, KeyValue, SpanKind, SpanScope};
use anyhow::anyhow;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use uuid::Uuid;

/// What starts an instance: a caller (the API, a timer), a message or a signal (with its
/// payload).
pub(super) enum StartedBy {
    Caller,
    Message(String, Value),
    Signal(Value),
}

impl<'c> UnitOfWork<'c> {
    /// Creates an instance of a model's primary process and runs it (and whatever it starts)
    /// to its wait states.
    pub async fn start_instance(
        &mut self,
        process_model_identifier: &str,
        data: Map<String, Value>,
    ) -> Result<i64> {
        let id = self
            .create_instance(
                process_model_identifier,
                None,
                None,
                data,
                StartedBy::Caller,
            )
            .await?;
        self.run_queued().await?;
        Ok(id)
    }

    /// Creates an instance of a model's process from one of its start events (a timer's
    /// occurrence, a signal) and runs it to its wait states.
    pub async fn start_instance_at(
        &mut self,
        process_model_identifier: &str,
        process_id: &str,
        start_event_id: &str,
        data: Map<String, Value>,
    ) -> Result<i64> {
        let id = self
            .create_instance(
                process_model_identifier,
                Some(process_id),
                Some(start_event_id.to_string()),
                data,
                StartedBy::Caller,
            )
            .await?;
        self.run_queued().await?;
        Ok(id)
    }

    pub(super) async fn create_instance(
        &mut self,
        process_model_identifier: &str,
        process_id: Option<&str>,
        start_event_id: Option<String>,
        data: Map<String, Value>,
        started_by: StartedBy,
    ) -> Result<i64> {
        let model = store::models::find(&mut self.tx, process_model_identifier)
            .await?
            .ok_or_else(|| {
                Error::refused(
                    ErrorCode::ProcessModelNotFound,
                    format!("process model '{process_model_identifier}' does not exist"),
                )
            })?;
        let spec = self
            .cache
            .spec(&mut self.tx, &model.identifier, &model.version_sha)
            .await?;
        let process_id = process_id.unwrap_or(&spec.primary_process_id).to_string();
        let row = store::instances::insert(
            &mut self.tx,
            &model.identifier,
            &model.version_sha,
            &process_id,
            self.actor.as_deref(),
        )
        .await?;
        let id = row.id;
        let (message, signal) = match started_by {
            StartedBy::Caller => (None, None),
            StartedBy::Message(name, payload) => (Some((name, payload)), None),
            StartedBy::Signal(payload) => (None, Some(payload)),
        };
        let start = Event::Start {
            start_event_id,
            data,
            message,
            signal,
        };
        let env = self.script_env(id, &model.identifier, &spec).await?;
        let mut callees = Callees::default();
        let mut spec = spec;
        let (state, effects) = loop {
            if callees.pins.len() + callees.unavailable.len() > MAX_CALLEE_LOOKUPS {
                return Err(too_many_callees(id));
            }
            let stores = self.data_store_contents(&model.identifier, &spec).await?;
            match self
                .start_engine(
                    (id, &model.identifier),
                    spec.clone(),
                    process_id.clone(),
                    start.clone(),
                    env.clone(),
                    stores,
                )
                .await?
            {
                Err(EngineError::CalleeNeeded(callee)) => {
                    spec = self
                        .provide_callee(
                            &model.identifier,
                            &model.version_sha,
                            &mut callees,
                            &callee,
                        )
                        .await?;
                }
                Err(EngineError::Unavailable(why)) => return Err(Error::ScriptsUnavailable(why)),
                Err(other) => {
                    return Err(Error::refused(
                        ErrorCode::ProcessInstanceCannotStart,
                        other.to_string(),
                    ))
                }
                Ok(started) => break started,
            }
        };
        if !callees.pins.is_empty() {
            store::instances::set_callees(&mut self.tx, id, &json!(callees.pins)).await?;
        }
        self.insert_loaded(id, row, spec, callees, state);
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        Ok(id)
    }

    /// Applies a caller's event (task completion, callback) to an instance and runs on.
    /// A caller mistake (task not waiting, unknown task) is `Applied::Refused`, with nothing
    /// changed.
    pub async fn apply(&mut self, id: i64, event: Event) -> Result<Applied> {
        if !self.load(id).await? {
            return Err(super::super::instances::instance_not_found(id));
        }
        match self.step_engine(id, event).await? {
            Ok(effects) => {
                self.mark_stepped(id)?;
                self.queue.push_back(Work::Effects(id, effects));
                self.run_queued().await?;
                Ok(Applied::Stepped)
            }
            Err(EngineError::Unavailable(why)) => Err(Error::ScriptsUnavailable(why)),
            Err(refused) => Ok(Applied::Refused(refused)),
        }
    }

    /// Puts an instance in `error` from outside a step (a service call that cannot be made):
    /// its task goes ERROR and its waits and calls are closed.
    pub async fn fail_instance_at_task(
        &mut self,
        id: i64,
        task_guid: Uuid,
        error: InstanceError,
    ) -> Result<()> {
        if !self.load(id).await? {
            return Ok(());
        }
        let loaded = self.instances.get_mut(&id).expect("loaded above");
        let effects = engine::fail(&loaded.spec, &mut loaded.state, Some(task_guid), error);
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        self.run_queued().await
    }

    /// Puts a failed service task back to READY for its next attempt (no engine step: the
    /// task simply has not run yet).
    pub(super) fn reset_for_retry(&mut self, id: i64, task_guid: Uuid) {
        if let Some(loaded) = self.instances.get_mut(&id) {
            if let Some(task) = loaded.state.tasks.iter_mut().find(|t| t.guid == task_guid) {
                task.state = TaskState::Ready;
                let task = task.clone();
                let row = loaded.task_record(&task);
                loaded.remember(row);
                loaded.dirty = true;
            }
        }
    }

    /// Moves a held instance to another version of its model (the caller has checked that the
    /// version carries its live tasks); its later steps in this unit use that version.
    pub async fn move_to_version(
        &mut self,
        id: i64,
        version_sha: &str,
        spec: Arc<ModelSpec>,
    ) -> Result<()> {
        let updated_at = store::instances::set_model_version(&mut self.tx, id, version_sha).await?;
        // the processes it pinned from other models stay as they were
        let spec = match self.instances.get(&id) {
            Some(loaded) if !loaded.callees.pins.is_empty() => {
                let (model, callees) = (
                    loaded.process_model_identifier.clone(),
                    loaded.callees.clone(),
                );
                super::callees::linked_spec(&mut self.tx, self.cache, &model, version_sha, &callees)
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
    fn takes_events(&self, id: i64) -> bool {
        self.state(id).is_some_and(|state| {
            !state.status.is_final() && state.status != crate::engine::InstanceStatus::Suspended
        })
    }

    pub(super) fn mark_stepped(&mut self, id: i64) -> Result<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Error::Internal(anyhow!(
                "more than {MAX_STEPS} steps in one transaction: instances keep messaging each other"
            )));
        }
        if let Some(loaded) = self.instances.get_mut(&id) {
            loaded.dirty = true;
            let dirty: Vec<Value> = loaded
                .state
                .dirty_tasks()
                .map(|task| loaded.task_record(task))
                .collect();
            for row in dirty {
                loaded.remember(row);
            }
            // finished tasks are history: stored, no longer the engine's business
            loaded.state.prune_finished();
        }
        Ok(())
    }

    /// Runs queued steps and effects until every touched instance waits or has ended.
    pub async fn run_queued(&mut self) -> Result<()> {
        while let Some(work) = self.queue.pop_front() {
            match work {
                Work::Step(id, event) => {
                    if !self.load(id).await? {
                        continue;
                    }
                    let effects = self.step_engine(id, event).await?.map_err(|e| match e {
                        EngineError::Unavailable(why) => Error::ScriptsUnavailable(why),
                        other => anyhow!("instance {id} refused an internal event: {other}").into(),
                    })?;
                    self.mark_stepped(id)?;
                    self.queue.push_back(Work::Effects(id, effects));
                }
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
                    let still_waits = self.instances.get(&id).is_some_and(|loaded| {
                        loaded.state.task(task_guid).is_some_and(|task| {
                            let process = loaded.spec.process(&loaded.state.process_id);
                            process
                                .and_then(|p| p.element(&task.element_id))
                                .is_some_and(|element| {
                                    task.waits_for_message(element)
                                        && element.message_catch_named(&name).is_some()
                                })
                        })
                    });
                    let key = match key {
                        Some(key) => Some(key),
                        None => store::messages::receive_key(&mut self.tx, receive_id).await?,
                    };
                    if let (true, Some(key)) = (still_waits, key) {
                        self.match_buffer(id, task_guid, receive_id, &name, &key)
                            .await?;
                    }
                }
                Work::Signal(id, name, payload) => {
                    if !self.load(id).await? || !self.takes_events(id) {
                        continue;
                    }
                    if store::timers::take_signal_waits(&mut self.tx, id, &name).await? {
                        self.signal_deliveries.push((name.clone(), id));
                        self.queue
                            .push_front(Work::Step(id, Event::Signal { name, payload }));
                    }
                }
            }
        }
        Ok(())
    }

    async fn handle_effect(&mut self, id: i64, effect: Effect) -> Result<()> {
        match effect {
            Effect::SendMessage {
                task_guid,
                name,
                payload,
                ..
            } => {
                let values = self.correlation_values(&name, &payload).await?;
                let routed = self
                    .route_send(&name, &payload, &values, Unmatched::Buffer)
                    .await?;
                let sent = OutgoingMessage {
                    id: None,
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
                store::messages::cancel_receives_of_task(&mut self.tx, task_guid).await?;
            }
            Effect::CallService { task_guid } => {
                let traceparent = traces::current_traceparent();
                store::jobs::enqueue_connector_call(
                    &mut self.tx,
                    id,
                    task_guid,
                    None,
                    traceparent.as_deref(),
                )
                .await?;
            }
            Effect::CancelServiceCall { task_guid } => {
                store::jobs::cancel_for_task(&mut self.tx, task_guid).await?;
            }
            Effect::StartTimer {
                task_guid,
                element_id,
                due,
            } => {
                store::timers::insert(&mut self.tx, id, task_guid, &element_id, due).await?;
            }
            Effect::CancelTimer { task_guid } => {
                store::timers::delete_for_task(&mut self.tx, task_guid).await?;
            }
            Effect::WaitForSignal { task_guid, name } => {
                store::timers::wait_for_signal(&mut self.tx, id, task_guid, &name).await?;
            }
            Effect::CancelSignalWait { task_guid } => {
                store::timers::cancel_signal_wait(&mut self.tx, task_guid).await?;
            }
            Effect::ThrowSignal { name, payload, .. } => {
                self.broadcast_signal(Some(id), &name, &payload).await?;
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
        thrower: Option<i64>,
        name: &str,
        payload: &Value,
    ) -> Result<()> {
        let waiting =
            store::timers::instances_waiting_for_signal(&mut self.tx, name, thrower).await?;
        for instance in &waiting {
            let work = Work::Signal(*instance, name.to_string(), payload.clone());
            self.queue.push_back(work);
        }
        let starts = store::timers::signal_starts_for(&mut self.tx, name).await?;
        for (model, process_id, start_event_id) in starts {
            let id = self
                .create_instance(
                    &model,
                    Some(&process_id),
                    Some(start_event_id),
                    Map::new(),
                    StartedBy::Signal(payload.clone()),
                )
                .await?;
            self.signal_starts.push((name.to_string(), id));
        }
        Ok(())
    }

    /// Fires a claimed timer: locks its instance, takes the timer (gone: another worker fired
    /// it or a step cancelled it, and nothing happens) and steps the instance. Whether it fired.
    pub async fn fire_timer(&mut self, instance_id: i64, timer_id: i64) -> Result<bool> {
        // suspended after the claim: its timer is held now, and fires once it is resumed
        if !self.load(instance_id).await? || !self.takes_events(instance_id) {
            return Ok(false);
        }
        let Some(task_guid) = store::timers::take(&mut self.tx, timer_id).await? else {
            return Ok(false);
        };
        match self
            .apply(instance_id, Event::TimerFired { task_guid })
            .await?
        {
            Applied::Stepped => Ok(true),
            Applied::Refused(why) => {
                tracing::warn!(instance = instance_id, task = %task_guid, error = %why, "a due timer's task no longer waits for it; the timer is dropped");
                Ok(false)
            }
        }
    }

    /// What the dispatcher needs to call the connector for a task of a held instance: its
    /// parameters evaluated, off the async threads when they need Python. `None` when the
    /// instance is not held.
    pub async fn service_call(
        &mut self,
        id: i64,
        task_guid: Uuid,
    ) -> Result<Option<std::result::Result<ServiceCall, InstanceError>>> {
        let Some(loaded) = self.instances.get(&id) else {
            return Ok(None);
        };
        let (spec, model) = (loaded.spec.clone(), loaded.process_model_identifier.clone());
        let env = self.script_env(id, &model, &spec).await?;
        let cx = expr_context(self.cache).with_env(std::sync::Arc::new(env));
        let state = &self.instances[&id].state;
        if !spec.needs_python {
            return Ok(Some(engine::service_call(&spec, state, task_guid, &cx)));
        }
        let state = state.clone();
        off_async_threads(true, move || {
            engine::service_call(&spec, &state, task_guid, &cx)
        })
        .await
        .map(Some)
    }

    /// Where an instance's scripts run, for the script functions (nothing to build when its
    /// model runs no Python: the hot path of plain message models).
    async fn script_env(&mut self, id: i64, model: &str, spec: &ModelSpec) -> Result<ScriptEnv> {
        if !spec.needs_python {
            return Ok(ScriptEnv::default());
        }
        let site = self.cache.site();
        let mut env = ScriptEnv {
            process_instance_id: Some(id),
            process_model_identifier: Some(model.to_string()),
            user: self.actor.clone(),
            initiator: None,
            frontend_url: site.frontend_url.clone(),
            env_identifier: site.env_identifier.clone(),
            secrets: Default::default(),
        };
        if spec.uses_secrets {
            env.secrets = self.secret_values().await?;
        }
        if spec.uses_initiator {
            env.initiator = self.started_by(id).await?;
        }
        Ok(env)
    }

    /// `engine::start` of instance `id` of `model`, where its scripts may run (see
    /// [`off_async_threads`]), in an `engine step` span when traced.
    async fn start_engine(
        &self,
        (id, model): (i64, &str),
        spec: Arc<ModelSpec>,
        process_id: String,
        start: Event,
        env: ScriptEnv,
        stores: DataStoreContents,
    ) -> Result<std::result::Result<(InstanceState, Vec<Effect>), EngineError>> {
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, model, &start)
        });
        let mut context = step_context(self.cache, env).with_data_stores(stores);
        let started = off_async_threads(spec.needs_python, move || {
            engine::start(&spec, &process_id, start, &mut context)
        })
        .await;
        if let Ok(Err(refused)) = &started {
            span.fail(|| refused.to_string());
        }
        span.record(started)
    }

    /// `engine::step` on a held instance; a process it calls from another model is found,
    /// pinned and linked, and the step run again.
    async fn step_engine(
        &mut self,
        id: i64,
        event: Event,
    ) -> Result<std::result::Result<Vec<Effect>, EngineError>> {
        if !self.instances[&id].spec.calls_elsewhere {
            // it cannot ask for a process: no copy of the event to keep
            return self.step_engine_once(id, event).await;
        }
        for _ in 0..=MAX_CALLEE_LOOKUPS {
            let callee = match self.step_engine_once(id, event.clone()).await? {
                Err(EngineError::CalleeNeeded(callee)) => callee,
                other => return Ok(other),
            };
            let loaded = &self.instances[&id];
            let (model, version) = (
                loaded.process_model_identifier.clone(),
                loaded.model_version.clone(),
            );
            let mut callees = loaded.callees.clone();
            let spec = self
                .provide_callee(&model, &version, &mut callees, &callee)
                .await?;
            if callees.pins != self.instances[&id].callees.pins {
                store::instances::set_callees(&mut self.tx, id, &json!(callees.pins)).await?;
            }
            let loaded = self.instances.get_mut(&id).expect("held");
            loaded.spec = spec;
            loaded.callees = callees;
        }
        Err(too_many_callees(id))
    }

    /// `engine::step` on a held instance, in an `engine step` span when traced.
    async fn step_engine_once(
        &mut self,
        id: i64,
        event: Event,
    ) -> Result<std::result::Result<Vec<Effect>, EngineError>> {
        let (model, spec) = {
            let loaded = &self.instances[&id];
            (loaded.process_model_identifier.clone(), loaded.spec.clone())
        };
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, &model, &event)
        });
        let stepped = self.run_engine_step(id, &model, spec, event).await;
        if let Ok(Err(refused)) = &stepped {
            span.fail(|| refused.to_string());
        }
        span.record(stepped)
    }

    /// `engine::step` on a held instance, where its scripts may run (see
    /// [`off_async_threads`]).
    async fn run_engine_step(
        &mut self,
        id: i64,
        model: &str,
        spec: Arc<ModelSpec>,
        event: Event,
    ) -> Result<std::result::Result<Vec<Effect>, EngineError>> {
        let env = self.script_env(id, model, &spec).await?;
        let stores = self.data_store_contents(model, &spec).await?;
        let mut context = step_context(self.cache, env).with_data_stores(stores);
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        let spec = loaded.spec.clone();
        if !spec.needs_python {
            return Ok(engine::step(&spec, &mut loaded.state, event, &mut context));
        }
        let mut state = loaded.state.clone();
        let (state, result) = off_async_threads(true, move || {
            let result = engine::step(&spec, &mut state, event, &mut context);
            (state, result)
        })
        .await?;
        self.instances.get_mut(&id).expect("held").state = state;
        Ok(result)
    }
}

/// What an `engine step` span says: the instance, its model, the event and its message.
fn step_attributes(id: i64, model: &str, event: &Event) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("workflow.instance.id", id),
        KeyValue::new("workflow.process_model", model.to_string()),
        KeyValue::new("workflow.event", event.kind()),
    ];
    if let Some(name) = event.message_name() {
        attributes.push(KeyValue::new("workflow.message.name", name.to_string()));
    }
    attributes
}

/// Runs engine work inline when its model needs no Python (no thread hop on the hot path),
/// else on tokio's blocking threads: a script may take its whole time limit, and an async
/// thread that waited for it would hold up every other request it serves.
async fn off_async_threads<T: Send + 'static>(
    needs_python: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    if !needs_python {
        return Ok(work());
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Internal(anyhow!("an engine step's thread failed: {e}")))
}

fn too_many_callees(id: i64) -> Error {
    Error::Internal(anyhow!(
        "instance {id} asked for more than {MAX_CALLEE_LOOKUPS} called processes in one step"
    ))
}
