//! The outside world the pure core is given: the system clock, random seeds and the script
//! host are reached here, in the shell, and passed to the engine and to expressions.

use super::ModelCache;
use crate::engine::{StepContext, TaskIds};
use crate::expr::{self, ScriptEnv};
use chrono::Utc;
use uuid::Uuid;

/// One engine step's view: now, a random seed for the ids of the tasks it creates, the Python
/// its scripts run on, and where they run.
pub(crate) fn step_context(cache: &ModelCache, env: ScriptEnv) -> StepContext {
    StepContext::new(
        Utc::now(),
        TaskIds::from_seed(Uuid::new_v4()),
        cache.scripts(),
    )
    .with_env(env)
}

/// What an expression evaluated outside a step (correlation retrieval, service parameters)
/// uses: now, and the Python.
pub(crate) fn expr_context(cache: &ModelCache) -> expr::Context {
    expr::Context::new(Utc::now(), cache.scripts())
}
