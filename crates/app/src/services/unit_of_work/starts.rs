//! Starts: creating an instance of a model's process and running its first step (finding the
//! processes and decisions it calls from other models on the way), then on to its wait states.

use super::super::clock::step_context;
use super::super::{Error, Result};
use super::callees::{Callees, MAX_CALLEE_LOOKUPS};
use super::engine_runs::{too_many_callees, EngineRun, RunInput};
use super::{Row, UnitOfWork, Work};
use crate::bpmn::ModelSpec;
use crate::engine::InstanceStatus;
use crate::engine::{Effect, EngineError, Event, InstanceState};
use crate::ids::InstanceId;
use crate::ids::ModelId;
use crate::services::ErrorCode;
use crate::store::{self, instances::InstanceRow};
use serde_json::{json, Map, Value};
use sqlx::types::Json;
use std::sync::Arc;

/// What starts an instance: a caller (the API, a timer), a message or a signal (with its
/// payload).
pub(super) enum StartedBy {
    Caller,
    Message(String, Value),
    Signal(Value),
}

/// Where a new instance's row goes and when it is written.
#[derive(Default)]
pub(super) struct NewRow<'a> {
    /// The bucket of what it belongs with (the message that starts it), else one of its own.
    pub bucket: Option<i64>,
    /// Its model's current version as the message catalog gave it: with an id the unit's
    /// lookup drew, the row is written by its first write-back ([`Row::New`]), not now.
    pub current_version: Option<&'a str>,
}

/// A new instance as its first step left it, with the spec it stepped against and the
/// processes it pinned from other models on the way.
struct Started {
    spec: Arc<ModelSpec>,
    callees: Callees,
    state: InstanceState,
    effects: Vec<Effect>,
}

impl<'c> UnitOfWork<'c> {
    /// Creates an instance of a model's primary process and runs it (and whatever it starts)
    /// to its wait states.
    pub async fn start_instance(
        &mut self,
        process_model_identifier: &ModelId,
        data: Map<String, Value>,
    ) -> Result<InstanceId> {
        let id = self
            .create_instance(
                process_model_identifier,
                None,
                None,
                data,
                StartedBy::Caller,
                NewRow::default(),
            )
            .await?;
        self.run_queued().await?;
        Ok(id)
    }

    /// Creates an instance of a model's process from one of its start events (a timer's
    /// occurrence, a signal) and runs it to its wait states.
    pub async fn start_instance_at(
        &mut self,
        process_model_identifier: &ModelId,
        process_id: &str,
        start_event_id: &str,
        data: Map<String, Value>,
    ) -> Result<InstanceId> {
        let id = self
            .create_instance(
                process_model_identifier,
                Some(process_id),
                Some(start_event_id.to_string()),
                data,
                StartedBy::Caller,
                NewRow::default(),
            )
            .await?;
        self.run_queued().await?;
        Ok(id)
    }

    /// Creates an instance (its row, and its first step) and queues the effects of that step;
    /// the caller runs the queue. Its row is placed and written as `row` says.
    pub(super) async fn create_instance(
        &mut self,
        process_model_identifier: &ModelId,
        process_id: Option<&str>,
        start_event_id: Option<String>,
        data: Map<String, Value>,
        started_by: StartedBy,
        row: NewRow<'_>,
    ) -> Result<InstanceId> {
        let NewRow {
            bucket,
            current_version,
        } = row;
        // held until commit: the model cannot be deleted under the new instance (taken once
        // per unit: the starts of a batch share it)
        if !self.models_locked.contains(process_model_identifier) {
            store::models::lock_instances_of(
                self.db_without_new_rows(),
                process_model_identifier,
                false,
            )
            .await?;
            self.models_locked.insert(process_model_identifier.clone());
        }
        let (row, row_state) = match (current_version, process_id, self.next_instance_id.take()) {
            (Some(version), Some(process_id), Some(id)) => {
                let now = chrono::Utc::now();
                let row = InstanceRow {
                    id,
                    process_model_identifier: process_model_identifier.clone(),
                    process_id: process_id.to_string(),
                    status: InstanceStatus::Running,
                    data: Json(json!({})),
                    correlations: Json(json!({})),
                    internal: Json(json!({})),
                    error: None,
                    model_version: version.to_string(),
                    // (until its row is written: the transaction's time then)
                    created_at: now,
                    updated_at: now,
                };
                let started_by = self.actor.clone();
                (row, Row::New { started_by })
            }
            (_, _, unused) => {
                self.next_instance_id = unused;
                let placement =
                    store::shards::new_instance(bucket, uuid::Uuid::new_v4().as_u128() as i64);
                let actor = self.actor.clone();
                let row = store::instances::insert_of_current_version(
                    self.db_without_new_rows(),
                    process_model_identifier,
                    process_id,
                    actor.as_deref(),
                    placement,
                )
                .await?
                .ok_or_else(|| super::super::models::model_not_found(process_model_identifier))?;
                (row, Row::Stored)
            }
        };
        let cache = self.cache;
        let spec = cache
            .spec(
                self.db_without_new_rows(),
                &row.process_model_identifier,
                &row.model_version,
            )
            .await?;
        let process_id = row.process_id.clone();
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
        let started = self
            .first_step(
                id,
                (&row.process_model_identifier, &row.model_version),
                spec,
                &process_id,
                start,
            )
            .await?;
        let pins = (!started.callees.pins.is_empty()).then(|| json!(started.callees.pins));
        self.insert_loaded(
            id,
            row,
            row_state,
            started.spec,
            started.callees,
            started.state,
        );
        self.mark_stepped(id)?;
        if let Some(pins) = pins {
            store::instances::set_callees(self.db().await?, id, &pins).await?;
        }
        self.queue.push_back(Work::Effects(id, started.effects));
        Ok(id)
    }

    /// `engine::start_run` of instance `id`; each process or decision of another model it
    /// asks for is pinned and linked (or marked unavailable) and the run goes on where it
    /// stopped (or, where it could not stop, is made again). A refusal is 400
    /// `process_instance_cannot_start`.
    async fn first_step(
        &mut self,
        id: InstanceId,
        (model, version): (&ModelId, &str),
        mut spec: Arc<ModelSpec>,
        process_id: &str,
        start: Event,
    ) -> Result<Started> {
        let env = self.script_env(id, model, &spec, true).await?;
        // kept only where a run may have to be made again
        let again = spec.calls_elsewhere.then(|| start.clone());
        let mut callees = Callees::default();
        let stores = self.data_store_contents(model, &spec).await?;
        let mut context = step_context(self.cache, env.clone()).with_data_stores(stores);
        let mut input = RunInput::Event(start);
        loop {
            if callees.pins.len() + callees.unavailable.len() > MAX_CALLEE_LOOKUPS {
                return Err(too_many_callees(id));
            }
            let (run, used) = self
                .start_engine(
                    (id, model),
                    spec.clone(),
                    process_id.to_string(),
                    input,
                    context,
                )
                .await?;
            context = used;
            let (callee, paused) = match run {
                EngineRun::Done((state, effects)) => {
                    return Ok(Started {
                        spec,
                        callees,
                        state,
                        effects,
                    })
                }
                EngineRun::Refused(refused) => {
                    return Err(Error::refused(
                        ErrorCode::ProcessInstanceCannotStart,
                        refused.to_string(),
                    ))
                }
                EngineRun::AsksFor(callee, paused) => (callee, Some(paused)),
                EngineRun::CalleeNeeded(callee) => (callee, None),
            };
            spec = self
                .provide_callee(model, version, &mut callees, &callee)
                .await?;
            let stores = self.data_store_contents(model, &spec).await?;
            input = match (paused, &again) {
                (Some(paused), _) => RunInput::Paused(paused, stores),
                (None, Some(start)) => {
                    context = step_context(self.cache, env.clone()).with_data_stores(stores);
                    RunInput::Event(start.clone())
                }
                (None, None) => {
                    return Err(Error::refused(
                        ErrorCode::ProcessInstanceCannotStart,
                        EngineError::CalleeNeeded(callee).to_string(),
                    ))
                }
            };
        }
    }
}
