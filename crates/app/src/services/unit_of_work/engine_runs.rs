//! Running the pure engine on the instances of this unit: on a blocking thread (a step's cost
//! grows with the model and its scripts), in an `engine step` span when traced,
//! and what each run came to, as one enum callers match on.

use super::super::clock::{expr_context, step_context};
use super::super::service_tasks::CommittedCall;
use super::super::{Error, Result};
use super::callees::MAX_CALLEE_LOOKUPS;
use super::UnitOfWork;
use crate::bpmn::{Callee, ModelSpec};
use crate::engine::{
    self, DataStoreContents, Effect, EngineError, Event, InstanceError, InstanceState, PausedRun,
    Run, ServiceCall, StepContext, TaskState,
};
use crate::expr::ScriptEnv;
use crate::ids::ModelId;
use crate::ids::{InstanceId, TaskGuid};
use crate::store;
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope};
use anyhow::anyhow;
use serde_json::json;
use std::sync::Arc;

/// What a run of the engine (a start or a step) came to. No Python being free for its
/// scripts is not among them: that is `Error::ScriptsUnavailable`, as for any other use case.
pub(super) enum EngineRun<T> {
    /// The engine ran: what it gave.
    Done(T),
    /// A token reached an element whose process or decision is in another model: the run
    /// stopped there; found and linked, it goes on from there (nothing runs twice).
    AsksFor(Callee, Box<PausedRun>),
    /// A process or decision of another model is needed where the run cannot stop and go on
    /// (a failed call activity run again): nothing happened; found and linked, the run is
    /// made again.
    CalleeNeeded(Callee),
    /// The engine refused the event (not waiting, unknown task, invalid): nothing happened.
    Refused(EngineError),
}

impl<T> EngineRun<T> {
    /// The engine's answer as a run, its span marked failed when the engine refused.
    fn of(span: &SpanScope, ran: std::result::Result<Run<T>, EngineError>) -> Result<EngineRun<T>> {
        if let Err(refused) = &ran {
            span.fail(|| refused.to_string());
        }
        match ran {
            Ok(Run::Done(done)) => Ok(EngineRun::Done(done)),
            Ok(Run::AsksFor(callee, paused)) => Ok(EngineRun::AsksFor(callee, paused)),
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
    pub async fn service_call(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
    ) -> Result<EvaluatedCall> {
        let task_guid = task_guid.0;
        let Some(loaded) = self.instances.get(&id) else {
            return Ok(EvaluatedCall::NotHeld);
        };
        let (spec, model) = (loaded.spec.clone(), loaded.process_model_identifier.clone());
        let env = self.script_env(id, &model, &spec, false).await?;
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

    /// The calls this unit hands to the dispatcher, each evaluated on the state about to be
    /// committed, as the dispatcher's prepare would evaluate it after the commit: `None` for
    /// one it would not make as it stands (instance suspended, task moved on, parameters that
    /// do not evaluate, no Python free), which the dispatcher then prepares itself.
    pub(super) async fn evaluate_handed_calls(&mut self) -> Vec<Option<CommittedCall>> {
        let calls: Vec<(InstanceId, TaskGuid)> = (self.handed_calls.iter())
            .map(|(_, job)| (job.instance(), job.task_guid()))
            .collect();
        let mut committed = Vec::with_capacity(calls.len());
        for (id, task_guid) in calls {
            committed.push(self.committed_call(id, task_guid).await);
        }
        committed
    }

    async fn committed_call(
        &mut self,
        id: InstanceId,
        task_guid: TaskGuid,
    ) -> Option<CommittedCall> {
        let ready = self.state(id)?.task(task_guid.0)?.state == TaskState::Ready;
        if !ready || self.is_suspended(id) {
            return None;
        }
        let Ok(EvaluatedCall::Ready(call)) = self.service_call(id, task_guid).await else {
            return None;
        };
        Some(CommittedCall {
            call,
            data: serde_json::Value::Object(self.state(id)?.data.clone()),
            model: self.process_model_identifier(id)?.clone(),
        })
    }

    /// Where an instance's scripts run, for the script functions (nothing to build when its
    /// model runs no Python: the hot path of plain message models). A `new` instance (its first
    /// step) was started by this unit's actor: its row may not be written yet.
    pub(super) async fn script_env(
        &mut self,
        id: InstanceId,
        model: &ModelId,
        spec: &ModelSpec,
        new: bool,
    ) -> Result<ScriptEnv> {
        if !spec.needs_python {
            return Ok(ScriptEnv::default());
        }
        let site = self.cache.site();
        let mut env = ScriptEnv {
            process_instance_id: Some(id.0),
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
            env.initiator = match new {
                true => self.actor.clone(),
                false => self.started_by(id).await?,
            };
        }
        Ok(env)
    }

    /// `engine::start_run` of instance `id` of `model` (or the paused start it goes on with),
    /// on a blocking thread unless its steps are short, in an `engine step` span when traced;
    /// the context comes back for a run that goes on.
    pub(super) async fn start_engine(
        &self,
        (id, model): (InstanceId, &ModelId),
        spec: Arc<ModelSpec>,
        process_id: String,
        input: RunInput,
        mut context: StepContext,
    ) -> Result<(EngineRun<(InstanceState, Vec<Effect>)>, StepContext)> {
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, model, &input)
        });
        let short = spec.steps_are_short();
        let started = off_async_threads_unless(short, move || {
            let started = match input {
                RunInput::Event(start) => {
                    engine::start_run(&spec, &process_id, start, &mut context)
                }
                RunInput::Paused(paused, stores) => {
                    engine::continue_start(&spec, paused, &mut context, stores)
                }
            };
            (started, context)
        })
        .await;
        let (started, context) = span.record(started)?;
        Ok((EngineRun::of(&span, started)?, context))
    }

    /// `engine::step` on a held instance. A process or decision it asks for from another
    /// model is found, pinned and linked, and the run goes on where it stopped (or, where it
    /// could not stop, is made again).
    pub(super) async fn step_engine(
        &mut self,
        id: InstanceId,
        event: Event,
    ) -> Result<StepOutcome> {
        let calls_elsewhere = self.instances[&id].spec.calls_elsewhere;
        // kept only where a run may have to be made again
        let again = calls_elsewhere.then(|| event.clone());
        let mut context = self.engine_context(id).await?;
        let mut input = RunInput::Event(event);
        for _ in 0..=MAX_CALLEE_LOOKUPS {
            let (run, used) = self.step_engine_once(id, input, context).await?;
            context = used;
            input = match (run, &again) {
                (EngineRun::Done(effects), _) => return Ok(StepOutcome::Stepped(effects)),
                (EngineRun::Refused(refused), _) => return Ok(StepOutcome::Refused(refused)),
                (EngineRun::AsksFor(callee, paused), Some(_)) => {
                    self.link_callee(id, &callee).await?;
                    let stores = self.held_data_store_contents(id).await?;
                    RunInput::Paused(paused, stores)
                }
                (EngineRun::CalleeNeeded(callee), Some(event)) => {
                    self.link_callee(id, &callee).await?;
                    context = self.engine_context(id).await?;
                    RunInput::Event(event.clone())
                }
                // a model that calls nothing elsewhere cannot be given what it asks for
                (EngineRun::AsksFor(callee, _) | EngineRun::CalleeNeeded(callee), None) => {
                    return Ok(StepOutcome::Refused(EngineError::CalleeNeeded(callee)));
                }
            };
        }
        Err(too_many_callees(id))
    }

    /// Pins (or marks unavailable) a process or decision a held instance asked for, and links
    /// it into the spec the instance steps against.
    async fn link_callee(&mut self, id: InstanceId, callee: &Callee) -> Result<()> {
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
            store::instances::set_callees(self.db().await?, id, &json!(callees.pins)).await?;
        }
        let loaded = self.instances.get_mut(&id).expect("held");
        loaded.spec = spec;
        loaded.callees = callees;
        Ok(())
    }

    /// `engine::step_run` on a held instance (or the paused step it goes on with), on a
    /// blocking thread unless its steps are short (see [`on_a_blocking_thread`]), in an
    /// `engine step` span when traced; the context comes back for a run that goes on.
    async fn step_engine_once(
        &mut self,
        id: InstanceId,
        input: RunInput,
        mut context: StepContext,
    ) -> Result<(EngineRun<Vec<Effect>>, StepContext)> {
        let loaded = self.instances.get_mut(&id).expect("loaded by the caller");
        let (model, spec) = (&loaded.process_model_identifier, loaded.spec.clone());
        let span = SpanScope::child("engine step", SpanKind::Internal, || {
            step_attributes(id, model, &input)
        });
        let run = move |state: &mut InstanceState, context: &mut StepContext| match input {
            RunInput::Event(event) => engine::step_run(&spec, state, event, context),
            RunInput::Paused(paused, stores) => {
                engine::continue_step(&spec, state, paused, context, stores)
            }
        };
        if loaded.spec.steps_are_short() {
            // no thread hop on the hot path: a short step costs less than the hop
            let stepped = run(&mut loaded.state, &mut context);
            return Ok((EngineRun::of(&span, stepped)?, context));
        }
        // moved to the thread and back (a join error fails the whole unit of work, which
        // never commits)
        let placeholder = InstanceState::new(&loaded.state.process_id, Default::default());
        let mut state = std::mem::replace(&mut loaded.state, placeholder);
        let ran = on_a_blocking_thread(move || {
            let stepped = run(&mut state, &mut context);
            (state, stepped, context)
        })
        .await;
        let (state, stepped, context) = span.record(ran)?;
        self.instances.get_mut(&id).expect("held").state = state;
        Ok((EngineRun::of(&span, stepped)?, context))
    }

    /// What a step of a held instance is given: the time, task ids, where its scripts run and
    /// the data stores it reads.
    async fn engine_context(&mut self, id: InstanceId) -> Result<StepContext> {
        let (model, spec) = {
            let loaded = &self.instances[&id];
            (loaded.process_model_identifier.clone(), loaded.spec.clone())
        };
        let env = self.script_env(id, &model, &spec, false).await?;
        let stores = self.data_store_contents(&model, &spec).await?;
        Ok(step_context(self.cache, env).with_data_stores(stores))
    }

    /// The data stores a held instance's spec reads, as they are now (for a run going on
    /// with a callee linked, which may read others).
    async fn held_data_store_contents(&mut self, id: InstanceId) -> Result<DataStoreContents> {
        let (model, spec) = {
            let loaded = &self.instances[&id];
            (loaded.process_model_identifier.clone(), loaded.spec.clone())
        };
        self.data_store_contents(&model, &spec).await
    }
}

/// What a run of the engine is given: an event (a start's, or a step's), or a run that asked
/// for a callee to go on with, with the data stores read again.
pub(super) enum RunInput {
    Event(Event),
    Paused(Box<PausedRun>, DataStoreContents),
}

/// What an `engine step` span says: the instance, its model, the event and its message (a
/// paused run going on says `continue`).
fn step_attributes(id: InstanceId, model: &ModelId, input: &RunInput) -> Vec<KeyValue> {
    let kind = match input {
        RunInput::Event(event) => event.kind(),
        RunInput::Paused(..) => "continue",
    };
    let mut attributes = vec![
        KeyValue::new("workflow.instance.id", id.0),
        KeyValue::new("workflow.process_model", model.to_string()),
        KeyValue::new("workflow.event", kind),
    ];
    if let RunInput::Event(event) = input {
        if let Some(name) = event.message_name() {
            attributes.push(KeyValue::new("workflow.message.name", name.to_string()));
        }
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

pub(super) fn too_many_callees(id: InstanceId) -> Error {
    Error::Internal(anyhow!(
        "instance {id} asked for more than {MAX_CALLEE_LOOKUPS} called processes in one step"
    ))
}
