//! Persistence: instances are read from their row and live tasks when first locked, and
//! every stepped instance is written back (row and changed tasks) once, at commit.

use super::super::Result;
use super::{HandedJob, Loaded, Row, UnitOfWork};
use crate::engine::{InstanceState, InstanceStatus, Task, TaskState};
use crate::ids::InstanceId;
use crate::ids::ModelId;
use crate::store::{self, instances::InstanceRow};
use anyhow::anyhow;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use uuid::Uuid;

impl<'c> UnitOfWork<'c> {
    /// Writes every stepped instance and its changed tasks, the sends routed meanwhile, the
    /// jobs of the calls handed meanwhile and the receives left waiting, in one round trip (the
    /// transaction stays open). A receive written that may have a buffered send claims it
    /// now, as a receive written in a statement of its own does: `true` when one did, and its
    /// delivery is queued (to run, and be written, before the commit).
    pub(super) async fn flush(&mut self) -> Result<bool> {
        if self.reading {
            if let Some(id) = self.order.iter().find(|id| self.instances[id].dirty) {
                return Err(anyhow!("a reading unit of work stepped instance {id}").into());
            }
            if !self.done_jobs.is_empty() {
                return Err(anyhow!("a reading unit of work dropped connector jobs").into());
            }
            if !self.routed_sends.is_empty() {
                return Err(anyhow!("a reading unit of work routed messages").into());
            }
            if !self.handed_calls.is_empty() {
                return Err(anyhow!("a reading unit of work recorded connector calls").into());
            }
            if !self.unwritten_receives.is_empty() {
                return Err(anyhow!("a reading unit of work left receives waiting").into());
            }
            return Ok(false);
        }
        // (a new instance has stepped: its first step)
        let stepped: Vec<InstanceId> = (self.order.iter())
            .filter(|id| self.instances[id].dirty || self.new_rows.contains(id))
            .copied()
            .collect();
        self.new_rows.clear();
        self.new_rows_awaited_names.clear();
        let written = self.rows_of(&stepped).await?;
        let done_jobs = std::mem::take(&mut self.done_jobs);
        let sends = std::mem::take(&mut self.routed_sends);
        let calls: Vec<&store::jobs::LeasedCall> = (self.handed_calls.iter())
            .filter_map(|(_, handed)| match handed {
                HandedJob::Unwritten(call) => Some(call),
                HandedJob::Written(_) => None,
            })
            .collect();
        let receives = std::mem::take(&mut self.unwritten_receives);
        if written.is_empty() && sends.is_empty() && calls.is_empty() && receives.is_empty() {
            for (id, task_guid) in done_jobs {
                store::jobs::cancel_for_task(&mut self.tx, id, task_guid).await?;
            }
            return Ok(false);
        }
        let updates: Vec<store::instances::InstanceUpdate<'_>> =
            written.iter().map(|w| w.update(&self.instances)).collect();
        let updated = store::instances::update_all(
            &mut self.tx,
            &updates,
            &done_jobs,
            &sends,
            &calls,
            &receives,
        )
        .await;
        let updated = self.catalog_checked(updated)?;
        let mut job_ids = updated.job_ids.into_iter();
        for (_, handed) in &mut self.handed_calls {
            if let HandedJob::Unwritten(call) = handed {
                let id = job_ids.next().expect("a job id for each call written");
                *handed = HandedJob::Written(call.job(id));
            }
        }
        self.written(&written, updated.updated_at);
        let queued = self.queue.len();
        for (n, receive_id) in updated.maybe_buffered {
            let receive = &receives[n];
            self.match_new_receive(
                receive.process_instance_id,
                receive.task_guid.0,
                receive_id,
                receive.name.clone(),
                receive.correlation_key.clone(),
            )
            .await?;
        }
        Ok(self.queue.len() > queued)
    }

    /// Writes the rows of the new instances whose rows are not stored yet (a write-back of
    /// them alone), for a statement that may see them.
    pub(super) async fn write_new_rows(&mut self) -> Result<()> {
        let new = std::mem::take(&mut self.new_rows);
        self.new_rows_awaited_names.clear();
        let written = self.rows_of(&new).await?;
        let updates: Vec<store::instances::InstanceUpdate<'_>> =
            written.iter().map(|w| w.update(&self.instances)).collect();
        let updated =
            store::instances::update_all(&mut self.tx, &updates, &[], &[], &[], &[]).await;
        let updated = self.catalog_checked(updated)?;
        self.written(&written, updated.updated_at);
        Ok(())
    }

    /// A lookup's or a write-back's result; one that found the message catalog changed (a
    /// new instance's model at another version than the catalog said, for a write-back) fails,
    /// and the catalog is read afresh when the transaction runs again.
    pub(super) fn catalog_checked<T>(&self, result: sqlx::Result<T>) -> Result<T> {
        if let Err(e) = &result {
            if store::is_catalog_changed(e) {
                self.cache.catalog().forget();
            }
        }
        Ok(result?)
    }

    /// The rows to write of these instances (each stepped since its last write-back, or new).
    async fn rows_of(&mut self, ids: &[InstanceId]) -> Result<Vec<Written>> {
        let mut written = Vec::with_capacity(ids.len());
        for id in ids {
            let loaded = self.instances.get_mut(id).expect("ordered ids are loaded");
            let changed = loaded.changed_tasks.take();
            let (tasks, live_tasks) = task_rows(&loaded.state, changed).await?;
            let state = &loaded.state;
            written.push(Written {
                id: *id,
                status: state.status,
                data: Value::Object(state.data.clone()),
                correlations: json!(state.correlations),
                internal: json!(state.internal),
                error: state.error.as_ref().map(|e| json!(e)),
                tasks,
                live_tasks,
            });
        }
        Ok(written)
    }

    /// Notes the instances as written, at `updated_at` (each in turn).
    fn written(&mut self, written: &[Written], updated_at: Vec<DateTime<Utc>>) {
        for (w, updated_at) in written.iter().zip(updated_at) {
            let loaded = self
                .instances
                .get_mut(&w.id)
                .expect("written ids are loaded");
            if let Row::New { .. } = loaded.row {
                // (its row's `created_at`: the transaction's time, as `updated_at`)
                loaded.created_at = updated_at;
                loaded.row = Row::Stored;
            }
            loaded.updated_at = updated_at;
            loaded.dirty = false;
        }
    }
}

/// An instance to write back, as its row and tasks are written.
struct Written {
    id: InstanceId,
    status: InstanceStatus,
    data: Value,
    correlations: Value,
    internal: Value,
    error: Option<Value>,
    tasks: Box<RawValue>,
    live_tasks: Box<RawValue>,
}

impl Written {
    fn update<'a>(
        &'a self,
        instances: &'a std::collections::HashMap<InstanceId, Loaded>,
    ) -> store::instances::InstanceUpdate<'a> {
        let loaded = &instances[&self.id];
        let new = match &loaded.row {
            Row::Stored => None,
            Row::New { started_by } => Some(store::instances::NewInstance {
                process_model_identifier: &loaded.process_model_identifier,
                model_version: &loaded.model_version,
                process_id: &loaded.state.process_id,
                started_by: started_by.as_deref(),
            }),
        };
        store::instances::InstanceUpdate {
            id: self.id,
            shard_key: store::shards::of_instance(self.id),
            status: self.status,
            data: &self.data,
            correlations: &self.correlations,
            internal: &self.internal,
            error: self.error.as_ref(),
            tasks: &self.tasks,
            live_tasks: &self.live_tasks,
            new,
        }
    }
}

impl Loaded {
    /// The parts of this instance its answer shows.
    pub(super) fn outcome(&self, id: InstanceId) -> InstanceOutcome {
        InstanceOutcome {
            id,
            process_model_identifier: self.process_model_identifier.clone(),
            model_version: self.model_version.clone(),
            process_id: self.state.process_id.clone(),
            status: self.state.status,
            error: self.state.error.as_ref().map(|e| json!(e)),
            data: Value::Object(self.state.data.clone()),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// An instance as a start, a task completion or a delivered message leaves it: its status
/// and error, and its task data.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceOutcome {
    pub id: InstanceId,
    pub process_model_identifier: ModelId,
    pub model_version: String,
    pub process_id: String,
    pub status: InstanceStatus,
    /// `{element_id, message, error_code, file}` when it is in error.
    pub error: Option<Value>,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Task rows serialised where they are asked for; more go to a blocking thread.
const INLINE_TASK_ROWS: usize = 64;

/// The rows of the changed tasks and of the live ones, serialised on a blocking thread when
/// there are many: a step may have run thousands of tasks, and serialising them would hold up
/// an async thread.
async fn task_rows(
    state: &InstanceState,
    changed: Vec<(Task, Option<String>)>,
) -> Result<(Box<RawValue>, Box<RawValue>)> {
    let changed_and_live = changed.len() + state.tasks.len();
    let live = state.tasks.clone();
    let serialise = move || {
        let changed: Vec<TaskRecord> = changed
            .iter()
            .map(|(task, process)| TaskRecord::of(task, process.as_deref()))
            .collect();
        // the live tasks are kept as the engine's tasks serialise (read back the same way)
        Ok::<_, serde_json::Error>((
            serde_json::value::to_raw_value(&changed)?,
            serde_json::value::to_raw_value(&live)?,
        ))
    };
    // a few rows cost less than the thread hop
    let rows = if changed_and_live <= INLINE_TASK_ROWS {
        serialise()
    } else {
        tokio::task::spawn_blocking(serialise)
            .await
            .map_err(|e| anyhow!("serialising the tasks of a step failed: {e}"))?
    };
    Ok(rows.map_err(|e| anyhow!("the tasks of a step cannot be serialised: {e}"))?)
}

/// A task as its `tasks` row is written: the columns `store::instances::update` reads with
/// `jsonb_to_recordset`, and the process its element belongs to.
#[derive(Serialize)]
struct TaskRecord<'a> {
    guid: Uuid,
    element_id: &'a str,
    element_type: &'a str,
    name: Option<&'a str>,
    state: TaskState,
    scope: Option<Uuid>,
    data: Option<&'a Value>,
    process_id: Option<&'a str>,
}

impl<'a> TaskRecord<'a> {
    fn of(task: &'a Task, process_id: Option<&'a str>) -> TaskRecord<'a> {
        TaskRecord {
            guid: task.guid,
            element_id: &task.element_id,
            element_type: &task.element_type,
            name: task.name.as_deref(),
            state: task.state,
            scope: task.scope,
            data: task.data.as_ref(),
            process_id,
        }
    }
}

/// Rebuilds the engine's state of an instance from its row and live tasks.
pub(super) fn state_from_rows(row: &InstanceRow, live_tasks: Value) -> Result<InstanceState> {
    let tasks: Vec<Task> = serde_json::from_value(live_tasks)
        .map_err(|e| anyhow!("stored tasks of instance {} are unreadable: {e}", row.id))?;
    let state = InstanceState {
        process_id: row.process_id.clone(),
        status: row.status,
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
