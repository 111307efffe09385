//! A dispatcher's job: prepare the call in one transaction (the task's parameters evaluated,
//! the reserved `wf__*` fields added), call the proxy outside any transaction, apply its
//! outcome in another (a 202: kept a moment for its callback, see `acceptances`, then one
//! statement on the job alone); a job whose leases ran out, or whose answer cannot be recorded,
//! fails its task instead.

use super::acceptances::Accepted;
use super::outcome::{outcome_attributes, storable};
use super::CommittedCall;
use super::{callback_scope, callback_url, schedule_retry, Job, ServiceTaskContext, MAX_LEASES};
use crate::connector::{self, ConnectorClient, Outcome};
use crate::engine::{self, Event, ServiceCall, TaskState};
use crate::ids::ModelId;
use crate::services::group_commit::Batchable;
use crate::services::unit_of_work::Committed;
use crate::services::unit_of_work::{Applied, EvaluatedCall};
use crate::services::{retry_transaction, Error, ModelCache, Result, UnitOfWork};
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use sqlx::PgPool;

/// The request the proxy gets: the evaluated parameters plus the reserved `wf__*` fields.
struct PreparedCall {
    operator_id: String,
    body: Value,
}

/// Runs one job: prepare (unless its call was evaluated at the commit that scheduled it),
/// call, apply. The proxy is called at most once per lease, and a job whose earlier leases all
/// ran out is failed instead of being called again. Traced, the run is a `connector job` span
/// in the trace of the step that scheduled the call.
pub async fn run_job(
    ctx: &ServiceTaskContext<'_>,
    job: &Job,
    committed: Option<CommittedCall>,
) -> Result<()> {
    let traceparent = job.traceparent.as_deref();
    let span = SpanScope::start(ctx.traces, traceparent, "connector job", || {
        vec![
            KeyValue::new("workflow.instance.id", job.process_instance_id.0),
            KeyValue::new("workflow.task.guid", job.task_guid.to_string()),
            KeyValue::new("workflow.job.lease", i64::from(job.leases)),
        ]
    });
    span.record(span.around(run_job_steps(ctx, job, committed)).await)
}

async fn run_job_steps(
    ctx: &ServiceTaskContext<'_>,
    job: &Job,
    committed: Option<CommittedCall>,
) -> Result<()> {
    if job.leases > MAX_LEASES {
        let cause = format!(
            "the connector call was started {} times without its answer being recorded; \
             it is not made again",
            job.leases - 1
        );
        return retry_transaction!(fail_job(ctx, job, &cause));
    }
    let prepared = match committed {
        Some(CommittedCall { call, data, model }) => prepared_call(ctx, job, call, data, &model),
        None => match retry_transaction!(prepare(ctx, job))? {
            Some(prepared) => prepared,
            None => return Ok(()),
        },
    };
    let outcome = match ctx.client {
        Some(client) => call_traced(client, &prepared).await,
        None => Outcome::ProxyFailure {
            error_code: "connector_proxy_not_configured".into(),
            message: "WORKFLOW_BACKEND_CONNECTOR_PROXY_URL is not set".into(),
            status: None,
            transient: false,
            logs: Vec::new(),
        },
    };
    let outcome = storable(outcome);
    if let Outcome::Accepted { logs } = outcome {
        // recorded in a moment, unless its callback comes first (see `acceptances`)
        ctx.cache.accepted_calls().defer(
            job.clone(),
            prepared.operator_id,
            logs,
            std::time::Instant::now(),
        );
        return Ok(());
    }
    let answer = JobOutcome {
        job: job.clone(),
        operator_id: prepared.operator_id,
        outcome,
    };
    apply_answer(ctx, answer).await
}

/// Records a proxy's 202 whose callback did not come first: on its job alone, or else (the
/// job held or re-scheduled meanwhile, or the statement failing) with the instance.
pub async fn record_accepted(ctx: &ServiceTaskContext<'_>, accepted: Accepted) -> Result<()> {
    let Accepted {
        job,
        operator_id,
        logs,
        ..
    } = accepted;
    match record_acceptance(ctx, &job, &logs).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => tracing::warn!(instance = job.process_instance_id.0, task = %job.task_guid,
            error = %e, "the 202 cannot be recorded on its job; applying it with the instance"),
    }
    let answer = JobOutcome {
        job,
        operator_id,
        outcome: Outcome::Accepted { logs },
    };
    apply_answer(ctx, answer).await
}

/// Applies the proxy's answer to its task; one that cannot be recorded fails the task.
async fn apply_answer(ctx: &ServiceTaskContext<'_>, answer: JobOutcome) -> Result<()> {
    let job = answer.job.clone();
    match apply_outcome(ctx, answer).await {
        Ok(()) => Ok(()),
        // The answer is in hand: never call the proxy again for it. Fail the task with the
        // cause; only if that cannot be written either does the lease run out.
        Err(e) if !e.is_unavailable() => {
            tracing::error!(instance = job.process_instance_id.0, task = %job.task_guid, error = %e,
                "the connector's answer could not be recorded; failing the task");
            let cause = format!("the connector's answer could not be recorded: {e}");
            retry_transaction!(fail_job(ctx, &job, &cause))
        }
        Err(e) => Err(e),
    }
}

/// Records a 202 on the job alone, in one statement: the 202 costs no unit of work, and it
/// does not wait for the instance, which the task's callback (proxies often send it before
/// their 202 arrives) may hold. Whether it is done; `false` when the job is held (its
/// instance suspended) or re-scheduled, which [`apply_outcome`] handles with the instance.
async fn record_acceptance(
    ctx: &ServiceTaskContext<'_>,
    job: &Job,
    logs: &[String],
) -> Result<bool> {
    use crate::store::jobs::Acceptance;
    let (id, task_guid) = (job.process_instance_id, job.task_guid);
    let recorded = retry_transaction!(async {
        let recorded =
            crate::store::jobs::record_acceptance(ctx.pool, job.id, id, task_guid, logs).await?;
        Ok::<_, Error>(recorded)
    })?;
    Ok(match recorded {
        Acceptance::Recorded => true,
        // its callback came first (or the task ended): nothing waits for the 202
        Acceptance::Gone => true,
        Acceptance::NotRecorded => false,
    })
}

/// The proxy's answer, in a `connector call` span (its `traceparent` is the proxy's parent).
async fn call_traced(client: &ConnectorClient, prepared: &PreparedCall) -> Outcome {
    let span = SpanScope::child("connector call", SpanKind::Client, || {
        vec![KeyValue::new(
            "workflow.connector.operator_id",
            prepared.operator_id.clone(),
        )]
    });
    let outcome = span
        .around(client.call(&prepared.operator_id, &prepared.body))
        .await;
    span.set(|| outcome_attributes(&outcome));
    if !matches!(outcome, Outcome::Success { .. } | Outcome::Accepted { .. }) {
        span.fail(|| "the connector call failed".into());
    }
    outcome
}

/// Fails a job's task (error boundary or instance error) with `cause`, and drops the job.
async fn fail_job(ctx: &ServiceTaskContext<'_>, job: &Job, cause: &str) -> Result<()> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if uow.load(id).await? {
        let event = Event::ServiceFailed {
            task_guid: job.task_guid.0,
            error_code: "connector_call_failed".into(),
            message: cause.to_string(),
        };
        if let Applied::Refused(refused) = uow.apply(id, event).await? {
            tracing::debug!(instance = id.0, task = %job.task_guid, %refused, "connector job failure not applied");
        }
    }
    uow.drop_connector_job(job.process_instance_id, job.task_guid);
    uow.commit().await?;
    Ok(())
}

/// The call to make for a job; `None` when there is none to make (the instance is gone,
/// suspended, or its task no longer ready, or the task failed before any call because its
/// parameters could not be evaluated).
async fn prepare(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<Option<PreparedCall>> {
    if let Some(prepared) = prepare_reading(ctx, job).await? {
        return Ok(Some(prepared));
    }
    prepare_locked(ctx, job).await
}

/// The call as the instance's last committed state makes it, read without its lock: the usual
/// case (the task is ready, its parameters evaluate) writes nothing, so its transaction holds
/// no lock and its commit needs no flush to disk. `None` when anything else is to be done,
/// which [`prepare_locked`] does with the instance locked. (The call is made as of that state;
/// a step that moves the task on meanwhile finds the answer refused, as it would a step made
/// while the call was under way.)
async fn prepare_reading(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<Option<PreparedCall>> {
    let mut uow = UnitOfWork::begin_reading(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if !uow.load(id).await? || uow.is_suspended(id) || !task_is_ready(&uow, job) {
        return Ok(None);
    }
    let Ok(call) = evaluate_call(&mut uow, job).await? else {
        return Ok(None);
    };
    let prepared = prepared_from(ctx, &uow, job, call);
    uow.commit().await?;
    Ok(Some(prepared))
}

/// The call's parameters evaluated for a job whose instance `uow` holds: `Err` when no Python
/// was free for them (the job stays due, released by the caller; not tried twice),
/// `Ok(Err(error))` when they cannot be evaluated (the task fails with `error`).
async fn evaluate_call(
    uow: &mut UnitOfWork<'_>,
    job: &Job,
) -> Result<std::result::Result<ServiceCall, crate::engine::InstanceError>> {
    match uow
        .service_call(job.process_instance_id, job.task_guid)
        .await?
    {
        EvaluatedCall::Ready(call) => Ok(Ok(call)),
        EvaluatedCall::Failed(error)
            if error.error_code.as_deref() == Some(engine::SCRIPTS_UNAVAILABLE) =>
        {
            Err(Error::ScriptsUnavailable(error.message))
        }
        EvaluatedCall::Failed(error) => Ok(Err(error)),
        EvaluatedCall::NotHeld => unreachable!("the caller loaded the instance"),
    }
}

fn task_is_ready(uow: &UnitOfWork<'_>, job: &Job) -> bool {
    uow.state(job.process_instance_id)
        .and_then(|state| state.task(job.task_guid.0))
        .is_some_and(|t| t.state == TaskState::Ready)
}

/// [`prepare`] with the instance locked, in its own transaction: a suspended instance's call
/// goes back to wait for the resume, a task no longer ready drops its job, parameters that
/// cannot be evaluated fail the task.
async fn prepare_locked(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<Option<PreparedCall>> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if !uow.load(id).await? {
        return Ok(None);
    }
    if uow.is_suspended(id) {
        // leased just before the instance was suspended: the call waits for the resume
        uow.requeue_connector_job(job.process_instance_id, job.task_guid)
            .await?;
        uow.commit().await?;
        return Ok(None);
    }
    if !task_is_ready(&uow, job) {
        uow.drop_connector_job(job.process_instance_id, job.task_guid);
        uow.commit().await?;
        return Ok(None);
    }
    let call = match evaluate_call(&mut uow, job).await? {
        Ok(call) => call,
        Err(error) => {
            // e.g. a required parameter evaluated to nothing: the task fails before any call
            uow.fail_instance_at_task(id, job.task_guid, error).await?;
            uow.drop_connector_job(job.process_instance_id, job.task_guid);
            uow.commit().await?;
            return Ok(None);
        }
    };
    let prepared = prepared_from(ctx, &uow, job, call);
    uow.commit().await?;
    Ok(Some(prepared))
}

/// [`prepared_call`] for the instance `uow` loaded.
fn prepared_from(
    ctx: &ServiceTaskContext<'_>,
    uow: &UnitOfWork<'_>,
    job: &Job,
    call: ServiceCall,
) -> PreparedCall {
    let id = job.process_instance_id;
    let data = uow
        .state(id)
        .map(|state| Value::Object(state.data.clone()))
        .expect("loaded");
    let model = uow.process_model_identifier(id).expect("loaded");
    prepared_call(ctx, job, call, data, model)
}

/// The request for a call: its parameters and the reserved `wf__*` fields (the instance, its
/// model and data, the task, where to call back and with which token).
fn prepared_call(
    ctx: &ServiceTaskContext<'_>,
    job: &Job,
    call: ServiceCall,
    data: Value,
    model: &ModelId,
) -> PreparedCall {
    let id = job.process_instance_id;
    let mut body = call.params;
    body.insert("wf__process_instance_id".into(), json!(id));
    body.insert("wf__process_model_identifier".into(), json!(model));
    body.insert("wf__task_id".into(), json!(job.task_guid));
    body.insert("wf__task_data".into(), data);
    body.insert(
        "wf__callback_url".into(),
        json!(callback_url(ctx.public_url, id, job.task_guid)),
    );
    // the worker's own credential for this one task (docs/connector-protocol.md, the protocol
    // extension)
    let subject = format!("task:{}", job.task_guid);
    let scope = callback_scope(id, job.task_guid);
    if let Ok(token) = ctx.signer.mint(&subject, &scope, ctx.callback_token_ttl) {
        body.insert("wf__callback_token".into(), json!(token));
    }
    PreparedCall {
        operator_id: call.operator_id,
        body: Value::Object(body),
    }
}

/// A proxy's answer to record for its job's task.
pub struct JobOutcome {
    job: Job,
    operator_id: String,
    outcome: Outcome,
}

/// Applies the proxy's answer to the job's task, committed with the answers that arrive with
/// it (group commit; the logs it sent are recorded whatever becomes of it).
async fn apply_outcome(ctx: &ServiceTaskContext<'_>, answer: JobOutcome) -> Result<()> {
    ctx.job_outcomes.run_grouped(answer).await
}

/// [`apply_outcome`] in a transaction of its own.
async fn apply_outcome_alone(pool: &PgPool, cache: &ModelCache, answer: &JobOutcome) -> Result<()> {
    retry_transaction!(async {
        let mut uow = UnitOfWork::begin(pool, cache).await?;
        record_outcome(&mut uow, answer).await?;
        uow.commit().await?;
        Ok::<(), Error>(())
    })
}

/// [`apply_outcome`] in `uow`.
async fn record_outcome(uow: &mut UnitOfWork<'_>, answer: &JobOutcome) -> Result<()> {
    let JobOutcome {
        job,
        operator_id,
        outcome,
    } = answer;
    let id = job.process_instance_id;
    if !uow.load(id).await? {
        return Ok(());
    }
    uow.record_connector_logs(id, job.task_guid, outcome.logs())
        .await?;
    if uow.is_suspended(id) {
        // suspended while the call was under way: its answer is not applied to a suspended
        // instance, and the call is made again once it is resumed
        uow.requeue_connector_job(job.process_instance_id, job.task_guid)
            .await?;
        return Ok(());
    }
    if let Some(event) = outcome_event(uow, job, operator_id, outcome).await? {
        if let Applied::Refused(refused) = uow.apply(id, event).await? {
            // the task moved on meanwhile (a callback came first, a boundary fired): nothing to do
            tracing::debug!(instance = id.0, task = %job.task_guid, %refused, "connector outcome not applied");
        }
        // done, or waiting for its callback: either way the call is no longer due
        uow.drop_connector_job(job.process_instance_id, job.task_guid);
    }
    Ok(())
}

impl Batchable for JobOutcome {
    type Part = ();
    type Answer = ();

    fn alone<'a>(&'a self, pool: &'a PgPool, cache: &'a ModelCache) -> BoxFuture<'a, Result<()>> {
        Box::pin(apply_outcome_alone(pool, cache, self))
    }

    fn within<'a, 'c: 'a>(&'a self, uow: &'a mut UnitOfWork<'c>) -> BoxFuture<'a, Result<()>> {
        Box::pin(record_outcome(uow, self))
    }

    fn answer(_: (), _: &Committed) -> Result<()> {
        Ok(())
    }

    fn instance(&self) -> Option<crate::ids::InstanceId> {
        Some(self.job.process_instance_id)
    }
}

/// The event the proxy's answer makes for the job's task; `None` when it was a transient
/// failure and a retry was scheduled instead.
async fn outcome_event(
    uow: &mut UnitOfWork<'_>,
    job: &Job,
    operator_id: &str,
    outcome: &Outcome,
) -> Result<Option<Event>> {
    let task_guid = job.task_guid;
    let engine_guid = task_guid.0;
    Ok(match outcome {
        Outcome::Success {
            command_response, ..
        } => Some(Event::ServiceSucceeded {
            task_guid: engine_guid,
            result: connector::result_with_operator(command_response.clone(), operator_id),
        }),
        Outcome::Accepted { .. } => Some(Event::ServiceAccepted {
            task_guid: engine_guid,
        }),
        Outcome::CommandFailure {
            error_code,
            message,
            transient,
            ..
        }
        | Outcome::ProxyFailure {
            error_code,
            message,
            transient,
            ..
        } => {
            let retried = *transient
                && schedule_retry(uow, job.process_instance_id, task_guid)
                    .await?
                    .is_some();
            (!retried).then(|| Event::ServiceFailed {
                task_guid: engine_guid,
                error_code: error_code.clone(),
                message: message.clone(),
            })
        }
    })
}
