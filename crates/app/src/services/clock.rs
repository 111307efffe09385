//! The outside world the pure core is given: the time and the seeds of new task ids come from
//! a [`Clock`] (the port; [`SystemClock`] in the service, a fixed one in tests), the script
//! host from the model cache, and both are passed to the engine and to expressions here.

use super::ModelCache;
use crate::engine::{StepContext, TaskIds};
use crate::expr::{self, ScriptEnv};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Where the shell reads the time and draws the seed of each step's task ids.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
    /// A seed no other step of any replica draws (the task ids of a step follow from it).
    fn task_id_seed(&self) -> Uuid;
}

/// The system's clock and random seeds.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    /// Time-ordered: the milliseconds first, then 74 random bits (UUIDv7's layout). A step's
    /// task ids follow from its seed, so the tasks' primary key and the other indexes of task
    /// ids take new entries at their right edge, not on a random leaf of a large index: as
    /// the tables grow, a random leaf is a page read and, after each checkpoint, a full page
    /// written to the WAL for every task. Two steps in one millisecond still draw seeds as far
    /// apart as random ones (2^74 apart on average; a step issues a handful of ids).
    fn task_id_seed(&self) -> Uuid {
        let random = Uuid::new_v4().into_bytes();
        let random: &[u8; 10] = random[..10].try_into().expect("ten of sixteen bytes");
        let millis = u64::try_from(self.now().timestamp_millis()).unwrap_or(0);
        uuid::Builder::from_unix_timestamp_millis(millis, random).into_uuid()
    }
}

/// One engine step's view: now, a seed for the ids of the tasks it creates, the Python its
/// scripts run on, and where they run.
pub(crate) fn step_context(cache: &ModelCache, env: ScriptEnv) -> StepContext {
    let clock = cache.clock();
    StepContext::new(
        clock.now(),
        TaskIds::from_seed(clock.task_id_seed()),
        cache.scripts(),
    )
    .with_env(env)
}

/// What an expression evaluated outside a step (correlation retrieval, service parameters)
/// uses: now, and the Python.
pub(crate) fn expr_context(cache: &ModelCache) -> expr::Context {
    expr::Context::new(cache.clock().now(), cache.scripts())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Fixed;

    impl Clock for Fixed {
        fn now(&self) -> DateTime<Utc> {
            DateTime::UNIX_EPOCH
        }

        fn task_id_seed(&self) -> Uuid {
            Uuid::from_u128(7)
        }
    }

    /// Later steps' task ids sort after earlier ones' (the index locality the seed is for),
    /// and every seed is new.
    #[test]
    fn the_system_clocks_task_ids_follow_the_time() {
        let mut ids = Vec::new();
        for _ in 0..20 {
            // each step a millisecond after the one before
            let now = Utc::now().timestamp_millis();
            while Utc::now().timestamp_millis() == now {
                std::hint::spin_loop();
            }
            let mut step = TaskIds::from_seed(SystemClock.task_id_seed());
            ids.extend([step.next_id(), step.next_id()]);
        }
        assert!(ids.is_sorted(), "{ids:?}");
        let seeds: std::collections::HashSet<Uuid> =
            (0..10_000).map(|_| SystemClock.task_id_seed()).collect();
        assert_eq!(seeds.len(), 10_000);
    }

    #[test]
    fn steps_take_the_time_and_task_ids_from_the_clock_of_the_cache() {
        let scripts: Arc<dyn crate::expr::ScriptHost> = Arc::new(NoPython);
        let cache = ModelCache::new(scripts).with_clock(Arc::new(Fixed));
        let mut context = step_context(&cache, ScriptEnv::default());
        assert_eq!(context.now, DateTime::UNIX_EPOCH);
        let mut expected = TaskIds::from_seed(Uuid::from_u128(7));
        assert_eq!(context.task_ids.next_id(), expected.next_id());
        assert_eq!(expr_context(&cache).now, DateTime::UNIX_EPOCH);
    }

    struct NoPython;

    impl crate::expr::ScriptHost for NoPython {
        fn eval(
            &self,
            _: &str,
            _: &serde_json::Map<String, serde_json::Value>,
            _: &expr::Context,
        ) -> Result<serde_json::Value, expr::ExprError> {
            unreachable!("no script runs here")
        }
        fn exec(
            &self,
            _: &str,
            _: &serde_json::Map<String, serde_json::Value>,
            _: &expr::Context,
        ) -> Result<serde_json::Map<String, serde_json::Value>, expr::ExprError> {
            unreachable!("no script runs here")
        }
        fn check(&self, _: &str, _: bool) -> Result<(), expr::ExprError> {
            unreachable!("no script runs here")
        }
    }
}
