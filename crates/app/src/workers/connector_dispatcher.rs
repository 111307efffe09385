//! Takes due connector jobs (any number of replicas: `FOR UPDATE SKIP LOCKED` leases) and
//! runs them: prepare in one transaction, call the proxy outside any, apply in another.
//!
//! The worker is a pipeline: up to [`MAX_IN_FLIGHT`] jobs run at once, and a slot freed by a
//! finished job is filled at once, so a slow call never holds up the others. A call scheduled
//! on this replica while a slot is free is handed over by the unit of work that scheduled it,
//! leased, once committed (`service_tasks::CallHandOff`): it needs no claim. Others it claims
//! when woken: a job recorded on any replica (`NOTIFY` on [`JOBS_CHANNEL`]), a job finishing,
//! the next scheduled job coming due (a retry's backoff, a lease running out), or at the latest
//! every [`SAFETY_POLL`] (a lost notification). Idle, it sleeps.
//!
//! A proxy's 202 is recorded a moment after it arrives, unless its callback ends the job
//! first (`service_tasks::acceptances`): the worker records those due each time it wakes, and
//! wakes for the next one.
//!
//! Each job runs in its own tokio task, so a panic in one is caught: it is logged with the
//! job, the job is given back (its lease still counts towards
//! [`service_tasks::MAX_LEASES`]), and the loop goes on. [`dispatch_due_once`] is one round,
//! for tests to drive.

use crate::services::service_tasks::{self, CallHandOff, CommittedCall, HandedCall};
use crate::store::jobs::{Job, JOBS_CHANNEL};
use crate::App;
use chrono::Utc;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

/// The longest the worker sleeps without a notification.
pub const SAFETY_POLL: Duration = Duration::from_secs(1);
/// A job whose worker died is taken again after this.
pub use service_tasks::LEASE;
/// Jobs one replica runs at once (each holds a database connection only while it prepares
/// or applies, not while the proxy answers).
pub const MAX_IN_FLIGHT: usize = 64;
/// Jobs [`dispatch_due_once`] takes.
const BATCH: i64 = 16;
/// How often the backlog gauge is refreshed while jobs run.
const BACKLOG_EVERY: Duration = Duration::from_secs(1);

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub claimed: usize,
    pub failed: usize,
    pub panicked: usize,
}

/// The worker loop, taking the calls handed to it from `handed` (see [`HandedCalls::install`]).
pub async fn run(
    state: Arc<App>,
    handed: Arc<tokio::sync::Mutex<HandedCalls>>,
    mut shutdown: watch::Receiver<bool>,
) {
    // one loop at a time takes the handed calls; one restarted after a panic finds those it
    // had not taken yet
    let mut handed = handed.lock().await;
    let slots = handed.slots.clone();
    let mut listener = super::listen(&state, JOBS_CHANNEL, "connector dispatcher").await;
    let mut listened_at = Instant::now();
    let mut running: JoinSet<JobEnd> = JoinSet::new();
    let mut backlog_read = Instant::now() - BACKLOG_EVERY;
    let mut claim = true;
    // The last claim filled every free slot: more may be due, so a freed slot is filled at
    // once. Otherwise nothing is due but what a notification or the clock announces, and a
    // job ending costs no query.
    let mut saturated = false;
    // When the next job comes due, as last read: read again after a claim (or once it has
    // passed), not each time a job ends: on Citus the read is a query of every shard.
    let mut next_due_at: Option<Instant> = None;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let worker = "connector dispatcher";
        super::relisten(
            &state,
            &mut listener,
            &mut listened_at,
            JOBS_CHANNEL,
            worker,
        )
        .await;
        if claim {
            let free = slots.available_permits();
            saturated =
                free == 0 || claim_into(&state, &slots, &mut running, free as i64).await == free;
        }
        record_due_acceptances(&state, &mut running, Some(Instant::now()));
        state.connector_jobs.in_flight.set(running.len() as i64);
        if backlog_read.elapsed() >= BACKLOG_EVERY {
            backlog_read = Instant::now();
            refresh_backlog(&state).await;
        }
        // with jobs running, their ends wake the worker often enough for a retry coming due
        let pause = if running.is_empty() {
            let now = Instant::now();
            let known = next_due_at.filter(|at| !claim && *at > now);
            let at = match known {
                Some(at) => at,
                None => now + until_next_due(&state).await,
            };
            next_due_at = Some(at);
            at.saturating_duration_since(now)
        } else {
            SAFETY_POLL
        };
        // woken for the next 202 to record, too (which claims nothing)
        let next_acceptance = state.models.accepted_calls().next_due();
        let until_acceptance = next_acceptance
            .map(|due| due.saturating_duration_since(Instant::now()))
            .unwrap_or(SAFETY_POLL);
        claim = false;
        tokio::select! {
            Some(done) = running.join_next(), if !running.is_empty() => {
                report(done);
                // the others that ended meanwhile, so that one claim fills their slots
                while let Some(done) = running.try_join_next() {
                    report(done);
                }
                claim = saturated;
            }
            Some(call) = handed.queue.recv() => {
                start_handed(&state, &mut running, call);
                while let Ok(call) = handed.queue.try_recv() {
                    start_handed(&state, &mut running, call);
                }
            }
            woken = super::wake(&mut listener, "connector dispatcher") => {
                if !woken {
                    listener = None;
                }
                claim = true;
            }
            _ = tokio::time::sleep(pause) => claim = true,
            _ = tokio::time::sleep(until_acceptance), if next_acceptance.is_some() => {}
            _ = shutdown.changed() => {}
        }
    }
    // shutting down: no new claims, nothing more handed over; the calls handed already are
    // made, and with those under way their answers are recorded
    for call in handed.close() {
        start_handed(&state, &mut running, call);
    }
    while let Some(done) = running.join_next().await {
        report(done);
    }
    // and the 202s not recorded yet, whatever their time
    record_accepted_calls_once(&state).await;
}

/// Records the 202s due at `now` (all with `None`) whose callbacks did not come first, each
/// in a task of its own beside the jobs.
fn record_due_acceptances(state: &Arc<App>, running: &mut JoinSet<JobEnd>, now: Option<Instant>) {
    for accepted in state.models.accepted_calls().take_due(now) {
        let job = accepted.job.clone();
        let state_of_run = state.clone();
        let record = async move {
            service_tasks::record_accepted(&state_of_run.service_tasks(), accepted).await
        };
        running.spawn(run_caught(state.clone(), job, record));
    }
}

/// Records every 202 not recorded yet, now: what the worker does with each once its callback
/// has had [`service_tasks::ACCEPTANCE_DELAY`] to come first, and on stopping; tests call it
/// between a round ([`dispatch_due_once_with`]) and what they check. How many it took (each
/// recorded on its job, or applied with its instance, or logged as failed).
pub async fn record_accepted_calls_once(state: &Arc<App>) -> usize {
    let mut running = JoinSet::new();
    record_due_acceptances(state, &mut running, None);
    let taken = running.len();
    while let Some(done) = running.join_next().await {
        report(done);
    }
    taken
}

/// The dispatcher's slots and the queue of calls handed to it. Dropped (the workers stopped),
/// units of work stop handing calls over, and those not taken are given back (due again at
/// once, for any replica).
pub struct HandedCalls {
    state: Arc<App>,
    slots: Arc<Semaphore>,
    queue: mpsc::UnboundedReceiver<HandedCall>,
}

impl HandedCalls {
    /// From now on units of work hand the calls they schedule to the dispatcher whose loop
    /// ([`run`]) takes them from here: installed before the loop starts, so that no call
    /// scheduled after the workers were started is left to a claim.
    pub fn install(state: &Arc<App>) -> Arc<tokio::sync::Mutex<HandedCalls>> {
        let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let handed = state.connector_jobs.handed_over.clone();
        let (hand_off, queue) = CallHandOff::new(slots.clone(), state.pool.clone(), handed);
        state.models.hand_calls_to(Some(hand_off));
        Arc::new(tokio::sync::Mutex::new(HandedCalls {
            state: state.clone(),
            slots,
            queue,
        }))
    }

    /// Stops the hand-off: the calls handed until now, for the caller to make.
    fn close(&mut self) -> Vec<HandedCall> {
        self.state.models.hand_calls_to(None);
        self.queue.close();
        std::iter::from_fn(|| self.queue.try_recv().ok()).collect()
    }
}

impl Drop for HandedCalls {
    fn drop(&mut self) {
        for call in self.close() {
            let pool = self.state.pool.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::store::jobs::give_back(&pool, &call.job).await {
                    tracing::warn!(job = call.job.id, error = %e, "cannot give back a connector call handed to a stopped dispatcher; its lease will run out");
                }
            });
        }
    }
}

/// Starts a call handed over by the unit of work that scheduled it, in the slot reserved for
/// it.
fn start_handed(state: &Arc<App>, running: &mut JoinSet<JobEnd>, call: HandedCall) {
    let HandedCall { job, slot, call } = call;
    let run = run_caught(state.clone(), job.clone(), run_job(state, job, call));
    running.spawn(in_slot(Some(slot), run));
}

/// Runs a job holding its dispatcher slot until it ends.
async fn in_slot(slot: Option<OwnedSemaphorePermit>, run: impl Future<Output = JobEnd>) -> JobEnd {
    let end = run.await;
    drop(slot);
    end
}

/// How a job's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobEnd {
    Done,
    Failed,
    Panicked,
}

/// Runs one job in a task of its own, so that a panic in it is caught with the job still
/// known: logged with the job, the job given back (its lease still counts towards
/// [`service_tasks::MAX_LEASES`]). The worker loop and [`dispatch_due_once_with`] both run jobs
/// through here.
async fn run_caught<Fut>(state: Arc<App>, job: Job, run: Fut) -> JobEnd
where
    Fut: Future<Output = crate::services::Result<()>> + Send + 'static,
{
    match tokio::spawn(run).await {
        Ok(Ok(())) => JobEnd::Done,
        Ok(Err(e)) => {
            tracing::error!(job = job.id, instance = job.process_instance_id.0, task = %job.task_guid, error = %e, "connector job failed");
            JobEnd::Failed
        }
        Err(panic) => {
            tracing::error!(job = job.id, instance = job.process_instance_id.0, task = %job.task_guid, error = %panic, "connector job panicked; it counts as a failed attempt");
            if let Err(e) = crate::store::jobs::release(&state.pool, &job).await {
                tracing::warn!(job = job.id, error = %e, "cannot give back a panicked job; its lease will run out");
            }
            JobEnd::Panicked
        }
    }
}

/// The job runner of the service: prepare (unless `call` was evaluated when it was
/// scheduled), call, apply.
fn run_job(
    state: &Arc<App>,
    job: Job,
    call: Option<CommittedCall>,
) -> impl Future<Output = crate::services::Result<()>> + Send + 'static {
    let state = state.clone();
    async move { service_tasks::run_job(&state.service_tasks(), &job, call).await }
}

/// Claims up to `limit` due jobs and starts each in `running`, in a slot; how many it claimed.
async fn claim_into(
    state: &Arc<App>,
    slots: &Arc<Semaphore>,
    running: &mut JoinSet<JobEnd>,
    limit: i64,
) -> usize {
    let jobs = match crate::store::jobs::claim_due(&state.pool, limit, LEASE).await {
        Ok(jobs) => jobs,
        Err(e) => {
            tracing::warn!(error = %e, "connector dispatcher: cannot claim jobs");
            return 0;
        }
    };
    let claimed = jobs.len();
    for job in jobs {
        // a slot may have been reserved for a handed call since the claim was sized: the job
        // runs all the same (one over, for its run)
        let slot = slots.clone().try_acquire_owned().ok();
        let run = run_caught(state.clone(), job.clone(), run_job(state, job, None));
        running.spawn(in_slot(slot, run));
    }
    claimed
}

fn report(done: Result<JobEnd, tokio::task::JoinError>) {
    if let Err(e) = done {
        tracing::error!(error = %e, "connector job runner ended abnormally");
    }
}

/// How long to sleep when nothing wakes the worker: until the next scheduled job, at most
/// [`SAFETY_POLL`].
async fn until_next_due(state: &App) -> Duration {
    match crate::store::jobs::next_due(&state.pool).await {
        Ok(Some(at)) => (at - Utc::now())
            .to_std()
            .unwrap_or(Duration::from_millis(10))
            .clamp(Duration::from_millis(10), SAFETY_POLL),
        Ok(None) => SAFETY_POLL,
        Err(e) => {
            tracing::warn!(error = %e, "connector dispatcher: cannot read the next due job");
            SAFETY_POLL
        }
    }
}

/// Updates the backlog gauge: due jobs waiting for a slot (counted up to 100,000). The worker
/// runs it at most every second; tests call it directly.
pub async fn refresh_backlog(state: &App) {
    match crate::store::jobs::count_waiting(&state.pool, 100_000).await {
        Ok(waiting) => state.connector_jobs.waiting.set(waiting),
        Err(e) => tracing::debug!(error = %e, "connector dispatcher: cannot count the backlog"),
    }
}

/// One round of the dispatcher: claims the jobs due now (up to a batch) and runs each to the
/// end (prepare, call, apply), so that when it returns every claimed job's outcome is recorded.
///
/// It is the round the worker loop ([`run`]) repeats; tests spawn the server with
/// `run_workers = false` and call it directly instead of waiting for the loop.
pub async fn dispatch_due_once(state: &Arc<App>) -> Round {
    let round = dispatch_due_once_with(state, job_runner(state)).await;
    record_accepted_calls_once(state).await;
    round
}

/// The service's job runner, for [`dispatch_due_once_with`]: a round with it leaves the 202s
/// it received unrecorded, for [`record_accepted_calls_once`] (tests put a callback between).
pub fn job_runner(
    state: &Arc<App>,
) -> impl Fn(Job) -> std::pin::Pin<Box<dyn Future<Output = crate::services::Result<()>> + Send>> {
    let state = state.clone();
    move |job| Box::pin(run_job(&state, job, None))
}

/// [`dispatch_due_once`] with another way to run a job: the same one-shot round, for tests that
/// inject a failing or panicking job runner. The 202s it receives stay unrecorded (see
/// [`record_accepted_calls_once`]).
pub async fn dispatch_due_once_with<F, Fut>(state: &Arc<App>, run_job: F) -> Round
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
        .map(|job| tokio::spawn(run_caught(state.clone(), job.clone(), run_job(job))))
        .collect();
    for handle in running {
        match handle.await {
            Ok(JobEnd::Done) => {}
            Ok(JobEnd::Failed) => round.failed += 1,
            Ok(JobEnd::Panicked) | Err(_) => round.panicked += 1,
        }
    }
    round
}
