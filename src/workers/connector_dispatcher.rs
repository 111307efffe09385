//! Takes due connector jobs (any number of replicas: `FOR UPDATE SKIP LOCKED` leases) and
//! runs them: prepare in one transaction, call the proxy outside any, apply in another.

use crate::services::service_tasks;
use crate::startup::AppState;
use actix_web::web;
use std::time::Duration;
use tokio::sync::watch;

pub const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// A job whose worker died is taken again after this.
pub const LEASE: Duration = Duration::from_secs(120);
const BATCH: i64 = 16;

pub async fn run(state: web::Data<AppState>, mut shutdown: watch::Receiver<bool>) {
    let ctx = state.service_tasks();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let jobs = match crate::store::jobs::claim_due(&state.pool, BATCH, LEASE).await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::warn!(error = %e, "connector dispatcher: cannot claim jobs");
                Vec::new()
            }
        };
        if jobs.is_empty() {
            tokio::select! {
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let runs = jobs.iter().map(|job| {
            let ctx = &ctx;
            async move {
                if let Err(e) = service_tasks::run_job(ctx, job).await {
                    tracing::error!(instance = job.process_instance_id, task = %job.task_guid, error = %e, "connector job failed");
                }
            }
        });
        futures_util::future::join_all(runs).await;
    }
}
