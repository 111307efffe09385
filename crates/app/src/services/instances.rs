//! Process instances: start, complete a user/manual task, show, list.

use super::unit_of_work::Applied;
pub use super::unit_of_work::InstanceOutcome;
use super::{retry_transaction, Error, ModelCache, Page, Result, UnitOfWork};
use crate::engine::{EngineError, Event, InstanceStatus, TaskState};
pub use crate::ids::{InstanceId, ModelId, TaskGuid};
use crate::services::ErrorCode;
use crate::store::{self, instances::InstanceRow, instances::TaskRow};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sqlx::PgPool;

/// Creates an instance of the model's primary process and runs it to its wait states.
/// `actor` (a token's subject) is the current user of the scripts that run.
pub async fn start(
    pool: &PgPool,
    cache: &ModelCache,
    model: &ModelId,
    data: &Map<String, Value>,
    actor: &str,
) -> Result<InstanceOutcome> {
    retry_transaction!(start_once(pool, cache, model, data, actor))
}

async fn start_once(
    pool: &PgPool,
    cache: &ModelCache,
    model: &ModelId,
    data: &Map<String, Value>,
    actor: &str,
) -> Result<InstanceOutcome> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    uow.act_as(actor);
    let id = uow.start_instance(model, data.clone()).await?;
    let committed = uow.commit().await?;
    Ok(committed.answer(id).expect("started in this unit"))
}

/// Completes a waiting user or manual task with `data` merged into the task data.
pub async fn complete_task(
    pool: &PgPool,
    cache: &ModelCache,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    data: &Map<String, Value>,
    actor: &str,
) -> Result<InstanceOutcome> {
    retry_transaction!(complete_task_once(
        pool,
        cache,
        instance_id,
        task_guid,
        data,
        actor
    ))
}

async fn complete_task_once(
    pool: &PgPool,
    cache: &ModelCache,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    data: &Map<String, Value>,
    actor: &str,
) -> Result<InstanceOutcome> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    uow.act_as(actor);
    if uow.load(instance_id).await? && uow.is_suspended(instance_id) {
        return Err(super::lifecycle::suspended(instance_id));
    }
    let event = Event::CompleteTask {
        task_guid: task_guid.0,
        data: data.clone(),
    };
    if let Applied::Refused(refused) = uow.apply(instance_id, event).await? {
        return Err(task_refusal(&mut uow, instance_id, task_guid, refused).await?);
    }
    let committed = uow.commit().await?;
    Ok(committed.answer(instance_id).expect("loaded by apply"))
}

/// Moves an instance to another version of its model (default: the newest), when every live
/// task's element exists there with the same kind; 409 `migration_not_possible` otherwise.
pub async fn migrate(
    pool: &PgPool,
    cache: &ModelCache,
    instance_id: InstanceId,
    target_version: Option<&str>,
) -> Result<Migrated> {
    retry_transaction!(migrate_once(pool, cache, instance_id, target_version))
}

async fn migrate_once(
    pool: &PgPool,
    cache: &ModelCache,
    id: InstanceId,
    target_version: Option<&str>,
) -> Result<Migrated> {
    let mut uow = UnitOfWork::begin(pool, cache).await?;
    if !uow.load(id).await? {
        return Err(instance_not_found(id));
    }
    let from = move_instance(&mut uow, id, target_version).await?;
    let committed = uow.commit().await?;
    Ok(Migrated {
        outcome: committed.answer(id).expect("loaded above"),
        previous_version: from,
    })
}

/// Moves a held instance to `target_version` (default: its model's current version) when the
/// target can carry its live tasks, and an instance in error its failed task too (so that a
/// retry runs the task as the target has it: the fix of a script); returns the version it
/// was on. A complete or terminated instance does not move.
pub(super) async fn move_instance(
    uow: &mut UnitOfWork<'_>,
    id: InstanceId,
    target_version: Option<&str>,
) -> Result<String> {
    let model = uow
        .process_model_identifier(id)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("instance {id} is not held"))?;
    let from = uow.model_version(id).unwrap_or_default().to_string();
    let target = match target_version {
        Some(version) => version.to_string(),
        None => uow
            .current_version(&model)
            .await?
            .ok_or_else(|| super::models::model_not_found(&model))?,
    };
    let target_spec = uow.version_spec(&model, &target).await?.ok_or_else(|| {
        Error::refused(
            ErrorCode::ProcessModelVersionNotFound,
            format!("process model '{model}' has no version '{target}'"),
        )
    })?;
    let status = uow.state(id).expect("loaded by the caller").status;
    if matches!(
        status,
        InstanceStatus::Complete | InstanceStatus::Terminated
    ) {
        return Err(Error::refused(
            ErrorCode::MigrationNotPossible,
            format!(
                "process instance {id} is {}; only a live instance or one in error moves",
                status.as_str()
            ),
        ));
    }
    if status == InstanceStatus::Error {
        uow.restore_failed_task(id).await?;
    }
    let state = uow.state(id).expect("loaded by the caller");
    let current = uow.spec(id).expect("loaded by the caller");
    let blockers = crate::engine::migration_blockers_between(state, &current, &target_spec);
    if !blockers.is_empty() {
        let listed = blockers
            .iter()
            .map(|b| format!("{}: {}", b.element_id, b.reason))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::refused(
            ErrorCode::MigrationNotPossible,
            format!("process instance {id} cannot move to version {target}: {listed}"),
        )
        .with_extra(json!({ "elements": blockers, "target_version": target })));
    }
    if target != from {
        uow.move_to_version(id, &target, target_spec).await?;
    }
    Ok(from)
}

/// An instance moved to another version (or left on its own).
pub struct Migrated {
    pub outcome: InstanceOutcome,
    pub previous_version: String,
}

/// The engine only holds live tasks: a guid it does not know may be a finished task
/// (`not_waiting`) or no task of this instance at all.
async fn task_refusal(
    uow: &mut UnitOfWork<'_>,
    instance_id: InstanceId,
    task_guid: TaskGuid,
    refused: EngineError,
) -> Result<Error> {
    let known = uow.stored_task(instance_id, task_guid).await?;
    Ok(match known {
        None => Error::refused(
            ErrorCode::TaskNotFound,
            format!("process instance {instance_id} has no task {task_guid}"),
        ),
        Some(task) => Error::refused(
            ErrorCode::NotWaiting,
            format!(
                "task {task_guid} ({}) is {}, not waiting: {refused}",
                task.element_id, task.state
            ),
        ),
    })
}

/// The outcome of a stored instance (a message replayed to the instance it reached).
pub fn outcome_of_row(row: InstanceRow) -> InstanceOutcome {
    let instance = Instance::from(row);
    InstanceOutcome {
        id: instance.id,
        process_model_identifier: instance.process_model_identifier,
        model_version: instance.model_version,
        process_id: instance.process_id,
        status: instance.status,
        error: instance.error,
        data: instance.data,
        created_at: instance.created_at,
        updated_at: instance.updated_at,
    }
}

/// The states an instance and its tasks are in (the enums every layer uses).
pub mod states {
    pub use crate::engine::{InstanceStatus, TaskState};
}

/// A process instance as stored (a list shows it with empty `data`, `correlations` and
/// `internal`).
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: InstanceId,
    pub process_model_identifier: ModelId,
    pub process_id: String,
    pub status: InstanceStatus,
    pub data: Value,
    pub correlations: Value,
    /// The engine's bookkeeping (its data objects are shown).
    pub internal: Value,
    /// `{element_id, message, error_code, file}` when it is in error.
    pub error: Option<Value>,
    /// The version of its model it runs on.
    pub model_version: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<InstanceRow> for Instance {
    fn from(row: InstanceRow) -> Instance {
        Instance {
            id: row.id,
            process_model_identifier: row.process_model_identifier,
            process_id: row.process_id,
            status: row.status,
            data: row.data.0,
            correlations: row.correlations.0,
            internal: row.internal.0,
            error: row.error.map(|error| error.0),
            model_version: row.model_version,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A task of an instance as stored.
#[derive(Debug, Clone)]
pub struct StoredTask {
    pub guid: TaskGuid,
    pub element_id: String,
    /// The BPMN element's type (`userTask`, ...).
    pub element_type: String,
    pub name: Option<String>,
    pub state: TaskState,
    /// The subprocess (or call, or multi-instance) task it runs in.
    pub scope: Option<TaskGuid>,
    /// A failed task's `{error_code, message}`.
    pub data: Option<Value>,
    pub retries_attempted: i32,
    pub retry_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The process its element belongs to (None for tasks stored before it was recorded).
    pub process_id: Option<String>,
}

impl From<TaskRow> for StoredTask {
    fn from(row: TaskRow) -> StoredTask {
        StoredTask {
            guid: row.guid,
            element_id: row.element_id,
            element_type: row.element_type,
            name: row.name,
            state: row.state,
            scope: row.scope,
            data: row.data.map(|data| data.0),
            retries_attempted: row.retries_attempted,
            retry_at: row.retry_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            process_id: row.process_id,
        }
    }
}

/// A timer of an instance that has not fired.
#[derive(Debug, Clone)]
pub struct PendingTimer {
    pub task_guid: TaskGuid,
    pub element_id: String,
    pub due_at: DateTime<Utc>,
}

impl From<store::timers::PendingTimer> for PendingTimer {
    fn from(row: store::timers::PendingTimer) -> PendingTimer {
        PendingTimer {
            task_guid: row.task_guid,
            element_id: row.element_id,
            due_at: row.due_at,
        }
    }
}

/// An instance with every task and its pending timers, read from one snapshot.
pub struct InstanceDetail {
    pub instance: Instance,
    /// The file of its version that holds its process (None when the version is gone).
    pub process_file_name: Option<String>,
    pub tasks: Vec<StoredTask>,
    pub pending_timers: Vec<PendingTimer>,
}

/// An instance with its status, data, error and every task.
pub async fn show(pool: &PgPool, cache: &ModelCache, id: InstanceId) -> Result<InstanceDetail> {
    // one snapshot for the row and its tasks, so a step committing in between is seen whole
    let mut conn = pool.begin().await?;
    store::read_only_snapshot(&mut conn).await?;
    let instance = store::instances::find(&mut conn, id)
        .await?
        .ok_or_else(|| instance_not_found(id))?;
    let tasks = store::instances::all_tasks(&mut conn, id).await?;
    let pending_timers = store::timers::of_instance(&mut conn, id).await?;
    conn.commit().await?;
    // after the snapshot: a version not compiled yet is compiled without holding it open
    let spec = cache
        .version_spec(
            &mut *pool.acquire().await?,
            &instance.process_model_identifier,
            &instance.model_version,
        )
        .await?;
    let process_file_name = spec
        .as_ref()
        .and_then(|spec| spec.process(&instance.process_id))
        .map(|process| process.file.clone());
    Ok(InstanceDetail {
        process_file_name,
        instance: instance.into(),
        tasks: tasks.into_iter().map(StoredTask::from).collect(),
        pending_timers: pending_timers.into_iter().map(PendingTimer::from).collect(),
    })
}

/// One page of instances, newest first.
pub struct InstancePage {
    pub results: Vec<Instance>,
    pub pagination: super::Pagination,
}

/// Which instances a list shows; `None` is no filter.
#[derive(Debug, Clone, Copy)]
pub struct InstanceFilter<'a> {
    pub process_model_identifier: Option<&'a ModelId>,
    pub status: Option<InstanceStatus>,
    /// A correlation value the instance has established: the property and the value as
    /// written in a query (`order_id=17` matches the text `"17"` and the number `17`).
    pub correlation: Option<(&'a str, &'a str)>,
    /// An object the instance's data contains.
    pub data: Option<&'a Value>,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
}

/// One page of instances (lists show them without their data), newest first.
pub async fn list(pool: &PgPool, filter: &InstanceFilter<'_>, page: Page) -> Result<InstancePage> {
    let correlations: Vec<Value> = filter
        .correlation
        .map(|(property, value)| correlation_values(property, value))
        .unwrap_or_default();
    let search = store::instances::InstanceSearch {
        process_model_identifier: filter.process_model_identifier,
        status: filter.status,
        correlations: &correlations,
        data: filter.data,
        created_after: filter.created_after,
        created_before: filter.created_before,
    };
    let mut conn = pool.acquire().await?;
    let rows = store::instances::list(&mut conn, &search, page.limit(), page.offset()).await?;
    let total = store::instances::count(&mut conn, &search, page.count_up_to()).await?;
    Ok(InstancePage {
        pagination: page.pagination_of(total, rows.len()),
        results: rows.into_iter().map(Instance::from).collect(),
    })
}

/// The objects an instance's correlation values contain when `property` has `value` as a
/// query writes it: the text, and the JSON value it reads as when it is a number or a
/// boolean (a retrieval expression may yield either).
pub fn correlation_values(property: &str, value: &str) -> Vec<Value> {
    let mut wanted = vec![serde_json::json!({ property: value })];
    if let Ok(typed @ (Value::Number(_) | Value::Bool(_))) = serde_json::from_str::<Value>(value) {
        wanted.push(serde_json::json!({ property: typed }));
    }
    wanted
}

/// The model of an instance, for authorisation before a step (`None`: no such instance).
pub async fn model_of(pool: &PgPool, id: InstanceId) -> Result<Option<ModelId>> {
    Ok(store::instances::model_of(pool, id).await?)
}

/// The one answer for an instance that does not exist, or that the caller may not see.
pub fn instance_not_found(id: impl std::fmt::Display) -> Error {
    Error::refused(
        ErrorCode::ProcessInstanceNotFound,
        format!("process instance {id} does not exist"),
    )
}
