//! Takes due connector jobs (any number of replicas: `FOR UPDATE SKIP LOCKED` leases) and
//! runs them: prepare in one transaction, call the proxy outside any, apply in another.
//!
//! Each job runs in its own tokio task, so a panic in one is caught: it is logged with the
//! job, the job is given back (its lease still counts towards
//! [`service_tasks::MAX_LEASES`]), and the loop goes on. [`dispatch_due_once`] is one round,
//! for tests to drive.

use crate::services::service_tasks;
use crate::startup::AppState;
use crate::store::jobs::Job;
use actix_web::web;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;

pub const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// A job whose worker died is taken again after this.
pub const LEASE: Duration = Duration::from_secs(120);
const BATCH: i64 = 16;

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub claimed: usize,
    pub failed: usize,
    pub panicked: usize,
}

pub async fn run(state: web::Data<AppState>, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        let round = dispatch_due_once(&state).await;
        if round.claimed == 0 {
            tokio::select! {
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
                _ = shutdown.changed() => {}
            }
        }
    }
}

/// One round of the dispatcher: claims the jobs due now (up to a batch) and runs each to the
/// end (prepare, call, apply), so that when it returns every claimed job's outcome is recorded.
///
/// It is the round the worker loop ([`run`]) repeats; tests spawn the server with
/// `run_workers = false` and call it directly instead of waiting for the loop.
pub async fn dispatch_due_once(state: &web::Data<AppState>) -> Round {
    let runner_state = state.clone();
    dispatch_due_once_with(state, move |job| {
        let state = runner_state.clone();
        async move { service_tasks::run_job(&state.service_tasks(), &job).await }
    })
    .await
}

/// [`dispatch_due_once`] with another way to run a job: the same one-shot round, for tests that
/// inject a failing or panicking job runner.
pub async fn dispatch_due_once_with<F, Fut>(state: &web::Data<AppState>, run_job: F) -> Round
where
    F: Fn(Job) -> Fut,
    Fut: Future<Output = crate::services::Result<()>> + Send + 'static,
{
    let jobs = match crate::store::jobs::claim_due(&state.pool, BATCH, LEASE).await {
        Ok(jobs) => jobs,
        Err(e) => {
            tracing::warn!(error = %e, "connector dispatcher: cannot claim jobs");
            return Round::default();
        }
    };
    let mut round = Round {
        claimed: jobs.len(),
        ..Round::default()
    };
    let running: Vec<_> = jobs
        .into_iter()
        .map(|job| (job.clone(), tokio::spawn(run_job(job))))
        .collect();
    for (job, handle) in running {
        match handle.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                round.failed += 1;
                tracing::error!(job = job.id, instance = job.process_instance_id, task = %job.task_guid, error = %e, "connector job failed");
            }
            Err(e) => {
                round.panicked += 1;
                tracing::error!(job = job.id, instance = job.process_instance_id, task = %job.task_guid, error = %e, "connector job panicked; it counts as a failed attempt");
                if let Err(e) = crate::store::jobs::release(&state.pool, job.id).await {
                    tracing::warn!(job = job.id, error = %e, "cannot give back a panicked job; its lease will run out");
                }
            }
        }
    }
    round
}
