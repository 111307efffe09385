//! A worker's callback: the task must wait for it; its result completes the task, its
//! failure fails it (caught by a boundary, or the instance's error) or schedules a retry.

use super::{schedule_retry, RetryScheduled};
use crate::connector::CallbackOutcome;
use crate::engine::{EngineError, Event};
use crate::ids::ModelId;
use crate::ids::{InstanceId, TaskGuid};
use crate::services::group_commit::{Batchable, GroupCommit};
use crate::services::unit_of_work::Applied;
use crate::services::unit_of_work::Committed;
use crate::services::ModelCache;
use crate::services::{retry_transaction, Error, ErrorCode, Result, UnitOfWork};
use futures_util::future::BoxFuture;
use serde_json::json;
use sqlx::PgPool;
use std::sync::Arc;

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
    pub process_model_identifier: ModelId,
    pub task_guid: TaskGuid,
    pub done: CallbackDone,
}

/// A worker's callback for a service task of an instance, as the caller (authorised for the
/// instance or the task) sent it.
pub struct Callback {
    pub id: InstanceId,
    pub task_guid: TaskGuid,
    pub outcome: CallbackOutcome,
}

/// Applies a worker's callback in a transaction of its own.
pub async fn callback(
    pool: &PgPool,
    cache: &ModelCache,
    callback: &Callback,
) -> Result<CallbackAnswer> {
    retry_transaction!(callback_once(pool, cache, callback))
}

/// Applies a worker's callback, committed with the callbacks that arrive with it (group
/// commit); the same outcomes as [`callback`].
pub async fn callback_grouped(
    callbacks: &Arc<GroupCommit<Callback>>,
    callback: Callback,
) -> Result<CallbackAnswer> {
    callbacks.run_grouped(callback).await
}

async fn callback_once(
    pool: &PgPool,
    cache: &ModelCache,
    callback: &Callback,
) -> Result<CallbackAnswer> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    let applied = apply(&mut uow, callback).await?;
    let committed = uow.commit().await?;
    applied.answer(&committed)
}

/// What a callback did to its instance, before the commit.
pub struct CallbackApplied {
    id: InstanceId,
    task_guid: TaskGuid,
    model: ModelId,
    step: Step,
}

enum Step {
    Retry(RetryScheduled),
    Applied { failed: bool },
}

impl CallbackApplied {
    /// The callback's answer once its unit of work has committed.
    fn answer(self, committed: &Committed) -> Result<CallbackAnswer> {
        let (id, task_guid) = (self.id, self.task_guid);
        let answer = |done| CallbackAnswer {
            process_instance_id: id.0,
            process_model_identifier: self.model.clone(),
            task_guid,
            done,
        };
        match (self.step, committed.error(id)) {
            (Step::Retry(retry), _) => Ok(answer(CallbackDone::RetryScheduled(retry))),
            (Step::Applied { failed: true }, Some(error)) => {
                Err(uncaught_failure(id, &self.model, task_guid, error))
            }
            (Step::Applied { failed: true }, None) => Ok(answer(CallbackDone::ErrorHandled)),
            (Step::Applied { failed: false }, _) => Ok(answer(CallbackDone::Completed)),
        }
    }
}

/// Applies a callback in `uow`: checks the task waits for it, records its logs, then completes
/// or fails the task, or schedules the retry of a transient failure.
async fn apply(uow: &mut UnitOfWork<'_>, callback: &Callback) -> Result<CallbackApplied> {
    let Callback {
        id,
        task_guid,
        outcome,
    } = callback;
    let (id, task_guid) = (*id, *task_guid);
    check_waiting(uow, id, task_guid).await?;
    let model = uow
        .process_model_identifier(id)
        .cloned()
        .ok_or_else(|| instance_cannot_be_found(id))?;
    let logs = match outcome {
        CallbackOutcome::Success { logs, .. } | CallbackOutcome::Failure { logs, .. } => logs,
    };
    uow.record_connector_logs(id, task_guid, logs).await?;
    let applied = |step| CallbackApplied {
        id,
        task_guid,
        model: model.clone(),
        step,
    };
    let event = match next_step(uow, id, task_guid, outcome).await? {
        NextStep::Apply(event) => event,
        NextStep::Retry(retry) => return Ok(applied(Step::Retry(retry))),
    };
    let failed = matches!(event, Event::ServiceFailed { .. });
    if let Applied::Refused(refused) = uow.apply(id, event).await? {
        return Err(match refused {
            EngineError::UnknownTask { .. } => callback_not_found(id, task_guid),
            _ => not_waiting(task_guid),
        });
    }
    uow.drop_connector_job(id, task_guid);
    Ok(applied(Step::Applied { failed }))
}

impl Batchable for Callback {
    type Part = CallbackApplied;
    type Answer = CallbackAnswer;

    fn alone<'a>(
        &'a self,
        pool: &'a PgPool,
        cache: &'a ModelCache,
    ) -> BoxFuture<'a, Result<CallbackAnswer>> {
        Box::pin(callback(pool, cache, self))
    }

    fn within<'a, 'c: 'a>(
        &'a self,
        uow: &'a mut UnitOfWork<'c>,
    ) -> BoxFuture<'a, Result<CallbackApplied>> {
        Box::pin(apply(uow, self))
    }

    fn answer(applied: CallbackApplied, committed: &Committed) -> Result<CallbackAnswer> {
        applied.answer(committed)
    }

    fn instance(&self) -> Option<InstanceId> {
        Some(self.id)
    }

    // `check_waiting` loads it first
    const LOCKS_ITS_INSTANCE_FIRST: bool = true;
}

/// Refuses a callback unless the instance (locked into `uow`) is not suspended and its service
/// task waits for one: `process_instance_cannot_be_found` (gone since the caller was
/// authorised), `process_instance_suspended`, `callback_not_found` (no such task) or
/// `not_waiting_for_callback`.
async fn check_waiting(
    uow: &mut UnitOfWork<'_>,
    id: InstanceId,
    task_guid: TaskGuid,
) -> Result<()> {
    if !uow.load(id).await? {
        return Err(instance_cannot_be_found(id));
    }
    if uow.is_suspended(id) {
        // the worker tries again later (it must not take a refusal as final: the task waits)
        return Err(crate::services::lifecycle::suspended(id));
    }
    // the engine's own rule: a service task whose call is due or under way
    let spec = uow.spec(id);
    let waiting = uow.state(id).and_then(|state| {
        let task = state.task(task_guid.0)?;
        let element = spec
            .as_ref()?
            .process(&state.process_id)?
            .element(&task.element_id);
        Some(element.is_some_and(|element| task.has_service_call(element)))
    });
    match waiting {
        Some(true) => Ok(()),
        Some(false) => Err(not_waiting(task_guid)),
        None => {
            let known = uow.stored_task(id, task_guid).await?;
            Err(match known {
                Some(_) => not_waiting(task_guid),
                None => callback_not_found(id, task_guid),
            })
        }
    }
}

/// What a callback leads to.
enum NextStep {
    /// This event is applied to the instance.
    Apply(Event),
    /// A transient failure, and the task's retries allow another attempt: scheduled.
    Retry(RetryScheduled),
}

/// The event a callback's outcome makes, or the retry it schedules.
async fn next_step(
    uow: &mut UnitOfWork<'_>,
    id: InstanceId,
    task_guid: TaskGuid,
    outcome: &CallbackOutcome,
) -> Result<NextStep> {
    Ok(match outcome {
        CallbackOutcome::Success { result, .. } => NextStep::Apply(Event::ServiceSucceeded {
            task_guid: task_guid.0,
            result: result.clone(),
        }),
        CallbackOutcome::Failure {
            error_code,
            message,
            transient,
            ..
        } => {
            if *transient {
                if let Some(retry) = schedule_retry(uow, id, task_guid).await? {
                    return Ok(NextStep::Retry(retry));
                }
            }
            NextStep::Apply(Event::ServiceFailed {
                task_guid: task_guid.0,
                error_code: error_code.clone(),
                message: message.clone(),
            })
        }
    })
}

/// `service_task_error`: the callback's failure was caught by no boundary, and the instance
/// is in error.
fn uncaught_failure(
    id: InstanceId,
    model: &ModelId,
    task_guid: TaskGuid,
    error: &crate::engine::InstanceError,
) -> Error {
    Error::refused(ErrorCode::ServiceTaskError, error.message.clone()).with_extra(json!({
        "process_instance_id": id,
        "process_model_identifier": model,
        "task_guid": task_guid,
        "status": "error",
        "command_error_code": error.error_code,
        "element_id": error.element_id,
    }))
}

fn not_waiting(task_guid: TaskGuid) -> Error {
    Error::refused(
        ErrorCode::NotWaitingForCallback,
        format!("task {task_guid} is not waiting for a callback"),
    )
}

/// A callback for an instance that does not exist, to a caller who may update it if it did
/// (the connector-proxy contract asks for 400 here; other endpoints answer 404).
pub fn instance_cannot_be_found(id: impl std::fmt::Display) -> Error {
    Error::refused(
        ErrorCode::ProcessInstanceCannotBeFound,
        format!("process instance {id} does not exist"),
    )
}

fn callback_not_found(id: InstanceId, task_guid: TaskGuid) -> Error {
    Error::refused(
        ErrorCode::CallbackNotFound,
        format!("process instance {id} has no service task {task_guid}"),
    )
}
