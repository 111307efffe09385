//! Group commit: units of work that arrive while others are being committed (message sends,
//! connectors' callbacks) run in one transaction, are committed together and are answered only
//! after that commit. One commit (and one `BEGIN`) then serves several of them, as Zeebe and
//! restate batch, where pgbench pays one per message.
//!
//! Each stays isolated: if any of a batch fails before the commit, the batch is rolled back
//! (nothing of it was written) and every one of it runs again alone, in its own transaction,
//! as it would unbatched; a failing one then fails alone. So does a batch whose writes or
//! commit lost a lock conflict (Postgres rolled it back). Another failed commit is not run
//! again: its outcome is unknown, so each answers with the error, as one alone whose commit
//! failed does.
//!
//! Batches lock in one order where they can: work whose instance is known before it runs
//! (a callback, a proxy's answer) runs in the order of its instance. Where they cannot (a
//! message's instance is found by its lookup), a batch waits at most 200 ms for a lock ([`BEGIN_BATCH`])
//! before it runs each of its work alone: two batches that lock the same instances in
//! opposite orders give up in that time, instead of Postgres's deadlock timeout.
//!
//! At most [`RUNNERS`] batches of a kind run at once; work that finds none free is queued and
//! taken by the next runner that finishes, with up to [`MAX_BATCH`] - 1 others. Work that finds
//! a runner free and nothing queued runs at once, alone: batching adds no wait.

use super::unit_of_work::Committed;
use super::{Error, ModelCache, Result, UnitOfWork};
use crate::ids::InstanceId;
use crate::telemetry::traces::Carried;
use futures_util::future::{BoxFuture, FutureExt};
use sqlx::PgPool;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Work that can share a unit of work with others of its kind.
pub trait Batchable: Send + Sync + 'static {
    /// What it leaves for its answer, once the shared unit has committed.
    type Part: Send;
    type Answer: Send + 'static;

    /// Runs alone, in a unit of work of its own (with its retries).
    fn alone<'a>(
        &'a self,
        pool: &'a PgPool,
        cache: &'a ModelCache,
    ) -> BoxFuture<'a, Result<Self::Answer>>;

    /// Its part of a unit of work shared with others, before the commit.
    fn within<'a, 'c: 'a>(
        &'a self,
        uow: &'a mut UnitOfWork<'c>,
    ) -> BoxFuture<'a, Result<Self::Part>>;

    /// Its answer once the shared unit has committed.
    fn answer(part: Self::Part, committed: &Committed) -> Result<Self::Answer>;

    /// The instance it locks first, when known before it runs: a batch runs its work in the
    /// order of these, so that two batches lock the instances they share in the same order.
    fn instance(&self) -> Option<InstanceId> {
        None
    }

    /// Whether the first thing it does is to lock and load [`Batchable::instance`]: a batch of
    /// it then locks all their instances in one statement before running any of it.
    const LOCKS_ITS_INSTANCE_FIRST: bool = false;

    /// What a batch of it asks of the database before any of it runs, in one statement where
    /// each would ask in its own (none by default).
    fn ahead<'a, 'c: 'a>(
        _batch: Vec<&'a Self>,
        _uow: &'a mut UnitOfWork<'c>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// A batch's `BEGIN`, sent with the longest its transaction waits for a lock (200 ms) before
/// each of it runs alone (`lock_not_available`).
pub const BEGIN_BATCH: &str = "BEGIN; SET LOCAL lock_timeout = '200ms'";

/// Batches of a kind committing at once. Fewer runners make larger batches, and since the
/// write-back writes a batch's rows a statement per kind of row, a larger batch costs Postgres
/// less per unit of work: with two instead of four, Postgres's CPU per message fell by a fifth
/// on every front door (docs/perf, tenth round). Work that finds a runner free still runs at
/// once; a step's scripts are bounded by the script workers, as many as the cores, anyway.
pub const RUNNERS: usize = 2;

/// The most units of work one transaction commits: a larger batch holds its instances' locks longer
/// and makes its members wait for each other's steps.
pub const MAX_BATCH: usize = 8;

/// Work waiting for a runner, with where its answer goes.
struct Queued<W: Batchable> {
    work: W,
    /// The request's trace: the work's steps are traced in it, and its batch's commit in the
    /// first one's.
    trace: Carried,
    answer: oneshot::Sender<Result<W::Answer>>,
}

/// The queue of one kind of work and the runners that commit it (one per service).
pub struct GroupCommit<W: Batchable> {
    pool: PgPool,
    cache: Arc<ModelCache>,
    queue: Mutex<VecDeque<Queued<W>>>,
    runners: Arc<Semaphore>,
}

impl<W: Batchable> GroupCommit<W> {
    pub fn new(pool: PgPool, cache: Arc<ModelCache>) -> Arc<GroupCommit<W>> {
        Arc::new(GroupCommit {
            pool,
            cache,
            queue: Mutex::new(VecDeque::new()),
            runners: Arc::new(Semaphore::new(RUNNERS)),
        })
    }

    /// Runs `work`, committed with the work of its kind that arrives with it; answers after
    /// its commit, with what it would answer alone.
    pub async fn run_grouped(self: &Arc<Self>, work: W) -> Result<W::Answer> {
        let (answer, answered) = oneshot::channel();
        let trace = Carried::current();
        self.queue.lock().unwrap().push_back(Queued {
            work,
            trace,
            answer,
        });
        // a task of its own: the batch's commit must not be cancelled with this request
        self.wake();
        answered.await.unwrap_or_else(|_| {
            Err(Error::Internal(anyhow::anyhow!(
                "the batch that held this work stopped without an answer"
            )))
        })
    }

    /// Commits batches from the queue until it is empty, then frees its place.
    async fn run(self: Arc<Self>, mut runner: OwnedSemaphorePermit) {
        loop {
            let batch = self.take();
            if batch.is_empty() {
                drop(runner);
                // work queued after the queue was found empty, whose sender found no runner
                // free, is taken here rather than left waiting
                if self.queue.lock().unwrap().is_empty() {
                    return;
                }
                match self.runners.clone().try_acquire_owned() {
                    Ok(again) => runner = again,
                    Err(_) => return,
                }
                continue;
            }
            // a panic fails this batch's work (its answers are dropped: "stopped without an
            // answer"), not the runner: what is queued behind it still runs
            if AssertUnwindSafe(self.commit(batch))
                .catch_unwind()
                .await
                .is_err()
            {
                tracing::error!(
                    "a group-commit batch panicked; its work was answered with an error"
                );
            }
        }
    }

    /// Work queued for a runner.
    pub fn queued(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    /// Keeps every runner from starting until the guard is dropped, so that work queues and
    /// the next batch is made of it: how tests make a batch of known members.
    pub async fn hold(self: &Arc<Self>) -> Held<W> {
        let runners = self
            .runners
            .clone()
            .acquire_many_owned(RUNNERS as u32)
            .await
            .expect("the runners' semaphore is never closed");
        Held {
            batches: self.clone(),
            runners: Some(runners),
        }
    }

    /// Starts a runner for what is queued, if one is free.
    fn wake(self: &Arc<Self>) {
        if self.queued() == 0 {
            return;
        }
        if let Ok(runner) = self.runners.clone().try_acquire_owned() {
            tokio::spawn(self.clone().run(runner));
        }
    }

    fn take(&self) -> Vec<Queued<W>> {
        let mut queue = self.queue.lock().unwrap();
        let n = queue.len().min(MAX_BATCH);
        queue.drain(..n).collect()
    }

    /// One batch: together, or each alone when together failed before its commit.
    async fn commit(&self, mut batch: Vec<Queued<W>>) {
        if batch.len() > 1 {
            batch.sort_by_key(|queued| queued.work.instance());
            match together(&self.pool, &self.cache, &batch).await {
                Together::Committed(answers) => {
                    for (queued, answer) in batch.into_iter().zip(answers) {
                        let _ = queued.answer.send(answer);
                    }
                    return;
                }
                Together::CommitFailed(error) => {
                    for queued in batch {
                        let _ = queued.answer.send(Err(commit_failure(&error)));
                    }
                    return;
                }
                Together::RolledBack(error) => {
                    tracing::debug!(%error, size = batch.len(), "a batch failed; each of it runs alone");
                }
            }
        }
        for queued in batch {
            let answer = queued
                .trace
                .around(queued.work.alone(&self.pool, &self.cache))
                .await;
            let _ = queued.answer.send(answer);
        }
    }
}

/// Every runner held (see [`GroupCommit::hold`]); dropped, the queue runs.
pub struct Held<W: Batchable> {
    batches: Arc<GroupCommit<W>>,
    runners: Option<OwnedSemaphorePermit>,
}

impl<W: Batchable> Drop for Held<W> {
    fn drop(&mut self) {
        drop(self.runners.take());
        self.batches.wake();
    }
}

/// What became of a batch committed together.
enum Together<A> {
    /// Committed: each one's answer, in order.
    Committed(Vec<Result<A>>),
    /// One failed before the commit: nothing was written.
    RolledBack(Error),
    /// The commit failed: whether it took effect is unknown.
    CommitFailed(Error),
}

async fn together<W: Batchable>(
    pool: &PgPool,
    cache: &ModelCache,
    batch: &[Queued<W>],
) -> Together<W::Answer> {
    let done = async {
        let mut uow = UnitOfWork::begin_batch(pool, cache).await?;
        if W::LOCKS_ITS_INSTANCE_FIRST {
            let ids: Vec<InstanceId> = batch.iter().filter_map(|q| q.work.instance()).collect();
            uow.load_all(&ids).await?;
        }
        W::ahead(batch.iter().map(|q| &q.work).collect(), &mut uow).await?;
        let mut parts: Vec<W::Part> = Vec::with_capacity(batch.len());
        for queued in batch {
            let part = queued.work.within(&mut uow);
            parts.push(queued.trace.around(part).await?);
        }
        Ok::<_, Error>((uow, parts))
    };
    let (uow, parts) = match done.await {
        Ok(done) => done,
        Err(error) => return Together::RolledBack(error),
    };
    match batch[0].trace.around(uow.commit()).await {
        Ok(committed) => Together::Committed(
            parts
                .into_iter()
                .map(|part| W::answer(part, &committed))
                .collect(),
        ),
        // the batch's writes (or its commit) waited past its lock limit: Postgres rolled it
        // back, so each runs alone, as when one of it failed before
        Err(error) if error.is_lock_conflict() => Together::RolledBack(error),
        Err(error) => Together::CommitFailed(error),
    }
}

/// A failed commit's error, for each of its batch: the database unavailable (503) when it
/// was, else an internal error.
fn commit_failure(error: &Error) -> Error {
    let detail = format!("the commit of this batch failed: {error}");
    if error.is_unavailable() {
        Error::Database(sqlx::Error::Io(std::io::Error::other(detail)))
    } else {
        Error::Internal(anyhow::anyhow!(detail))
    }
}
