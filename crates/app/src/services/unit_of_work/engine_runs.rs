//! Running the pure engine on the instances of this unit: on a blocking thread (a step's cost
//! grows with the model and its scripts), in an `engine step` span when traced,
//! and what each run came to, as one enum callers match on.

use super::super::clock::{expr_context, step_context};
use super::super::{Error, Result};
use super::callees::MAX_CALLEE_LOOKUPS;
use super::UnitOfWork;
use crate::bpmn::{Callee, ModelSpec};
use crate::engine::{
    self, DataStoreContents, Effect, EngineError, Event, InstanceError, InstanceState, ServiceCall,
    StepContext,
};
use crate::expr::ScriptEnv;
use crate::store;
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope};
use anyhow::anyhow;
use serde_json::json;
use std::sync::Arc;
use uuid::Uuid;

/// What a run of the engine (a start or a step) came to. No Python being free for its
/// scripts is not among them: that is `Error::ScriptsUnavailable`, as for any other use case.
pub(super) enum EngineRun<T> {
    /// The engine ran: what it gave.
    Done(T),
    /// A process or decision of another model is needed: nothing happened; found and linked,
    /// the run is made again.
    CalleeNeeded(Callee),
    /// The engine refused the event (not waiting, unknown task, invalid): nothing happened.
    Refused(EngineError),
}

impl<T> EngineRun<T> {
    /// The engine's answer as a run, its span marked failed when the engine refused.
    fn of(span: &SpanScope, ran: std::result::Result<T, EngineError>) -> Result<EngineRun<T>> {
        if let Err(refused) = &ran {
            span.fail(|| refused.to_string());
        }
        match ran {
            Ok(done) => Ok(EngineRun::Done(done)),
            Err(EngineError::CalleeNeeded(callee)) => Ok(EngineRun::CalleeNeeded(callee)),
            Err(EngineError::Unavailable(why)) => Err(Error::ScriptsUnavailable(why)),
            Err(refused) => Ok(EngineRun::Refused(refused)),
        }
    }
}

/// What a step of a held instance came to, the processes it called from other models found.
pub(super) enum StepOutcome {
    /// The instance stepped: the effects to carry out.
    Stepped(Vec<Effect>),
    /// The engine refused the event: nothing changed.
    Refused(EngineError),
}

/// A service task's call, its parameters evaluated.
#[derive(Debug)]
pub enum EvaluatedCall {
    /// What the dispatcher sends to the connector.
    Ready(ServiceCall),
    /// The parameters could not be evaluated (a script error, a required parameter that is
    /// empty, no Python free): the error the task fails with.
    Failed(InstanceError),
    /// The instance is not held by this unit.
    NotHeld,
}

impl<'c> UnitOfWork<'c> {
    /// What the dispatcher needs to call the connector for a task of a held instance: its
    /// parameters evaluated, off the async threads when they need Python.
    pub async fn service_call(&mut self, id: i64, task_guid: Uuid) -> Result<EvaluatedCall> {
        let Some(loaded) = self.instances.get(&id) else {
            return Ok(EvaluatedCall::NotHeld);
        };
        let (spec, model) = (loaded.spec.clone(), loaded.process_model_identifier.clone());
        let env = self.script_env(id, &model, &spec).await?;
        let cx = expr_context(self.cache).with_env(Arc::new(env));
        let state = &self.instances[&id].state;
        // no step: the task's parameters, evaluated inline when no Python is needed (a
        // bounded amount of work, whatever the model's size)
        let call = if spec.needs_python {
            let state = state.clone();
            on_a_blocking_thread(move || engine::service_call(&spec, &state, task_guid, &cx))
                .await?
        } else {
            engine::service_call(&spec, state, task_guid, &cx)
        };
        Ok(match call {
            Ok(call) => EvaluatedCall::Ready(call),
            Err(error) => EvaluatedCall::Failed(error),
        })
    }

    /// Where an instance's scripts run, for the script functions (nothing to build when its
    /// model runs no Python: the hot path of plain message models).
    pub(super) async fn script_env(
        &mut self,
        id: i64,
        model: &str,
        spec: &ModelSpec,
    ) -> Result<ScriptEnv> {
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

    /// `engine::start` of instance `id` of `model`, on a blocking thread (see
    /// [`on_a_blocking_thread`]), in an `engine step` span when traced.
    pub(super) async fn start_engine(
        &self,
        (id, model): (i64, &str),
        spec: Arc<ModelSpec>,
        process_id: String,
        start: Event,
        env: ScriptEnv,
        stores: DataStoreContents,
    ) -> Result<EngineRun<(InstanceState, Vec<Effect>)>> {
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, model, &start)
        });
        let mut context = step_context(self.cache, env).with_data_stores(stores);
        let short = spec.steps_are_short();
        let started = off_async_threads_unless(short, move || {
            engine::start(&spec, &process_id, start, &mut context)
        })
        .await;
        let started = span.record(started)?;
        EngineRun::of(&span, started)
    }

    /// `engine::step` on a held instance; a process it calls from another model is found,
    /// pinned and linked, and the step run again.
    pub(super) async fn step_engine(&mut self, id: i64, event: Event) -> Result<StepOutcome> {
        if !self.instances[&id].spec.calls_elsewhere {
            // it cannot ask for a process: no copy of the event to keep
            return Ok(match self.step_engine_once(id, event).await? {
                EngineRun::Done(effects) => StepOutcome::Stepped(effects),
                EngineRun::CalleeNeeded(callee) => {
                    StepOutcome::Refused(EngineError::CalleeNeeded(callee))
                }
                EngineRun::Refused(refused) => StepOutcome::Refused(refused),
            });
        }
        for _ in 0..=MAX_CALLEE_LOOKUPS {
            let callee = match self.step_engine_once(id, event.clone()).await? {
                EngineRun::Done(effects) => return Ok(StepOutcome::Stepped(effects)),
                EngineRun::Refused(refused) => return Ok(StepOutcome::Refused(refused)),
                EngineRun::CalleeNeeded(callee) => callee,
            };
            self.link_callee(id, &callee).await?;
        }
        Err(too_many_callees(id))
    }

    /// Pins (or marks unavailable) a process or decision a held instance asked for, and links
    /// it into the spec the instance steps against.
    async fn link_callee(&mut self, id: i64, callee: &Callee) -> Result<()> {
        let loaded = &self.instances[&id];
        let (model, version) = (
            loaded.process_model_identifier.clone(),
            loaded.model_version.clone(),
        );
        let mut callees = loaded.callees.clone();
        let spec = self
            .provide_callee(&model, &version, &mut callees, callee)
            .await?;
        if callees.pins != self.instances[&id].callees.pins {
            store::instances::set_callees(&mut self.tx, id, &json!(callees.pins)).await?;
        }
        let loaded = self.instances.get_mut(&id).expect("held");
        loaded.spec = spec;
        loaded.callees = callees;
        Ok(())
    }

    /// `engine::step` on a held instance, on a blocking thread (see [`on_a_blocking_thread`]),
    /// in an `engine step` span when traced.
    async fn step_engine_once(&mut self, id: i64, event: Event) -> Result<EngineRun<Vec<Effect>>> {
        let (model, spec) = {
            let loaded = &self.instances[&id];
            (loaded.process_model_identifier.clone(), loaded.spec.clone())
        };
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, &model, &event)
        });
        let mut context = span.record(self.engine_context(id, &model, &spec).await)?;
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        let spec = loaded.spec.clone();
        if spec.steps_are_short() {
            // no thread hop on the hot path: a short step costs less than the hop
            let stepped = engine::step(&spec, &mut loaded.state, event, &mut context);
            return EngineRun::of(&span, stepped);
        }
        // moved to the thread and back (a join error fails the whole unit of work, which
        // never commits)
        let placeholder = InstanceState::new(&loaded.state.process_id, Default::default());
        let mut state = std::mem::replace(&mut loaded.state, placeholder);
        let ran = on_a_blocking_thread(move || {
            let stepped = engine::step(&spec, &mut state, event, &mut context);
            (state, stepped)
        })
        .await;
        let (state, stepped) = span.record(ran)?;
        self.instances.get_mut(&id).expect("held").state = state;
        EngineRun::of(&span, stepped)
    }

    /// What a step of a held instance of `model` is given: the time, task ids, where its
    /// scripts run and the data stores it reads.
    async fn engine_context(
        &mut self,
        id: i64,
        model: &str,
        spec: &ModelSpec,
    ) -> Result<StepContext> {
        let env = self.script_env(id, model, spec).await?;
        let stores = self.data_store_contents(model, spec).await?;
        Ok(step_context(self.cache, env).with_data_stores(stores))
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

/// Runs engine work inline when it is `short` (see `ModelSpec::steps_are_short`: the thread
/// hop would cost more than the work), else as [`on_a_blocking_thread`].
async fn off_async_threads_unless<T: Send + 'static>(
    short: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    if short {
        return Ok(work());
    }
    on_a_blocking_thread(work).await
}

/// Runs engine work on tokio's blocking threads, never on the async ones that answer HTTP
/// requests: a step may run a script for its whole time limit, or thousands of elements of a
/// large model, and an async thread that waited for it would hold up every other request it
/// serves (`/v1.0/status` included).
async fn on_a_blocking_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Internal(anyhow!("an engine step's thread failed: {e}")))
}

pub(super) fn too_many_callees(id: i64) -> Error {
    Error::Internal(anyhow!(
        "instance {id} asked for more than {MAX_CALLEE_LOOKUPS} called processes in one step"
    ))
}
