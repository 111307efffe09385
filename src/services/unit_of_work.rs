//! One transaction in which any number of process instances step: the instance a request
//! is about, and every instance its messages start or resume. Instances are locked
//! (`FOR UPDATE`) when first touched and written back once, at commit.
//!
//! Work is a FIFO queue rather than recursion: a step's effects may start or resume other
//! instances, whose effects may come back to the first one; the queue runs them in order.

use super::clock::{expr_now, step_context};
use super::{Error, ModelCache, Result};
use crate::bpmn::ModelSpec;
use crate::correlation::{candidate_keys, canonical_key, CorrelationValues};
use crate::engine::{
    self, Effect, EngineError, Event, InstanceState, InstanceStatus, Task, TaskState,
};
use crate::store::{self, instances::InstanceRow, messages::NewMessage};
use anyhow::anyhow;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use uuid::Uuid;

/// More steps than this in one transaction means instances keep messaging each other.
const MAX_STEPS: usize = 1_000;

pub struct UnitOfWork<'c> {
    tx: Transaction<'static, Postgres>,
    cache: &'c ModelCache,
    instances: HashMap<i64, Loaded>,
    /// Load order, so instances are written back in the order they were locked.
    order: Vec<i64>,
    queue: VecDeque<Work>,
    steps: usize,
    /// Receives this unit has routed a message to; they are marked completed when the send
    /// is recorded (every writer of a receive holds its instance's lock, so none can take
    /// them meanwhile), and no other message of this unit may take them.
    claimed_receives: Vec<i64>,
}

struct Loaded {
    process_model_identifier: String,
    model_version: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    spec: Arc<ModelSpec>,
    state: InstanceState,
    /// Stepped since the last flush.
    dirty: bool,
    /// Tasks changed by the steps since the last flush (the engine's `dirty` flags only
    /// cover its last step), by guid, as rows to upsert.
    changed_tasks: Vec<Value>,
}

impl Loaded {
    /// Notes a task row to write at the next flush, in creation order (so the task list
    /// reads as the instance ran), the latest version of each task winning.
    fn remember(&mut self, row: Value) {
        let guid = row["guid"].clone();
        match self.changed_tasks.iter_mut().find(|r| r["guid"] == guid) {
            Some(entry) => *entry = row,
            None => self.changed_tasks.push(row),
        }
    }
}

enum Work {
    Step(i64, Event),
    Effects(i64, Vec<Effect>),
}

/// Where a sent message went.
#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    /// Completed the waiting receive of this instance.
    Delivered { instance_id: i64, receive_id: i64 },
    /// Started this instance through a Message Start Event.
    Started { instance_id: i64 },
    /// Kept `ready` for a receive that appears later.
    Buffered,
    /// Nothing waits for it and it may not be buffered. `cause` says why, for the caller.
    NotAccepted { cause: String },
}

/// A message being sent: from the API (with its stored row when it has an idempotency key)
/// or thrown by an instance's task.
pub struct OutgoingMessage<'a> {
    pub id: Option<i64>,
    pub name: &'a str,
    pub payload: &'a Value,
    /// The throwing instance and task.
    pub sender: Option<(i64, Uuid)>,
    pub created_by: Option<&'a str>,
}

/// What to do with a send that no receive and no start event takes.
#[derive(Debug, Clone, Copy)]
pub enum Unmatched {
    Reject,
    Buffer,
}

impl<'c> UnitOfWork<'c> {
    pub async fn begin(pool: &PgPool, cache: &'c ModelCache) -> Result<UnitOfWork<'c>> {
        Ok(UnitOfWork {
            tx: pool.begin().await?,
            cache,
            instances: HashMap::new(),
            order: Vec::new(),
            queue: VecDeque::new(),
            steps: 0,
            claimed_receives: Vec::new(),
        })
    }

    pub fn conn(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    /// Locks and loads an instance unless this unit of work already holds it.
    /// `Ok(false)` when it does not exist.
    pub async fn load(&mut self, id: i64) -> Result<bool> {
        if self.instances.contains_key(&id) {
            return Ok(true);
        }
        let Some(locked) = store::instances::lock(&mut self.tx, id).await? else {
            return Ok(false);
        };
        self.insert_locked(locked).await?;
        Ok(true)
    }

    /// Takes an instance this transaction has just locked into the unit.
    async fn insert_locked(&mut self, locked: store::instances::LockedInstance) -> Result<()> {
        let spec = self
            .cache
            .spec(
                &mut self.tx,
                &locked.row.process_model_identifier,
                &locked.row.model_version,
            )
            .await?;
        let state = state_from_rows(&locked.row, locked.live_tasks.0)?;
        self.insert_loaded(locked.row.id, locked.row, spec, state);
        Ok(())
    }

    fn insert_loaded(
        &mut self,
        id: i64,
        row: InstanceRow,
        spec: Arc<ModelSpec>,
        state: InstanceState,
    ) {
        self.order.push(id);
        self.instances.insert(
            id,
            Loaded {
                process_model_identifier: row.process_model_identifier,
                model_version: row.model_version,
                created_at: row.created_at,
                updated_at: row.updated_at,
                spec,
                state,
                dirty: false,
                changed_tasks: Vec::new(),
            },
        );
    }

    pub fn state(&self, id: i64) -> Option<&InstanceState> {
        self.instances.get(&id).map(|l| &l.state)
    }

    pub fn spec(&self, id: i64) -> Option<Arc<ModelSpec>> {
        self.instances.get(&id).map(|l| l.spec.clone())
    }

    /// Puts an instance in `error` from outside a step (a service call that cannot be made).
    pub async fn fail_task(
        &mut self,
        id: i64,
        task_guid: Uuid,
        error: engine::InstanceError,
    ) -> Result<()> {
        if !self.load(id).await? {
            return Ok(());
        }
        let loaded = self.instances.get_mut(&id).expect("loaded above");
        let effects = engine::fail(&loaded.spec, &mut loaded.state, Some(task_guid), error);
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        self.drain().await
    }

    /// Puts a failed service task back to READY for its next attempt (no engine step: the
    /// task simply has not run yet).
    pub fn reset_for_retry(&mut self, id: i64, task_guid: Uuid) {
        if let Some(loaded) = self.instances.get_mut(&id) {
            if let Some(task) = loaded.state.tasks.iter_mut().find(|t| t.guid == task_guid) {
                task.state = TaskState::Ready;
                let row = task_row_json(task);
                loaded.remember(row);
                loaded.dirty = true;
            }
        }
    }

    /// The model version an instance this unit holds steps against.
    pub fn model_version(&self, id: i64) -> Option<&str> {
        self.instances.get(&id).map(|l| l.model_version.as_str())
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
        if let Some(loaded) = self.instances.get_mut(&id) {
            loaded.model_version = version_sha.to_string();
            loaded.spec = spec;
            loaded.updated_at = updated_at;
        }
        Ok(())
    }

    /// The compiled model of a version (from the cache, or built from its stored files);
    /// `None` when the model has no such version.
    pub async fn version_spec(
        &mut self,
        process_model_identifier: &str,
        version_sha: &str,
    ) -> Result<Option<Arc<ModelSpec>>> {
        self.cache
            .version_spec(&mut self.tx, process_model_identifier, version_sha)
            .await
    }

    pub fn process_model_identifier(&self, id: i64) -> Option<&str> {
        self.instances
            .get(&id)
            .map(|l| l.process_model_identifier.as_str())
    }

    /// Creates an instance of a model's primary process and runs it (and whatever it starts)
    /// to its wait states.
    pub async fn start_instance(
        &mut self,
        process_model_identifier: &str,
        data: Map<String, Value>,
    ) -> Result<i64> {
        let id = self
            .create_instance(process_model_identifier, None, None, data, None)
            .await?;
        self.drain().await?;
        Ok(id)
    }

    async fn create_instance(
        &mut self,
        process_model_identifier: &str,
        process_id: Option<&str>,
        start_event_id: Option<String>,
        data: Map<String, Value>,
        message: Option<(String, Value)>,
    ) -> Result<i64> {
        let model = store::models::find(&mut self.tx, process_model_identifier)
            .await?
            .ok_or_else(|| {
                Error::not_found(
                    "process_model_not_found",
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
        )
        .await?;
        let id = row.id;
        let start = Event::Start {
            start_event_id,
            data,
            message,
        };
        let (state, effects) = engine::start(&spec, &process_id, start, &mut step_context())
            .map_err(|e| Error::bad_request("process_instance_cannot_start", e.to_string()))?;
        self.insert_loaded(id, row, spec, state);
        self.mark_stepped(id)?;
        self.queue.push_back(Work::Effects(id, effects));
        Ok(id)
    }

    /// Applies a caller's event (task completion, callback) to an instance and runs on.
    /// A caller mistake (task not waiting, unknown task) comes back as `Ok(Err(..))` with
    /// nothing changed.
    pub async fn apply(
        &mut self,
        id: i64,
        event: Event,
    ) -> Result<std::result::Result<(), EngineError>> {
        if !self.load(id).await? {
            return Err(super::instances::instance_not_found(id));
        }
        let loaded = self.instances.get_mut(&id).expect("loaded above");
        match engine::step(&loaded.spec, &mut loaded.state, event, &mut step_context()) {
            Ok(effects) => {
                self.mark_stepped(id)?;
                self.queue.push_back(Work::Effects(id, effects));
                self.drain().await?;
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn mark_stepped(&mut self, id: i64) -> Result<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Error::Internal(anyhow!(
                "more than {MAX_STEPS} steps in one transaction: instances keep messaging each other"
            )));
        }
        if let Some(loaded) = self.instances.get_mut(&id) {
            loaded.dirty = true;
            let dirty: Vec<Value> = loaded.state.dirty_tasks().map(task_row_json).collect();
            for row in dirty {
                loaded.remember(row);
            }
            // finished tasks are history: stored, no longer the engine's business
            loaded.state.prune_finished();
        }
        Ok(())
    }

    /// Runs queued steps and effects until every touched instance waits or has ended.
    pub async fn drain(&mut self) -> Result<()> {
        while let Some(work) = self.queue.pop_front() {
            match work {
                Work::Step(id, event) => {
                    if !self.load(id).await? {
                        continue;
                    }
                    let loaded = self.instances.get_mut(&id).expect("loaded above");
                    let effects =
                        engine::step(&loaded.spec, &mut loaded.state, event, &mut step_context())
                            .map_err(|e| anyhow!("instance {id} refused an internal event: {e}"))?;
                    self.mark_stepped(id)?;
                    self.queue.push_back(Work::Effects(id, effects));
                }
                Work::Effects(id, effects) => {
                    for effect in effects {
                        self.handle_effect(id, effect).await?;
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
                store::jobs::enqueue_connector_call(&mut self.tx, id, task_guid, None).await?;
            }
            Effect::CancelServiceCall { task_guid } => {
                store::jobs::cancel_for_task(&mut self.tx, task_guid).await?;
            }
        }
        Ok(())
    }

    /// Records a waiting receive; a buffered send that matches is delivered at once.
    async fn wait_for_message(
        &mut self,
        id: i64,
        task_guid: Uuid,
        name: &str,
        expected: &CorrelationValues,
    ) -> Result<()> {
        store::messages::lock_name(&mut self.tx, name, false).await?;
        let expected_json = json!(expected);
        let receive_id = store::messages::insert(
            &mut self.tx,
            &NewMessage {
                name,
                message_type: "receive",
                status: "ready",
                payload: None,
                correlation_keys: &expected_json,
                correlation_key: &canonical_key(expected),
                process_instance_id: Some(id),
                task_guid: Some(task_guid),
                message_instance_uuid: None,
                ttl_seconds: None,
                created_by: None,
            },
        )
        .await?
        .ok_or_else(|| anyhow!("message insert without uuid conflicted"))?;
        let buffered = store::messages::claim_buffered_send(
            &mut self.tx,
            name,
            &canonical_key(expected),
            receive_id,
            id,
        )
        .await?;
        if let Some(send) = buffered {
            store::messages::complete_receive(&mut self.tx, receive_id, send.id).await?;
            let payload = send.payload.map(|p| p.0).unwrap_or(Value::Null);
            self.queue.push_back(Work::Step(
                id,
                Event::MessageDelivered {
                    task_guid,
                    name: name.to_string(),
                    payload,
                },
            ));
        }
        Ok(())
    }

    /// Property id -> value of a payload, by the retrieval expressions every loaded model
    /// declares for this message name. A property whose expression fails is left out.
    pub async fn correlation_values(
        &mut self,
        name: &str,
        payload: &Value,
    ) -> Result<CorrelationValues> {
        let retrievals = store::models::retrievals_for(&mut self.tx, name).await?;
        let vars = match payload {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let mut values = CorrelationValues::new();
        for (property_id, source) in retrievals {
            if values.contains_key(&property_id) {
                continue;
            }
            let Some(expression) = self.cache.expression(&source) else {
                continue;
            };
            if let Ok(value) = expression.eval(&vars, &expr_now()) {
                if !value.is_null() {
                    values.insert(property_id, value);
                }
            }
        }
        Ok(values)
    }

    /// Delivers a send to the oldest matching receive, else starts the model that owns the
    /// name, else buffers or rejects it. Waits for a receiver that is busy in another
    /// transaction (its instance lock) instead of rejecting the message. The receiving
    /// instance runs on at the next [`UnitOfWork::drain`].
    pub async fn route_send(
        &mut self,
        name: &str,
        payload: &Value,
        values: &CorrelationValues,
        unmatched: Unmatched,
    ) -> Result<Routed> {
        let keys = candidate_keys(values);
        if let Some(routed) = self.deliver_to_receive(name, payload, &keys).await? {
            return Ok(routed);
        }
        if let Some(trigger) = store::models::trigger_for(&mut self.tx, name).await? {
            let instance_id = self
                .create_instance(
                    &trigger.process_model_identifier,
                    Some(&trigger.process_id),
                    Some(trigger.start_event_id),
                    Map::new(),
                    Some((name.to_string(), payload.clone())),
                )
                .await?;
            return Ok(Routed::Started { instance_id });
        }
        match unmatched {
            Unmatched::Reject => Ok(Routed::NotAccepted {
                cause: self.why_unmatched(name, values).await?,
            }),
            Unmatched::Buffer => {
                // A receive created concurrently has committed once we hold the lock.
                store::messages::lock_name(&mut self.tx, name, true).await?;
                if let Some(routed) = self.deliver_to_receive(name, payload, &keys).await? {
                    return Ok(routed);
                }
                Ok(Routed::Buffered)
            }
        }
    }

    async fn deliver_to_receive(
        &mut self,
        name: &str,
        payload: &Value,
        keys: &[String],
    ) -> Result<Option<Routed>> {
        loop {
            // The lookup locks the receive's instance: the lock every writer of a receive holds,
            // taken before its message rows on every path.
            let Some((receive, locked)) = store::messages::lock_oldest_waiting_receive(
                &mut self.tx,
                name,
                keys,
                &self.claimed_receives,
            )
            .await?
            else {
                return Ok(None);
            };
            if !self.instances.contains_key(&receive.process_instance_id) {
                self.insert_locked(locked).await?;
            }
            let waiting = self.state(receive.process_instance_id).is_some_and(|s| {
                !s.status.is_final()
                    && s.tasks.iter().any(|t| {
                        t.guid == receive.task_guid
                            && matches!(t.state, TaskState::Waiting | TaskState::Ready)
                    })
            });
            if !waiting {
                // The task stopped waiting without its receive being closed: close it now.
                store::messages::cancel_receives_of_task(&mut self.tx, receive.task_guid).await?;
                continue;
            }
            // The instance is locked and its task still waits: the receive is this message's.
            self.claimed_receives.push(receive.id);
            self.queue.push_back(Work::Step(
                receive.process_instance_id,
                Event::MessageDelivered {
                    task_guid: receive.task_guid,
                    name: name.to_string(),
                    payload: payload.clone(),
                },
            ));
            return Ok(Some(Routed::Delivered {
                instance_id: receive.process_instance_id,
                receive_id: receive.id,
            }));
        }
    }

    async fn why_unmatched(&mut self, name: &str, values: &CorrelationValues) -> Result<String> {
        let waiting = store::messages::count_waiting_receives(&mut self.tx, name).await?;
        Ok(if waiting == 0 {
            format!("no process instance waits for message '{name}' and no process model starts with it")
        } else {
            format!(
                "{waiting} process instance(s) wait for message '{name}', but none with the \
                 correlation values computed from the payload: {}",
                canonical_key(values)
            )
        })
    }

    /// Stores where a send went (and points the receive it completed at it); returns its id.
    pub async fn record_send(
        &mut self,
        sent: &OutgoingMessage<'_>,
        values: &CorrelationValues,
        routed: &Routed,
        ttl_seconds: Option<i64>,
    ) -> Result<i64> {
        let (status, target, receive_id, cause, ttl) = match routed {
            Routed::Delivered {
                instance_id,
                receive_id,
            } => (
                "completed",
                Some(*instance_id),
                Some(*receive_id),
                None,
                None,
            ),
            Routed::Started { instance_id } => ("completed", Some(*instance_id), None, None, None),
            Routed::Buffered => ("ready", None, None, None, ttl_seconds),
            Routed::NotAccepted { cause } => {
                ("not_accepted", None, None, Some(cause.as_str()), None)
            }
        };
        // a buffered send is found by any subset of its values (the empty one: by name)
        let buffer_keys: Vec<String> = match routed {
            Routed::Buffered => candidate_keys(values)
                .into_iter()
                .filter(|key| key != "{}")
                .collect(),
            _ => Vec::new(),
        };
        let (sender, task_guid) = match sent.sender {
            Some((instance, task)) => (Some(instance), Some(task)),
            None => (None, None),
        };
        Ok(store::messages::record_send(
            &mut self.tx,
            &store::messages::SendRecord {
                id: sent.id,
                name: sent.name,
                payload: sent.payload,
                status,
                correlation_keys: &json!(values),
                correlation_key: &canonical_key(values),
                // an engine-thrown message belongs to its sender; an API one to its target
                process_instance_id: sender.or(target),
                task_guid,
                receive_id,
                failure_cause: cause,
                ttl_seconds: ttl,
                created_by: sent.created_by,
                buffer_keys: &buffer_keys,
            },
        )
        .await?)
    }

    /// Writes every stepped instance and its changed tasks, then commits.
    pub async fn commit(mut self) -> Result<()> {
        self.flush().await?;
        self.tx.commit().await?;
        Ok(())
    }

    /// Writes every stepped instance and its changed tasks (the transaction stays open).
    pub async fn flush(&mut self) -> Result<()> {
        for id in self.order.clone() {
            let loaded = self.instances.get_mut(&id).expect("ordered ids are loaded");
            if !loaded.dirty {
                continue;
            }
            let state = &loaded.state;
            let changed: Vec<Value> = loaded.changed_tasks.drain(..).collect();
            let error = state.error.as_ref().map(|e| json!(e));
            let updated_at = store::instances::update(
                &mut self.tx,
                &store::instances::InstanceUpdate {
                    id,
                    status: state.status.as_str(),
                    data: &Value::Object(state.data.clone()),
                    correlations: &json!(state.correlations),
                    internal: &json!(state.internal),
                    error: error.as_ref(),
                    tasks: &Value::Array(changed),
                    live_tasks: &Value::Array(state.tasks.iter().map(task_row_json).collect()),
                },
            )
            .await?;
            // A complete instance has no live task left; one that stopped otherwise (error,
            // terminated) may, and nothing may be delivered to or called for it any more.
            let stopped_early = state.status.is_final() && state.status != InstanceStatus::Complete;
            loaded.updated_at = updated_at;
            loaded.dirty = false;
            if stopped_early {
                store::messages::cancel_receives_of_instance(&mut self.tx, id).await?;
                store::jobs::cancel_for_instance(&mut self.tx, id).await?;
            }
        }
        Ok(())
    }

    /// `{"process_instance": {...}, "task_data": {...}}` for an instance this unit holds.
    pub fn instance_answer(&self, id: i64) -> Option<Value> {
        let loaded = self.instances.get(&id)?;
        let state = &loaded.state;
        let answer = InstanceAnswer {
            id,
            process_model_identifier: &loaded.process_model_identifier,
            model_version: &loaded.model_version,
            process_id: &state.process_id,
            status: state.status.as_str(),
            error: json!(state.error),
            data: Value::Object(state.data.clone()),
            created_at: loaded.created_at,
            updated_at: loaded.updated_at,
        };
        Some(answer.to_json())
    }
}

/// The parts of an instance that its answer shows.
pub struct InstanceAnswer<'a> {
    pub id: i64,
    pub process_model_identifier: &'a str,
    pub model_version: &'a str,
    pub process_id: &'a str,
    pub status: &'a str,
    pub error: Value,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl InstanceAnswer<'_> {
    /// The answer shape of a start, a task completion and a delivered message.
    pub fn to_json(&self) -> Value {
        json!({
            "process_instance": {
                "id": self.id,
                "status": self.status,
                "process_model_identifier": self.process_model_identifier,
                "process_model_version": self.model_version,
                "process_id": self.process_id,
                "error": self.error,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
            },
            "task_data": self.data,
        })
    }
}

fn task_row_json(task: &Task) -> Value {
    json!({
        "guid": task.guid,
        "element_id": task.element_id,
        "element_type": task.element_type,
        "name": task.name,
        "state": task.state.as_str(),
        "scope": task.scope,
        "data": task.data,
    })
}

/// Rebuilds the engine's state of an instance from its row and live tasks.
fn state_from_rows(row: &InstanceRow, live_tasks: Value) -> Result<InstanceState> {
    let tasks: Vec<Task> = serde_json::from_value(live_tasks)
        .map_err(|e| anyhow!("stored tasks of instance {} are unreadable: {e}", row.id))?;
    let state = InstanceState {
        process_id: row.process_id.clone(),
        status: serde_json::from_value(Value::String(row.status.clone()))
            .map_err(|e| anyhow!("stored status of instance {}: {e}", row.id))?,
        data: match &row.data.0 {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        },
        correlations: serde_json::from_value(row.correlations.0.clone()).unwrap_or_default(),
        error: row
            .error
            .as_ref()
            .and_then(|e| serde_json::from_value(e.0.clone()).ok()),
        tasks,
        internal: serde_json::from_value(row.internal.0.clone())
            .map_err(|e| anyhow!("stored engine state of instance {}: {e}", row.id))?,
    };
    Ok(state)
}
