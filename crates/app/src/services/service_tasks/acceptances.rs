//! Proxies' 202s recorded a moment late. A proxy that accepts a call (202) and calls back at
//! once, as quick workers do, sends its callback while the 202 is being recorded: the 202's
//! statement and the callback's unit of work then lock the job and the task in turn, and the
//! 202's statement (a round trip, a commit, a wait) records what the callback's commit is
//! about to make moot. So a 202 is kept here for [`DELAY`] first: a unit of work of this replica
//! that commits the end of the task's job meanwhile (its callback, usually) forgets it, and
//! nothing is recorded; else it is recorded as it was before ([`super::job`]).
//!
//! Meanwhile the job stays leased, as the dispatcher's claim or hand-off left it, for
//! [`super::LEASE`] (minutes, against [`DELAY`]'s milliseconds): no replica takes it. A replica
//! that dies before recording a 202 leaves its call to be made again when the lease runs out,
//! as one that died while the proxy answered does.

use super::Job;
use crate::ids::TaskGuid;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a 202 waits for its callback before it is recorded.
pub const DELAY: Duration = Duration::from_millis(20);

/// A proxy's 202, not recorded yet.
pub struct Accepted {
    pub job: Job,
    pub operator_id: String,
    /// The `wf__logs` lines it carried (recorded with it).
    pub logs: Vec<String>,
    /// When it is recorded unless its job is done first.
    due: Instant,
}

/// This replica's 202s not recorded yet, by task.
#[derive(Default)]
pub struct AcceptedCalls {
    pending: Mutex<HashMap<TaskGuid, Accepted>>,
}

impl AcceptedCalls {
    /// Keeps a 202 received at `now` until it is due ([`DELAY`]) or its job is done.
    pub fn defer(&self, job: Job, operator_id: String, logs: Vec<String>, now: Instant) {
        let accepted = Accepted {
            job,
            operator_id,
            logs,
            due: now + DELAY,
        };
        self.lock().insert(accepted.job.task_guid, accepted);
    }

    /// The jobs of these tasks are done (a committed unit of work dropped them): their 202s
    /// need no recording.
    pub fn jobs_done(&self, tasks: impl IntoIterator<Item = TaskGuid>) {
        let mut pending = self.lock();
        if pending.is_empty() {
            return;
        }
        for task in tasks {
            pending.remove(&task);
        }
    }

    /// The 202s due at `now` (all of them with `None`), taken for recording.
    pub fn take_due(&self, now: Option<Instant>) -> Vec<Accepted> {
        let mut pending = self.lock();
        let due: Vec<TaskGuid> = pending
            .iter()
            .filter(|(_, accepted)| now.is_none_or(|now| accepted.due <= now))
            .map(|(task, _)| *task)
            .collect();
        due.iter().filter_map(|task| pending.remove(task)).collect()
    }

    /// When the first of them comes due.
    pub fn next_due(&self) -> Option<Instant> {
        self.lock().values().map(|accepted| accepted.due).min()
    }

    /// 202s not recorded yet.
    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskGuid, Accepted>> {
        self.pending.lock().expect("accepted calls lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::InstanceId;

    fn job(id: i64) -> Job {
        Job {
            id,
            process_instance_id: InstanceId(1),
            task_guid: TaskGuid(uuid::Uuid::from_u128(id as u128)),
            leases: 1,
            traceparent: None,
        }
    }

    #[test]
    fn a_202_is_due_after_the_delay_unless_its_job_is_done_first() {
        let calls = AcceptedCalls::default();
        let now = Instant::now();
        calls.defer(job(1), "demo/Echo".into(), vec![], now);
        calls.defer(job(2), "demo/Echo".into(), vec!["a line".into()], now);
        assert!(calls.take_due(Some(now)).is_empty());
        assert_eq!(calls.next_due(), Some(now + DELAY));
        calls.jobs_done([job(1).task_guid]);
        let due = calls.take_due(Some(now + DELAY));
        assert_eq!(due.len(), 1);
        assert_eq!(
            (due[0].job.id, due[0].logs.clone()),
            (2, vec!["a line".into()])
        );
        assert_eq!(calls.pending(), 0);
        assert_eq!(calls.next_due(), None);
    }

    #[test]
    fn all_of_them_are_taken_without_a_time() {
        let calls = AcceptedCalls::default();
        let now = Instant::now();
        calls.defer(job(1), "demo/Echo".into(), vec![], now);
        assert_eq!(calls.take_due(None).len(), 1);
        assert!(calls.take_due(None).is_empty());
    }
}
