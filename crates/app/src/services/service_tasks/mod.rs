//! Service tasks: the dispatcher's job (prepare in one transaction, call the proxy outside
//! any transaction, apply the outcome in another) and the worker's callback.
//!
//! By what they do: `job` (a dispatcher's job: prepare, call, apply), `acceptances` (the
//! proxies' 202s, recorded a moment late unless the callback came first), `hand_off` (a call
//! handed from the step that scheduled it to this replica's dispatcher), `outcome` (the proxy's
//! answer made storable, and what its span says), `callback` (a worker's callback); here, what
//! both share: the context, callback URLs and scopes, and retries.

mod acceptances;
mod callback;
mod hand_off;
mod job;
mod outcome;

pub use acceptances::{Accepted, AcceptedCalls, DELAY as ACCEPTANCE_DELAY};
pub use callback::{
    callback, callback_grouped, instance_cannot_be_found, Callback, CallbackAnswer, CallbackDone,
};
pub use hand_off::{CallHandOff, CommittedCall, HandedCall, ReservedSlot};
pub use job::{record_accepted, run_job, JobOutcome};
pub use outcome::storable;

use super::group_commit::GroupCommit;
use super::unit_of_work::EvaluatedCall;
use super::{ModelCache, Result, UnitOfWork};
use crate::connector::{self, ConnectorClient};
use crate::ids::InstanceId;
use crate::ids::TaskGuid;
use crate::store;
use crate::telemetry::traces::Traces;
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;

/// What the dispatcher and the callback need besides the database.
pub struct ServiceTaskContext<'a> {
    pub pool: &'a PgPool,
    pub cache: &'a ModelCache,
    pub client: Option<&'a ConnectorClient>,
    /// `{WORKFLOW_BACKEND_URL}` for callback URLs.
    pub public_url: &'a str,
    /// Mints per-task callback tokens (HS256, with the configured issuer and audience);
    /// without a JWT secret no token is sent.
    pub signer: &'a crate::tokens::JwtKeys,
    pub callback_token_ttl: Duration,
    /// Where the job's spans go, when traces are configured.
    pub traces: Option<&'a Traces>,
    /// The proxies' answers, committed together when they arrive together.
    pub job_outcomes: &'a Arc<GroupCommit<JobOutcome>>,
}

pub(crate) use crate::store::jobs::Job;

/// How long a leased call is its dispatcher's: a job whose dispatcher died is taken again
/// after this.
pub const LEASE: Duration = Duration::from_secs(120);

/// A job leased this many times without an answer being recorded is not called again: its
/// task fails (each lease that ran out was a call whose outcome is unknown).
pub const MAX_LEASES: i32 = 3;

pub fn callback_url(public_url: &str, instance_id: InstanceId, task_guid: TaskGuid) -> String {
    format!(
        "{}/v1.0/tasks/{instance_id}/{task_guid}/callback",
        public_url.trim_end_matches('/')
    )
}

/// The scope of a per-task callback token.
pub fn callback_scope(instance_id: InstanceId, task_guid: TaskGuid) -> String {
    format!("callback:{instance_id}/{task_guid}")
}

/// What the callback answers when a retry was scheduled.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryScheduled {
    pub retry_at: chrono::DateTime<chrono::Utc>,
    pub retries_attempted: i32,
    pub max_retries: u32,
}

/// Schedules the next attempt of a failed service task if its retry configuration allows.
async fn schedule_retry(
    uow: &mut UnitOfWork<'_>,
    id: InstanceId,
    task_guid: TaskGuid,
) -> Result<Option<RetryScheduled>> {
    let EvaluatedCall::Ready(call) = uow.service_call(id, task_guid).await? else {
        return Ok(None);
    };
    let attempted = uow.retries_attempted(id, task_guid).await?;
    if attempted as u32 >= call.retries {
        return Ok(None);
    }
    let delay = connector::retry_delay(call.backoff_base, attempted as u32);
    let retry_at = uow.schedule_retry(id, task_guid, delay).await?;
    Ok(Some(RetryScheduled {
        retry_at,
        retries_attempted: attempted + 1,
        max_retries: call.retries,
    }))
}

/// A `wf__logs` line a connector sent.
#[derive(Debug, Clone)]
pub struct ConnectorLogLine {
    pub id: i64,
    pub task_guid: TaskGuid,
    pub line: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<store::connector_logs::LogLine> for ConnectorLogLine {
    fn from(row: store::connector_logs::LogLine) -> ConnectorLogLine {
        ConnectorLogLine {
            id: row.id,
            task_guid: row.task_guid,
            line: row.line,
            created_at: row.created_at,
        }
    }
}

/// A page of an instance's `wf__logs` lines, oldest first.
pub async fn connector_logs(
    pool: &PgPool,
    id: InstanceId,
    page: crate::services::Page,
) -> Result<(Vec<ConnectorLogLine>, crate::services::Pagination)> {
    let lines = store::connector_logs::of_instance(pool, id, page.limit(), page.offset()).await?;
    let total = store::connector_logs::count_of_instance(pool, id, page.count_up_to()).await?;
    let pagination = page.pagination_of(total, lines.len());
    Ok((
        lines.into_iter().map(ConnectorLogLine::from).collect(),
        pagination,
    ))
}
