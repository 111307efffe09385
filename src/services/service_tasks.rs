//! Service tasks: the dispatcher's job (prepare in one transaction, call the proxy outside
//! any transaction, apply the outcome in another) and the worker's callback.

use super::unit_of_work::Applied;
use super::{retry_transaction, Error, ModelCache, Result, UnitOfWork};
use crate::connector::{self, CallbackOutcome, ConnectorClient, Outcome};
use crate::engine::{self, EngineError, Event, TaskState};
use crate::ids::{InstanceId, TaskGuid};
use crate::services::ErrorCode;
use crate::store;
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope, Traces};
use serde_json::{json, Value};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

/// What the dispatcher and the callback need besides the database.
pub struct ServiceTaskContext<'a> {
    pub pool: &'a PgPool,
    pub cache: &'a ModelCache,
    pub client: Option<&'a ConnectorClient>,
    /// `{WORKFLOW_BACKEND_URL}` for callback URLs.
    pub public_url: &'a str,
    /// Mints per-task callback tokens (HS256, with the configured issuer and audience);
    /// without a JWT secret no token is sent.
    pub signer: &'a crate::tokens::JwtKeys,
    pub callback_token_ttl: Duration,
    /// Where the job's spans go, when traces are configured.
    pub traces: Option<&'a Traces>,
}

pub use crate::store::jobs::Job;

/// The request the proxy gets: the evaluated parameters plus the reserved `wf__*` fields.
struct PreparedCall {
    operator_id: String,
    body: Value,
}

/// A job leased this many times without an answer being recorded is not called again: its
/// task fails (each lease that ran out was a call whose outcome is unknown).
pub const MAX_LEASES: i32 = 3;

/// Runs one job: prepare, call, apply. The proxy is called at most once per lease, and a job
/// whose earlier leases all ran out is failed instead of being called again. Traced, the run
/// is a `connector job` span in the trace of the step that scheduled the call.
pub async fn run_job(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<()> {
    let traceparent = job.traceparent.as_deref();
    let span = SpanScope::start(ctx.traces, traceparent, "connector job", || {
        vec![
            KeyValue::new("workflow.instance.id", job.process_instance_id),
            KeyValue::new("workflow.task.guid", job.task_guid.to_string()),
            KeyValue::new("workflow.job.lease", i64::from(job.leases)),
        ]
    });
    span.record(span.around(run_job_steps(ctx, job)).await)
}

async fn run_job_steps(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<()> {
    if job.leases > MAX_LEASES {
        let cause = format!(
            "the connector call was started {} times without its answer being recorded; \
             it is not made again",
            job.leases - 1
        );
        return retry_transaction!(fail_job(ctx, job, &cause));
    }
    let Some(prepared) = retry_transaction!(prepare(ctx, job))? else {
        return Ok(());
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
    match retry_transaction!(apply_outcome(ctx, job, &prepared.operator_id, &outcome)) {
        Ok(()) => Ok(()),
        // The answer is in hand: never call the proxy again for it. Fail the task with the
        // cause; only if that cannot be written either does the lease run out.
        Err(e) if !e.is_unavailable() => {
            tracing::error!(instance = job.process_instance_id, task = %job.task_guid, error = %e,
                "the connector's answer could not be recorded; failing the task");
            let cause = format!("the connector's answer could not be recorded: {e}");
            retry_transaction!(fail_job(ctx, job, &cause))
        }
        Err(e) => Err(e),
    }
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

/// What a span says of a call's outcome: its kind, the proxy's status and error code.
fn outcome_attributes(outcome: &Outcome) -> Vec<KeyValue> {
    let (kind, status, error_code) = match outcome {
        Outcome::Success { .. } => ("success", None, None),
        Outcome::Accepted { .. } => ("accepted", Some(202), None),
        Outcome::CommandFailure {
            error_code,
            http_status,
            ..
        } => ("command_failure", *http_status, Some(error_code)),
        Outcome::ProxyFailure {
            error_code, status, ..
        } => ("proxy_failure", *status, Some(error_code)),
    };
    let mut attributes = vec![KeyValue::new("workflow.connector.outcome", kind)];
    attributes.extend(status.map(|s| KeyValue::new("http.response.status_code", i64::from(s))));
    attributes.extend(
        error_code.map(|code| KeyValue::new("workflow.connector.error_code", code.clone())),
    );
    attributes
}

/// The outcome with everything the database cannot hold made storable: NUL characters in log
/// lines and error texts become U+FFFD, and a result that cannot be stored (NUL, nesting,
/// numbers out of range) turns the call into a failure that says why.
pub fn storable(outcome: Outcome) -> Outcome {
    let clean = |text: String| {
        if text.contains('\0') {
            text.replace('\0', "\u{FFFD}")
        } else {
            text
        }
    };
    let clean_logs = |logs: Vec<String>| logs.into_iter().map(clean).collect::<Vec<_>>();
    match outcome {
        Outcome::Success {
            command_response,
            logs,
        } => match super::input::check_json(
            &command_response,
            ErrorCode::InvalidConnectorResponse,
            "the connector's result",
        ) {
            Ok(()) => Outcome::Success {
                command_response,
                logs: clean_logs(logs),
            },
            Err(e) => Outcome::CommandFailure {
                error_code: "invalid_connector_response".into(),
                message: e.to_string(),
                http_status: None,
                transient: false,
                logs: clean_logs(logs),
            },
        },
        Outcome::Accepted { logs } => Outcome::Accepted {
            logs: clean_logs(logs),
        },
        Outcome::CommandFailure {
            error_code,
            message,
            http_status,
            transient,
            logs,
        } => Outcome::CommandFailure {
            error_code: clean(error_code),
            message: clean(message),
            http_status,
            transient,
            logs: clean_logs(logs),
        },
        Outcome::ProxyFailure {
            error_code,
            message,
            status,
            transient,
            logs,
        } => Outcome::ProxyFailure {
            error_code: clean(error_code),
            message: clean(message),
            status,
            transient,
            logs: clean_logs(logs),
        },
    }
}

/// Fails a job's task (error boundary or instance error) with `cause`, and drops the job.
async fn fail_job(ctx: &ServiceTaskContext<'_>, job: &Job, cause: &str) -> Result<()> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if uow.load(id).await? {
        let event = Event::ServiceFailed {
            task_guid: job.task_guid,
            error_code: "connector_call_failed".into(),
            message: cause.to_string(),
        };
        if let Applied::Refused(refused) = uow.apply(id, event).await? {
            tracing::debug!(instance = id, task = %job.task_guid, %refused, "connector job failure not applied");
        }
    }
    uow.drop_connector_job(job.task_guid).await?;
    uow.commit().await?;
    Ok(())
}

async fn prepare(ctx: &ServiceTaskContext<'_>, job: &Job) -> Result<Option<PreparedCall>> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if !uow.load(id).await? {
        return Ok(None);
    }
    if uow.is_suspended(id) {
        // leased just before the instance was suspended: the call waits for the resume
        uow.requeue_connector_job(job.task_guid).await?;
        uow.commit().await?;
        return Ok(None);
    }
    let (data, model) = {
        let state = uow.state(id).expect("loaded");
        let ready = state
            .task(job.task_guid)
            .is_some_and(|t| t.state == TaskState::Ready);
        if !ready {
            uow.drop_connector_job(job.task_guid).await?;
            uow.commit().await?;
            return Ok(None);
        }
        (
            Value::Object(state.data.clone()),
            uow.process_model_identifier(id)
                .unwrap_or_default()
                .to_string(),
        )
    };
    let call = uow.service_call(id, job.task_guid).await?.expect("loaded");
    let call = match call {
        Ok(call) => call,
        Err(error) if error.error_code.as_deref() == Some(engine::SCRIPTS_UNAVAILABLE) => {
            // no Python was free for the parameters: the job stays due (released by the caller)
            return Err(Error::ScriptsUnavailable(error.message));
        }
        Err(error) => {
            // e.g. a required parameter evaluated to nothing: the task fails before any call
            uow.fail_instance_at_task(id, job.task_guid, error).await?;
            uow.drop_connector_job(job.task_guid).await?;
            uow.commit().await?;
            return Ok(None);
        }
    };
    let mut body = call.params.clone();
    body.insert("wf__process_instance_id".into(), json!(id));
    body.insert("wf__process_model_identifier".into(), json!(model));
    body.insert("wf__task_id".into(), json!(job.task_guid));
    body.insert("wf__task_data".into(), data);
    body.insert(
        "wf__callback_url".into(),
        json!(callback_url(ctx.public_url, id, job.task_guid)),
    );
    // the worker's own credential for this one task (README: protocol extension)
    let subject = format!("task:{}", job.task_guid);
    let scope = callback_scope(id, job.task_guid);
    if let Ok(token) = ctx.signer.mint(&subject, &scope, ctx.callback_token_ttl) {
        body.insert("wf__callback_token".into(), json!(token));
    }
    uow.commit().await?;
    Ok(Some(PreparedCall {
        operator_id: call.operator_id,
        body: Value::Object(body),
    }))
}

pub fn callback_url(public_url: &str, instance_id: i64, task_guid: Uuid) -> String {
    format!(
        "{}/v1.0/tasks/{instance_id}/{task_guid}/callback",
        public_url.trim_end_matches('/')
    )
}

/// The scope of a per-task callback token.
pub fn callback_scope(instance_id: i64, task_guid: Uuid) -> String {
    format!("callback:{instance_id}/{task_guid}")
}

async fn apply_outcome(
    ctx: &ServiceTaskContext<'_>,
    job: &Job,
    operator_id: &str,
    outcome: &Outcome,
) -> Result<()> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    let id = job.process_instance_id;
    if !uow.load(id).await? {
        return Ok(());
    }
    uow.record_connector_logs(id, job.task_guid, outcome.logs())
        .await?;
    if uow.is_suspended(id) {
        // suspended while the call was under way: its answer is not applied to a suspended
        // instance, and the call is made again once it is resumed
        uow.requeue_connector_job(job.task_guid).await?;
        uow.commit().await?;
        return Ok(());
    }
    let event = match outcome {
        Outcome::Success {
            command_response, ..
        } => Some(Event::ServiceSucceeded {
            task_guid: job.task_guid,
            result: connector::result_with_operator(command_response.clone(), operator_id),
        }),
        Outcome::Accepted { .. } => Some(Event::ServiceAccepted {
            task_guid: job.task_guid,
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
            if *transient && schedule_retry(&mut uow, id, job.task_guid).await?.is_some() {
                None
            } else {
                Some(Event::ServiceFailed {
                    task_guid: job.task_guid,
                    error_code: error_code.clone(),
                    message: message.clone(),
                })
            }
        }
    };
    if let Some(event) = event {
        if let Applied::Refused(refused) = uow.apply(id, event).await? {
            // the task moved on meanwhile (a callback came first, a boundary fired): nothing to do
            tracing::debug!(instance = id, task = %job.task_guid, %refused, "connector outcome not applied");
        }
        // done, or waiting for its callback: either way the call is no longer due
        uow.drop_connector_job(job.task_guid).await?;
    }
    uow.commit().await?;
    Ok(())
}

/// What the callback answers when a retry was scheduled.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryScheduled {
    pub retry_at: chrono::DateTime<chrono::Utc>,
    pub retries_attempted: i32,
    pub max_retries: u32,
}

/// Schedules the next attempt of a failed service task if its retry configuration allows.
async fn schedule_retry(
    uow: &mut UnitOfWork<'_>,
    id: i64,
    task_guid: Uuid,
) -> Result<Option<RetryScheduled>> {
    let Some(Ok(call)) = uow.service_call(id, task_guid).await? else {
        return Ok(None);
    };
    let attempted = uow.retries_attempted(task_guid).await?;
    if attempted as u32 >= call.retries {
        return Ok(None);
    }
    let delay = connector::retry_delay(call.backoff_base, attempted as u32);
    let retry_at = uow.schedule_retry(id, task_guid, delay).await?;
    Ok(Some(RetryScheduled {
        retry_at,
        retries_attempted: attempted + 1,
        max_retries: call.retries,
    }))
}

/// What a callback did.
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackDone {
    /// The task completed with the result.
    Completed,
    /// The task failed, and a boundary event of the model caught the error.
    ErrorHandled,
    /// A transient failure: the call is made again at `retry_at`.
    RetryScheduled(RetryScheduled),
}

/// A callback's answer: what it did, to which instance.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackAnswer {
    pub process_instance_id: i64,
    pub process_model_identifier: String,
    pub task_guid: Uuid,
    pub done: CallbackDone,
}

/// Applies a worker's callback. The caller has been authorised for the instance or task.
pub async fn callback(
    ctx: &ServiceTaskContext<'_>,
    id: InstanceId,
    task_guid: TaskGuid,
    outcome: &CallbackOutcome,
) -> Result<CallbackAnswer> {
    retry_transaction!(callback_once(ctx, id.0, task_guid.0, outcome))
}

async fn callback_once(
    ctx: &ServiceTaskContext<'_>,
    id: i64,
    task_guid: Uuid,
    outcome: &CallbackOutcome,
) -> Result<CallbackAnswer> {
    let mut uow = UnitOfWork::begin(ctx.pool, ctx.cache).await?;
    if !uow.load(id).await? {
        return Err(super::instances::instance_not_found(id));
    }
    if uow.is_suspended(id) {
        // the worker tries again later (it must not take a refusal as final: the task waits)
        return Err(super::lifecycle::suspended(id));
    }
    let waiting = uow.state(id).and_then(|s| s.task(task_guid)).map(|t| {
        t.element_type == "serviceTask" && matches!(t.state, TaskState::Ready | TaskState::Started)
    });
    match waiting {
        Some(true) => {}
        Some(false) => return Err(not_waiting(task_guid)),
        None => {
            let known = uow.stored_task(id, task_guid).await?;
            return Err(match known {
                Some(_) => not_waiting(task_guid),
                None => callback_not_found(id, task_guid),
            });
        }
    }
    let model = uow
        .process_model_identifier(id)
        .unwrap_or_default()
        .to_string();
    let answer = |done| CallbackAnswer {
        process_instance_id: id,
        process_model_identifier: model.clone(),
        task_guid,
        done,
    };
    let logs = match outcome {
        CallbackOutcome::Success { logs, .. } | CallbackOutcome::Failure { logs, .. } => logs,
    };
    uow.record_connector_logs(id, task_guid, logs).await?;
    let event = match outcome {
        CallbackOutcome::Success { result, .. } => Event::ServiceSucceeded {
            task_guid,
            result: result.clone(),
        },
        CallbackOutcome::Failure {
            error_code,
            message,
            transient,
            ..
        } => {
            if *transient {
                if let Some(retry) = schedule_retry(&mut uow, id, task_guid).await? {
                    uow.commit().await?;
                    return Ok(answer(CallbackDone::RetryScheduled(retry)));
                }
            }
            Event::ServiceFailed {
                task_guid,
                error_code: error_code.clone(),
                message: message.clone(),
            }
        }
    };
    let failed = matches!(event, Event::ServiceFailed { .. });
    if let Applied::Refused(refused) = uow.apply(id, event).await? {
        return Err(match refused {
            EngineError::UnknownTask { .. } => callback_not_found(id, task_guid),
            _ => not_waiting(task_guid),
        });
    }
    uow.drop_connector_job(task_guid).await?;
    let committed = uow.commit().await?;
    match (failed, committed.error(id)) {
        (true, Some(error)) => Err(Error::refused(
            ErrorCode::ServiceTaskError,
            error.message.clone(),
        )
        .with_extra(json!({
            "process_instance_id": id,
            "process_model_identifier": model,
            "task_guid": task_guid,
            "status": "error",
            "command_error_code": error.error_code,
            "element_id": error.element_id,
        }))),
        (true, None) => Ok(answer(CallbackDone::ErrorHandled)),
        (false, _) => Ok(answer(CallbackDone::Completed)),
    }
}

fn not_waiting(task_guid: Uuid) -> Error {
    Error::refused(
        ErrorCode::NotWaitingForCallback,
        format!("task {task_guid} is not waiting for a callback"),
    )
}

fn callback_not_found(id: i64, task_guid: Uuid) -> Error {
    Error::refused(
        ErrorCode::CallbackNotFound,
        format!("process instance {id} has no service task {task_guid}"),
    )
}

/// A `wf__logs` line a connector sent.
pub type ConnectorLogLine = store::connector_logs::LogLine;

/// `wf__logs` lines of an instance, oldest first.
pub async fn connector_logs(pool: &PgPool, id: InstanceId) -> Result<Vec<ConnectorLogLine>> {
    Ok(store::connector_logs::of_instance(pool, id.0).await?)
}
