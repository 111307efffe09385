//! The outside world the pure core is given: the system clock and random seeds are read here,
//! in the shell, and passed to the engine and to expressions (which never read them).

use crate::engine::{StepContext, TaskIds};
use crate::expr;
use chrono::Utc;
use uuid::Uuid;

/// One engine step's view: now, and a random seed for the ids of the tasks it creates.
pub(crate) fn step_context() -> StepContext {
    StepContext::new(Utc::now(), TaskIds::from_seed(Uuid::new_v4()))
}

/// What an expression evaluated outside a step (correlation retrieval, service parameters)
/// may read: now.
pub(crate) fn expr_now() -> expr::Context {
    expr::Context::at(Utc::now())
}
