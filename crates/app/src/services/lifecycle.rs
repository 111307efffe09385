//! What operators do to an instance: suspend, resume, terminate, retry. One transaction each,
//! under the instance's lock.

use super::instances::instance_not_found;
use super::unit_of_work::Applied;
use super::{retry_transaction, Error, ErrorCode, ModelCache, Result, UnitOfWork};
use crate::engine::{EngineError, Event, InstanceStatus};
use crate::ids::InstanceId;
use crate::services::instances::InstanceOutcome;
use sqlx::PgPool;

/// An operator's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop taking messages, firing timers and calling connectors until resumed (again: no
    /// change).
    Suspend,
    /// Take them again; what came due meanwhile happens now.
    Resume,
    /// Cancel everything live and end (again: no change).
    Terminate,
    /// Run the task that failed again.
    Retry,
}

impl Command {
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Suspend => "suspended",
            Command::Resume => "resumed",
            Command::Terminate => "terminated",
            Command::Retry => "retried",
        }
    }

    /// Whether an instance with `status` is already where the command leads.
    fn already_done(self, status: InstanceStatus) -> bool {
        matches!(
            (self, status),
            (Command::Suspend, InstanceStatus::Suspended)
                | (Command::Terminate, InstanceStatus::Terminated)
        )
    }

    /// Why an instance with `status` cannot take the command, if it cannot.
    fn refusal(self, id: InstanceId, status: InstanceStatus) -> Option<Error> {
        let is = status.as_str();
        match (self, status) {
            (_, InstanceStatus::Complete) | (Command::Suspend, InstanceStatus::Terminated) => {
                Some(Error::refused(
                    ErrorCode::ProcessInstanceFinished,
                    format!(
                        "process instance {id} is {is}: it cannot be {}",
                        self.as_str()
                    ),
                ))
            }
            (Command::Suspend, InstanceStatus::Error) => Some(Error::refused(
                ErrorCode::ProcessInstanceFinished,
                format!(
                    "process instance {id} is in error, which stops it already: retry or \
                     terminate it"
                ),
            )),
            (Command::Resume, s) if s != InstanceStatus::Suspended => Some(Error::refused(
                ErrorCode::ProcessInstanceNotSuspended,
                format!("process instance {id} is {is}, not suspended"),
            )),
            (Command::Retry, s) if s != InstanceStatus::Error => Some(Error::refused(
                ErrorCode::ProcessInstanceNotInError,
                format!("process instance {id} is {is}, not in error: there is nothing to retry"),
            )),
            _ => None,
        }
    }
}

/// Carries out `command` on an instance; `actor` (a token's subject) is the current user of
/// the scripts a retry runs.
pub async fn run(
    pool: &PgPool,
    cache: &ModelCache,
    id: InstanceId,
    command: Command,
    actor: &str,
) -> Result<InstanceOutcome> {
    retry_transaction!(run_once(pool, cache, id, command, actor, None))
}

/// Retries an instance in error after moving it to `target_version` of its model, in one
/// transaction: the failed task runs as that version has it (a script fixed in a new upload).
/// Refused as a migration is (409 `migration_not_possible`) when the version cannot carry it.
pub async fn retry_on_version(
    pool: &PgPool,
    cache: &ModelCache,
    id: InstanceId,
    target_version: &str,
    actor: &str,
) -> Result<InstanceOutcome> {
    retry_transaction!(run_once(
        pool,
        cache,
        id,
        Command::Retry,
        actor,
        Some(target_version)
    ))
}

async fn run_once(
    pool: &PgPool,
    cache: &ModelCache,
    id: InstanceId,
    command: Command,
    actor: &str,
    target_version: Option<&str>,
) -> Result<InstanceOutcome> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    uow.act_as(actor);
    if !uow.load(id).await? {
        return Err(instance_not_found(id));
    }
    let status = uow.state(id).expect("loaded above").status;
    if let Some(refused) = command.refusal(id, status) {
        return Err(refused);
    }
    if !command.already_done(status) {
        let applied = match command {
            Command::Suspend => uow.suspend(id).await?,
            Command::Resume => uow.resume(id).await?,
            Command::Terminate => uow.terminate(id).await?,
            Command::Retry => {
                if let Some(target) = target_version {
                    super::instances::move_instance(&mut uow, id, Some(target)).await?;
                }
                uow.restore_failed_task(id).await?;
                uow.apply(id, Event::Retry).await?
            }
        };
        if let Applied::Refused(refused) = applied {
            return Err(refusal_of_engine(id, command, refused));
        }
    }
    let committed = uow.commit().await?;
    Ok(committed.answer(id).expect("loaded above"))
}

/// The engine refused what the status check let through: only a retry of an error that no
/// task caused can get here.
fn refusal_of_engine(id: InstanceId, command: Command, refused: EngineError) -> Error {
    let code = match command {
        Command::Retry => ErrorCode::NothingToRetry,
        _ => ErrorCode::ProcessInstanceFinished,
    };
    Error::refused(code, format!("process instance {id}: {refused}"))
}

/// 409 `process_instance_suspended`: a task completion or callback for a suspended instance.
pub fn suspended(id: InstanceId) -> Error {
    Error::refused(
        ErrorCode::ProcessInstanceSuspended,
        format!("process instance {id} is suspended: resume it first"),
    )
}
