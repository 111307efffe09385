//! Calls handed from the step that scheduled them to this replica's dispatcher, without a
//! claim: a unit of work that schedules a call due now while the dispatcher has a free slot
//! records the job already leased, and hands it over once its commit is done. The job then
//! costs no `NOTIFY`, no wake-up of the dispatchers and no claim statement; another replica
//! takes it only if its lease runs out (this replica died before the call was answered), as
//! it would a claimed one.

use super::Job;
use crate::engine::ServiceCall;
use crate::ids::ModelId;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// A job handed over, with the dispatcher slot reserved for it, and the call as its unit of
/// work committed it when its parameters evaluated there.
pub struct HandedCall {
    pub job: Job,
    pub slot: OwnedSemaphorePermit,
    pub call: Option<CommittedCall>,
}

/// A call's parameters evaluated on the instance's state its unit of work committed, with that
/// state's data and the instance's model: all the request needs, so the dispatcher reads
/// nothing before making the call.
pub struct CommittedCall {
    pub call: ServiceCall,
    pub data: Value,
    pub model: ModelId,
}

/// Where units of work hand their calls: the running dispatcher's slots and queue.
pub struct CallHandOff {
    /// The dispatcher's slots: calls it is making (claimed or handed over) hold one each.
    slots: Arc<Semaphore>,
    queue: mpsc::UnboundedSender<HandedCall>,
    pool: sqlx::PgPool,
    handed: prometheus::IntCounter,
}

/// A slot reserved for a call a unit of work is about to record; handed over at its commit,
/// or given back (dropped) with the unit.
pub struct ReservedSlot {
    to: Arc<CallHandOff>,
    slot: OwnedSemaphorePermit,
}

impl CallHandOff {
    /// A hand-off to a dispatcher with `slots`, and the queue it takes handed calls from.
    /// `handed` counts the calls handed over.
    pub fn new(
        slots: Arc<Semaphore>,
        pool: sqlx::PgPool,
        handed: prometheus::IntCounter,
    ) -> (Arc<CallHandOff>, mpsc::UnboundedReceiver<HandedCall>) {
        let (queue, taken) = mpsc::unbounded_channel();
        let hand_off = CallHandOff {
            slots,
            queue,
            pool,
            handed,
        };
        (Arc::new(hand_off), taken)
    }

    /// A free slot of the dispatcher, if it has one: the call is then recorded leased.
    pub fn reserve(self: &Arc<Self>) -> Option<ReservedSlot> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        Some(ReservedSlot {
            to: self.clone(),
            slot,
        })
    }
}

impl ReservedSlot {
    /// Hands a committed job to the dispatcher (with its call, when evaluated at the commit).
    /// If it has stopped meanwhile, the job is given back (due at once, for any replica) rather
    /// than left leased until its lease runs out.
    pub fn hand(self, job: Job, call: Option<CommittedCall>) {
        let ReservedSlot { to, slot } = self;
        match to.queue.send(HandedCall { job, slot, call }) {
            Ok(()) => to.handed.inc(),
            Err(mpsc::error::SendError(HandedCall { job, .. })) => {
                let pool = to.pool.clone();
                tokio::spawn(async move {
                    if let Err(e) = crate::store::jobs::give_back(&pool, &job).await {
                        tracing::warn!(job = job.id, error = %e, "cannot give back a connector call the stopped dispatcher did not take; its lease will run out");
                    }
                });
            }
        }
    }
}
