//! Group commit of message sends: sends that arrive while others are being committed are
//! routed, stepped and stored in one transaction, committed together and answered only after
//! that commit. One commit (and one `BEGIN`) then serves several messages, as Zeebe and
//! restate batch, where pgbench pays one per message.
//!
//! Each message stays isolated: if any of a batch fails before the commit, the batch is rolled
//! back (nothing of it was written) and every message of it runs again alone, in its own
//! transaction, as an unbatched send does; a failing message then fails alone. A failed commit
//! is not run again: its outcome is unknown, so each message of it answers with the error, as
//! an unbatched send whose commit failed does.
//!
//! Sends with a `message_instance_uuid` are never batched: their idempotency claim and replay
//! are their own transaction's.
//!
//! At most [`RUNNERS`] batches run at once; a send that finds none free is queued and taken by
//! the next runner that finishes, with up to [`MAX_BATCH`] - 1 others. A send that finds a
//! runner free and nothing queued runs at once, alone: batching adds no wait.

use super::messages::{route_and_record, send, SendAnswer, SendRequest, Sent};
use super::{Error, ModelCache, Result, UnitOfWork};
use crate::telemetry::traces::Carried;
use sqlx::PgPool;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Batches committing at once.
pub const RUNNERS: usize = 4;

/// The most sends one transaction commits: a larger batch holds its instances' locks longer
/// and makes its members wait for each other's steps.
pub const MAX_BATCH: usize = 8;

/// A send waiting for a runner, with where its answer goes.
struct Queued {
    request: SendRequest,
    /// The request's trace: the send's steps are traced in it, and its batch's commit in the
    /// first send's.
    trace: Carried,
    answer: oneshot::Sender<Result<SendAnswer>>,
}

/// The queue of sends and the runners that commit them (one per service).
pub struct SendBatches {
    pool: PgPool,
    cache: Arc<ModelCache>,
    queue: Mutex<VecDeque<Queued>>,
    runners: Arc<Semaphore>,
}

impl SendBatches {
    pub fn new(pool: PgPool, cache: Arc<ModelCache>) -> Arc<SendBatches> {
        Arc::new(SendBatches {
            pool,
            cache,
            queue: Mutex::new(VecDeque::new()),
            runners: Arc::new(Semaphore::new(RUNNERS)),
        })
    }

    /// Sends a message, committed with the sends that arrive with it; answers after its
    /// commit. The same outcomes as [`send`].
    pub async fn send(self: &Arc<Self>, request: SendRequest) -> Result<SendAnswer> {
        if request.message_instance_uuid.is_some() || !request.payload.is_object() {
            return send(&self.pool, &self.cache, &request).await;
        }
        let (answer, answered) = oneshot::channel();
        let trace = Carried::current();
        self.queue.lock().unwrap().push_back(Queued {
            request,
            trace,
            answer,
        });
        // a task of its own: the batch's commit must not be cancelled with this request
        self.wake();
        answered.await.unwrap_or_else(|_| {
            Err(Error::Internal(anyhow::anyhow!(
                "the batch that held this message stopped without an answer"
            )))
        })
    }

    /// Commits batches from the queue until it is empty, then frees its place.
    async fn run(self: Arc<Self>, mut runner: OwnedSemaphorePermit) {
        loop {
            let batch = self.take();
            if batch.is_empty() {
                drop(runner);
                // a send queued after the queue was found empty, whose sender found no runner
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
            self.commit(batch).await;
        }
    }

    /// Sends queued for a runner.
    pub fn queued(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    /// Keeps every runner from starting until the guard is dropped, so that sends queue and
    /// the next batch is made of them: how tests make a batch of known members.
    pub async fn hold(self: &Arc<Self>) -> Held {
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

    fn take(&self) -> Vec<Queued> {
        let mut queue = self.queue.lock().unwrap();
        let n = queue.len().min(MAX_BATCH);
        queue.drain(..n).collect()
    }

    /// One batch: together, or each alone when together failed before its commit.
    async fn commit(&self, batch: Vec<Queued>) {
        if batch.len() > 1 {
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
                    tracing::debug!(%error, messages = batch.len(), "a batch of sends failed; each runs alone");
                }
            }
        }
        for queued in batch {
            let answer = queued
                .trace
                .around(send(&self.pool, &self.cache, &queued.request))
                .await;
            let _ = queued.answer.send(answer);
        }
    }
}

/// Every runner held (see [`SendBatches::hold`]); dropped, the queue runs.
pub struct Held {
    batches: Arc<SendBatches>,
    runners: Option<OwnedSemaphorePermit>,
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.runners.take());
        self.batches.wake();
    }
}

/// What became of a batch committed together.
enum Together {
    /// Committed: each send's answer, in order.
    Committed(Vec<Result<SendAnswer>>),
    /// A send failed before the commit: nothing was written.
    RolledBack(Error),
    /// The commit failed: whether it took effect is unknown.
    CommitFailed(Error),
}

async fn together(pool: &PgPool, cache: &ModelCache, batch: &[Queued]) -> Together {
    let routed = async {
        let mut uow = UnitOfWork::begin(pool, cache).await?;
        let mut sent: Vec<Sent> = Vec::with_capacity(batch.len());
        for queued in batch {
            let routed = route_and_record(&mut uow, &queued.request, None);
            sent.push(queued.trace.around(routed).await?);
        }
        Ok::<_, Error>((uow, sent))
    };
    let (uow, sent) = match routed.await {
        Ok(routed) => routed,
        Err(error) => return Together::RolledBack(error),
    };
    match batch[0].trace.around(uow.commit()).await {
        Ok(committed) => {
            Together::Committed(sent.into_iter().map(|s| s.answer(&committed)).collect())
        }
        Err(error) => Together::CommitFailed(error),
    }
}

/// A failed commit's error, for each send of its batch: the database unavailable (503, the
/// client sends again with its uuid, or not at all) when it was, else an internal error.
fn commit_failure(error: &Error) -> Error {
    let detail = format!("the commit of this message's batch failed: {error}");
    if error.is_unavailable() {
        Error::Database(sqlx::Error::Io(std::io::Error::other(detail)))
    } else {
        Error::Internal(anyhow::anyhow!(detail))
    }
}
