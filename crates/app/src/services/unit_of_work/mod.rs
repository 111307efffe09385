//! One transaction in which any number of process instances step: the instance a request
//! is about, and every instance its messages start or resume. Instances are locked
//! (`FOR UPDATE`) when first touched and written back once, at commit.
//!
//! Work is a FIFO queue rather than recursion: a step's effects may start or resume other
//! instances, whose effects may come back to the first one; the queue runs them in order.
//!
//! By job: `starts` (create an instance, its first step), `steps` (apply events to held
//! instances), `effects` (the work queue, what each effect does), `engine_runs` (the engine
//! run where its scripts may run, and what a run came to), `callees` (processes and decisions
//! of other models), `routing` (messages to receives, start events or the buffer),
//! `look_ahead` (a batch's correlation lookups in one statement), `persistence` (rows in, rows
//! out at commit), `records` (the other rows a use case reads or writes in the same
//! transaction, each by what it does), `lifecycle` (suspend, resume, terminate),
//! `data_stores` (what the steps read and write). Nothing hands out the transaction itself.
//!
//! A new instance that a message starts has its row written by its first write-back (one
//! insert, with its first step's state), not when it is created: every statement of the unit
//! that may read or refer to it goes through [`UnitOfWork::db`], which writes such rows
//! first; only statements that cannot see an instance's row use the transaction as it is.
//! Likewise a receive a step leaves waiting (plain PostgreSQL): the write-back writes it and
//! looks in the buffer for it, in its one statement; a statement that may see it first
//! ([`UnitOfWork::db_with_receives`], a lookup of its name) writes it before, as it came.

mod callees;
mod data_stores;
mod effects;
mod engine_runs;
mod lifecycle;
mod look_ahead;
mod persistence;
mod records;
mod routing;
mod starts;
mod steps;

pub use engine_runs::EvaluatedCall;
pub use persistence::InstanceOutcome;
pub use routing::RetrievalFailure;

use super::service_tasks::{Job, ReservedSlot};
use super::{ModelCache, Result};
use crate::bpmn::ModelSpec;
use crate::engine::{EngineError, Event, InstanceError, InstanceState};
use crate::ids::ModelId;
use crate::ids::{InstanceId, MessageId, TaskGuid};
use crate::store::{self, instances::InstanceRow};
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use uuid::Uuid;

/// More steps than this in one transaction means instances keep messaging each other.
const MAX_STEPS: usize = 1_000;

pub struct UnitOfWork<'c> {
    /// Statements go through [`UnitOfWork::db`] unless they cannot see an instance's row
    /// (see `new_rows`).
    tx: Transaction<'static, Postgres>,
    cache: &'c ModelCache,
    instances: HashMap<InstanceId, Loaded>,
    /// Load order, so instances are written back in the order they were locked.
    order: Vec<InstanceId>,
    queue: VecDeque<Work>,
    steps: usize,
    /// Receives this unit has routed a message to; they are marked completed when the send
    /// is recorded (every writer of a receive holds its instance's lock, so none can take
    /// them meanwhile), and no other message of this unit may take them.
    claimed_receives: Vec<MessageId>,
    /// Who moved the instances (a token's subject): `get_current_user()` in their scripts.
    actor: Option<String>,
    /// Signals delivered by this unit: (signal name, instance).
    signal_deliveries: Vec<(String, InstanceId)>,
    /// Instances started by signals in this unit: (signal name, instance).
    signal_starts: Vec<(String, InstanceId)>,
    /// Tasks a message was routed to in this unit (their step may still be queued): another
    /// message for one of them waits until that step has run.
    deliveries_in_flight: std::collections::HashSet<Uuid>,
    /// The data store rows this unit's steps loaded, by (model, store id): their writes go
    /// there (locked when loaded) without looking them up again.
    data_store_rows: HashMap<(ModelId, String), i64>,
    /// The message catalog's version of the retrievals and triggers this unit used (see
    /// `services::message_catalog`): its correlation lookups check it.
    catalog_seen: CatalogSeen,
    /// Models whose instances lock this unit holds (shared, until its commit).
    models_locked: std::collections::HashSet<ModelId>,
    /// A unit that only reads: it loads instances without their lock, and may not write them.
    reading: bool,
    /// Connector calls this unit recorded leased, handed to this replica's dispatcher once it
    /// has committed (dropped with it otherwise, their slots freed).
    handed_calls: Vec<(ReservedSlot, HandedJob)>,
    /// Tasks whose connector jobs this unit is done with: deleted when it writes its instances
    /// back (in the same statement), or before a call of the same task is recorded again.
    done_jobs: Vec<(InstanceId, TaskGuid)>,
    /// The buckets of the sends this unit stored, to read them back from their own.
    recorded_sends: HashMap<MessageId, store::shards::ShardKey>,
    /// Sends routed to a receive or to a new instance, stored when the instances are written
    /// back (in the same statement): nothing of this unit reads them before its commit.
    routed_sends: Vec<store::messages::RoutedSend>,
    /// Receives this unit left waiting whose rows are not written yet (plain PostgreSQL):
    /// written by the next write-back, which also looks in the buffer for them, or before a
    /// statement that may see them ([`UnitOfWork::db_with_receives`], a lookup of their name).
    unwritten_receives: Vec<store::messages::NewReceive>,
    /// Instances this unit created whose rows are not written yet: written by the next
    /// write-back, or by [`UnitOfWork::db`] before a statement that may see them.
    new_rows: Vec<InstanceId>,
    /// The message names that receives of `new_rows` wait for: a correlation lookup of one of
    /// them, which finds a receive's instance by its row, writes those rows first.
    new_rows_awaited_names: Vec<String>,
    /// The next instance id, as the last correlation lookup for a send that may start a model
    /// drew it: the instance that send starts takes it.
    next_instance_id: Option<InstanceId>,
    /// The lookups of a batch's sends made ahead, each taken when its send is routed.
    looked_ahead: Vec<look_ahead::LookedAhead>,
    /// The names of the receives this unit added since its lookups ahead.
    names_waited_since_ahead: Vec<String>,
    /// The correlation values of a batch's sends computed for their lookups ahead.
    computed_ahead: Vec<look_ahead::ComputedAhead>,
}

/// The job of a connector call a unit of work hands to its replica's dispatcher: written when
/// the unit writes its instances back (in the same statement), or before the unit's next
/// other statement on jobs, which must find it.
enum HandedJob {
    Unwritten(store::jobs::LeasedCall),
    Written(Job),
}

impl HandedJob {
    fn instance(&self) -> InstanceId {
        match self {
            HandedJob::Unwritten(call) => call.process_instance_id,
            HandedJob::Written(job) => job.process_instance_id,
        }
    }

    fn task_guid(&self) -> TaskGuid {
        match self {
            HandedJob::Unwritten(call) => call.task_guid,
            HandedJob::Written(job) => job.task_guid,
        }
    }
}

/// Which version of the message catalog a unit of work used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum CatalogSeen {
    #[default]
    Nothing,
    At(i64),
    /// Two versions: what was used cannot all be current, and the next check fails.
    Mixed,
}

impl CatalogSeen {
    fn and(self, version: i64) -> CatalogSeen {
        match self {
            CatalogSeen::Nothing => CatalogSeen::At(version),
            CatalogSeen::At(seen) if seen == version => self,
            _ => CatalogSeen::Mixed,
        }
    }

    /// What `workflow_catalog_is` is asked: null for nothing to check, and for a mix a version
    /// the catalog is never at.
    fn expected(self) -> Option<i64> {
        match self {
            CatalogSeen::Nothing => None,
            CatalogSeen::At(version) => Some(version),
            CatalogSeen::Mixed => Some(-1),
        }
    }
}

struct Loaded {
    /// Whether its row is stored.
    row: Row,
    process_model_identifier: ModelId,
    model_version: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// The version's spec, linked with the processes it called from other models.
    spec: Arc<ModelSpec>,
    callees: callees::Callees,
    state: InstanceState,
    /// Stepped since the last flush.
    dirty: bool,
    /// Tasks changed by the steps since the last flush (the engine's `dirty` flags only
    /// cover its last step), to upsert.
    changed_tasks: ChangedTasks,
}

/// Tasks to write at the next flush, in creation order (so the task list reads as the
/// instance ran), the latest version of each task winning, each with the process its element
/// belongs to. Indexed by guid: a step that runs thousands of tasks must not compare each with
/// all the others. Kept as tasks, not rows: rows are built and serialised off the async
/// threads, at the flush.
#[derive(Default)]
struct ChangedTasks {
    tasks: Vec<(crate::engine::Task, Option<String>)>,
    position: HashMap<Uuid, usize>,
}

impl ChangedTasks {
    fn remember(&mut self, task: crate::engine::Task, process: Option<String>) {
        match self.position.get(&task.guid) {
            Some(&at) => self.tasks[at] = (task, process),
            None => {
                self.position.insert(task.guid, self.tasks.len());
                self.tasks.push((task, process));
            }
        }
    }

    /// The tasks, in order; none are left.
    fn take(&mut self) -> Vec<(crate::engine::Task, Option<String>)> {
        self.position.clear();
        std::mem::take(&mut self.tasks)
    }
}

impl Loaded {
    /// Notes a task to write at the next flush, with its element's process as the spec it
    /// stepped against says (a later migration in this unit may change the spec).
    fn remember(&mut self, task: crate::engine::Task) {
        let process = self
            .spec
            .process(&self.state.process_id)
            .and_then(|process| process.elements.get(&task.element_id))
            .map(|element| element.process.clone());
        self.changed_tasks.remember(task, process);
    }
}

/// Where an instance's row is.
enum Row {
    Stored,
    /// Not written yet: the next write-back inserts it, at the model's version the message
    /// catalog gave (checked then), started by the unit's actor.
    New {
        started_by: Option<String>,
    },
}

enum Work {
    Step(InstanceId, Event),
    Effects(InstanceId, Vec<crate::engine::Effect>),
    /// A signal (name, payload) for an instance that waited for it when it was thrown:
    /// delivered if the instance still waits (the delivery takes its waits under its lock, so
    /// exactly once).
    Signal(InstanceId, String, Value),
    /// A receive of a task that already has a message on its way in this unit (a catch with
    /// several messages): it looks in the buffer once that delivery has stepped, if the task
    /// still waits for it (its correlation key is read then when not given).
    MatchBuffer {
        id: InstanceId,
        task_guid: Uuid,
        receive_id: MessageId,
        name: String,
        key: Option<String>,
    },
}

/// What became of an event a caller applied to an instance.
#[derive(Debug)]
pub enum Applied {
    /// The instance stepped (and ran on to its wait states).
    Stepped,
    /// A caller mistake (task not waiting, unknown task): nothing changed.
    Refused(EngineError),
}

/// The instances a committed unit of work held, as they were written.
pub struct Committed {
    instances: HashMap<InstanceId, Loaded>,
}

impl Committed {
    /// `{"process_instance": {...}, "task_data": {...}}` for an instance the unit held.
    pub fn answer(&self, id: InstanceId) -> Option<InstanceOutcome> {
        self.instances.get(&id).map(|loaded| loaded.outcome(id))
    }

    /// The instance's error after the unit, if it ended in one.
    pub fn error(&self, id: InstanceId) -> Option<&InstanceError> {
        self.instances.get(&id)?.state.error.as_ref()
    }
}

/// Where a sent message went.
#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    /// Completed the waiting receive of this instance.
    Delivered {
        instance_id: InstanceId,
        receive_id: MessageId,
    },
    /// Started this instance through a Message Start Event.
    Started { instance_id: InstanceId },
    /// Kept `ready` for a receive that appears later.
    Buffered,
    /// Nothing waits for it and it may not be buffered. `cause` says why, for the caller;
    /// `early_for`: a live instance that has the message's correlation values but does not
    /// wait for it (yet).
    NotAccepted {
        cause: String,
        reason: NoMatch,
        early_for: Option<InstanceId>,
    },
}

/// Why a send found no receiver, as a code (the message's `failure_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoMatch {
    /// Nothing waits for the name and no model starts with it.
    NoReceiver,
    /// Instances wait for the name, none with the message's correlation values.
    CorrelationMismatch,
}

impl From<NoMatch> for store::messages::FailureReason {
    fn from(no_match: NoMatch) -> Self {
        match no_match {
            NoMatch::NoReceiver => store::messages::FailureReason::NoReceiver,
            NoMatch::CorrelationMismatch => store::messages::FailureReason::CorrelationMismatch,
        }
    }
}

/// A message being sent: from the API (with its stored row when it has an idempotency key)
/// or thrown by an instance's task.
pub struct OutgoingMessage<'a> {
    pub id: Option<MessageId>,
    /// Its bucket (`store::shards::bucket_of_message`): where its row goes, and an instance it
    /// starts.
    pub bucket: Option<i64>,
    pub name: &'a str,
    pub payload: &'a Value,
    /// The throwing instance and task.
    pub sender: Option<(InstanceId, Uuid)>,
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
        Ok(UnitOfWork::with(pool.begin().await?, cache))
    }

    /// A unit for a batch of group commit: one that waits a bounded time for a lock
    /// ([`super::group_commit::BEGIN_BATCH`], sent with its `BEGIN` in one round trip).
    pub async fn begin_batch(pool: &PgPool, cache: &'c ModelCache) -> Result<UnitOfWork<'c>> {
        let tx = pool.begin_with(super::group_commit::BEGIN_BATCH).await?;
        Ok(UnitOfWork::with(tx, cache))
    }

    /// A unit that only reads: its instances are loaded without their lock (as of their last
    /// commit, not waiting for a step under way) and it writes nothing, so its commit is not
    /// one Postgres has to make durable (unless a model's data stores were read, which locks
    /// their rows). A step in it is an error at commit.
    pub async fn begin_reading(pool: &PgPool, cache: &'c ModelCache) -> Result<UnitOfWork<'c>> {
        let mut unit = UnitOfWork::with(pool.begin().await?, cache);
        unit.reading = true;
        Ok(unit)
    }

    fn with(tx: Transaction<'static, Postgres>, cache: &'c ModelCache) -> UnitOfWork<'c> {
        UnitOfWork {
            tx,
            cache,
            instances: HashMap::new(),
            order: Vec::new(),
            queue: VecDeque::new(),
            steps: 0,
            claimed_receives: Vec::new(),
            actor: None,
            signal_deliveries: Vec::new(),
            signal_starts: Vec::new(),
            deliveries_in_flight: Default::default(),
            data_store_rows: HashMap::new(),
            catalog_seen: CatalogSeen::Nothing,
            models_locked: Default::default(),
            reading: false,
            handed_calls: Vec::new(),
            done_jobs: Vec::new(),
            recorded_sends: HashMap::new(),
            routed_sends: Vec::new(),
            unwritten_receives: Vec::new(),
            new_rows: Vec::new(),
            new_rows_awaited_names: Vec::new(),
            next_instance_id: None,
            looked_ahead: Vec::new(),
            names_waited_since_ahead: Vec::new(),
            computed_ahead: Vec::new(),
        }
    }

    /// The transaction, for a statement that may read or refer to any instance of this unit:
    /// the rows of new ones that are not written yet are written first.
    async fn db(&mut self) -> Result<&mut sqlx::PgConnection> {
        if !self.new_rows.is_empty() {
            self.write_new_rows().await?;
        }
        Ok(&mut self.tx)
    }

    /// The transaction, for a statement that can neither read nor refer to an instance's row
    /// (the catalog, models, secrets, receives by name): rows not written yet stay so.
    fn db_without_new_rows(&mut self) -> &mut sqlx::PgConnection {
        &mut self.tx
    }

    /// The scripts this unit runs see `subject` as the current user.
    pub fn act_as(&mut self, subject: &str) {
        self.actor = Some(subject.to_string());
    }

    /// Locks and loads an instance unless this unit of work already holds it (a reading unit
    /// loads it without the lock). `Ok(false)` when it does not exist.
    pub async fn load(&mut self, id: InstanceId) -> Result<bool> {
        if self.instances.contains_key(&id) {
            return Ok(true);
        }
        let loaded = if self.reading {
            store::instances::read(self.db().await?, id).await?
        } else {
            store::instances::lock(self.db().await?, id).await?
        };
        let Some(locked) = loaded else {
            return Ok(false);
        };
        self.insert_locked(locked).await?;
        Ok(true)
    }

    /// Locks and loads the instances of `ids` this unit does not hold yet, in one statement
    /// where it can (on plain PostgreSQL, for a unit that locks): a batch whose work each
    /// begins by locking its instance takes them all at once, in the order of `ids`. One that
    /// does not exist is left out (its work's own `load` says so).
    pub async fn load_all(&mut self, ids: &[InstanceId]) -> Result<()> {
        let mut wanted: Vec<InstanceId> = Vec::with_capacity(ids.len());
        for id in ids {
            if !self.instances.contains_key(id) && !wanted.contains(id) {
                wanted.push(*id);
            }
        }
        if self.reading || store::shards::distributed() || wanted.len() < 2 {
            for id in wanted {
                self.load(id).await?;
            }
            return Ok(());
        }
        for locked in store::instances::lock_all(self.db().await?, &wanted).await? {
            self.insert_locked(locked).await?;
        }
        Ok(())
    }

    /// Takes an instance this transaction has just locked into the unit.
    async fn insert_locked(&mut self, locked: store::instances::LockedInstance) -> Result<()> {
        let callees = callees::Callees::from_stored(&locked.callees.0)?;
        let cache = self.cache;
        let spec = callees::linked_spec(
            self.db_without_new_rows(),
            cache,
            &locked.row.process_model_identifier,
            &locked.row.model_version,
            &callees,
        )
        .await?;
        let mut state = persistence::state_from_rows(&locked.row, locked.live_tasks.0)?;
        // 202s recorded on their jobs since the instance was written (its tasks' rows say
        // STARTED already); written with the instance if this unit steps it
        for task_guid in locked.accepted_calls {
            crate::engine::accept_call(&spec, &mut state, task_guid);
        }
        self.insert_loaded(locked.row.id, locked.row, Row::Stored, spec, callees, state);
        Ok(())
    }

    fn insert_loaded(
        &mut self,
        id: InstanceId,
        row: InstanceRow,
        row_state: Row,
        spec: Arc<ModelSpec>,
        callees: callees::Callees,
        state: InstanceState,
    ) {
        self.order.push(id);
        if let Row::New { .. } = row_state {
            self.new_rows.push(id);
        }
        self.instances.insert(
            id,
            Loaded {
                row: row_state,
                process_model_identifier: row.process_model_identifier,
                model_version: row.model_version,
                created_at: row.created_at,
                updated_at: row.updated_at,
                spec,
                callees,
                state,
                dirty: false,
                changed_tasks: ChangedTasks::default(),
            },
        );
    }

    /// The instances this unit delivered the signal to (each once).
    pub fn signal_deliveries(&self, name: &str) -> Vec<InstanceId> {
        self.signal_deliveries
            .iter()
            .filter(|(signal, _)| signal == name)
            .map(|(_, id)| *id)
            .collect()
    }

    /// The instances signals of this name started in this unit.
    pub fn signal_starts(&self, name: &str) -> Vec<InstanceId> {
        self.signal_starts
            .iter()
            .filter(|(signal, _)| signal == name)
            .map(|(_, id)| *id)
            .collect()
    }

    /// The engine state of an instance this unit holds.
    pub fn state(&self, id: InstanceId) -> Option<&InstanceState> {
        self.instances.get(&id).map(|l| &l.state)
    }

    /// The compiled model an instance this unit holds steps against.
    pub fn spec(&self, id: InstanceId) -> Option<Arc<ModelSpec>> {
        self.instances.get(&id).map(|l| l.spec.clone())
    }

    /// The model version an instance this unit holds steps against.
    pub fn model_version(&self, id: InstanceId) -> Option<&str> {
        self.instances.get(&id).map(|l| l.model_version.as_str())
    }

    /// The model of an instance this unit holds.
    pub fn process_model_identifier(&self, id: InstanceId) -> Option<&ModelId> {
        self.instances.get(&id).map(|l| &l.process_model_identifier)
    }

    /// The compiled model of a version (from the cache, or built from its stored files);
    /// `None` when the model has no such version.
    pub async fn version_spec(
        &mut self,
        process_model_identifier: &ModelId,
        version_sha: &str,
    ) -> Result<Option<Arc<ModelSpec>>> {
        let cache = self.cache;
        cache
            .version_spec(
                self.db_without_new_rows(),
                process_model_identifier,
                version_sha,
            )
            .await
    }

    /// Ends a unit that only read, once what it read is as durable as a write of its own would
    /// be: its commit waits for the synchronous standbys. An answer that acknowledges stored
    /// state (a repeated idempotency key) must not acknowledge what a failover could still
    /// lose.
    pub async fn commit_once_replicated(mut self) -> Result<()> {
        store::commit_waits_for_standbys(&mut self.tx).await?;
        self.tx.commit().await?;
        Ok(())
    }

    /// Writes every stepped instance and its changed tasks, commits, and hands back the
    /// instances as written (for the caller's answer).
    pub async fn commit(mut self) -> Result<Committed> {
        let span = SpanScope::child("commit", SpanKind::Internal, || {
            vec![
                KeyValue::new("db.system.name", "postgresql"),
                KeyValue::new("workflow.instances", self.order.len() as i64),
            ]
        });
        // the tasks whose jobs this unit ends: their 202s, if not recorded yet, never need to be
        let mut jobs_done: Vec<TaskGuid> = Vec::new();
        let calls = loop {
            let calls = self.evaluate_handed_calls().await;
            jobs_done.extend(self.done_jobs.iter().map(|(_, task)| *task));
            // a receive the write-back wrote took a buffered send: its delivery runs, and is
            // written, before the commit
            if !span.record(self.flush().await)? {
                break calls;
            }
            span.record(self.run_queued().await)?;
        };
        span.record(self.tx.commit().await)?;
        if !jobs_done.is_empty() {
            self.cache.accepted_calls().jobs_done(jobs_done);
        }
        for ((slot, job), call) in self.handed_calls.into_iter().zip(calls) {
            match job {
                HandedJob::Written(job) => slot.hand(job, call),
                HandedJob::Unwritten(call) => {
                    unreachable!("the flush wrote the job of every handed call ({call:?})")
                }
            }
        }
        Ok(Committed {
            instances: self.instances,
        })
    }
}
