//! What a step takes from outside the engine: the time, the ids of the tasks it creates, the
//! Python that runs its scripts, and what the model's data stores hold. All are passed in,
//! never reached for inside the core, so the same model, state, event and context always give
//! the same outcome, and tests can pin ids and times.

use crate::expr::{self, ErrorKind, ExprError, Map, ScriptEnv, ScriptHost};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::{Builder, Uuid};

/// The outside world as one step sees it.
#[derive(Clone)]
pub struct StepContext {
    /// The time of the step.
    pub now: DateTime<Utc>,
    /// Where the ids of the tasks created in the step come from.
    pub task_ids: TaskIds,
    /// Runs the step's scripts and the expressions the fast path cannot answer.
    pub scripts: Arc<dyn ScriptHost>,
    /// Where the step's code runs (instance, model, user), for the script functions.
    pub env: Arc<ScriptEnv>,
    /// What the data stores of the model hold (loaded only for models that use stores).
    pub data_stores: Arc<DataStoreContents>,
}

/// What the data stores of a step's model hold, by store id, as the shell found them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataStoreContents {
    pub stores: BTreeMap<String, StoreContent>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StoreContent {
    /// A JSON or JSON file store's value.
    Value(Value),
    /// A KKV store's entries: top-level key -> secondary key -> value.
    Entries(Arc<Map>),
    /// The store cannot be used by this instance (none exists where its model may see one,
    /// or it is too large to load): why.
    Unavailable(String),
}

impl StepContext {
    pub fn new(now: DateTime<Utc>, task_ids: TaskIds, scripts: Arc<dyn ScriptHost>) -> StepContext {
        StepContext {
            now,
            task_ids,
            scripts,
            env: Arc::default(),
            data_stores: Arc::default(),
        }
    }

    pub fn with_data_stores(mut self, contents: DataStoreContents) -> StepContext {
        self.data_stores = Arc::new(contents);
        self
    }

    pub fn with_env(mut self, env: ScriptEnv) -> StepContext {
        self.env = Arc::new(env);
        self
    }

    /// What expressions and scripts of this step use.
    pub fn expr(&self) -> expr::Context {
        expr::Context::new(self.now, self.scripts.clone()).with_env(self.env.clone())
    }
}

/// Ids of the tasks one step creates: the n-th is `seed + n`, shaped as a version-4 UUID.
///
/// The shell seeds each step with a random UUID (one random draw per step instead of one per
/// task); tests seed it with a constant and know every id in advance. Within a step the ids
/// differ in their low 62 bits (a step's executions are bounded by `MAX_EXECUTIONS_PER_STEP`,
/// so it creates nowhere near 2^62 tasks), so setting the version and variant bits cannot make
/// two equal. Across steps, seeds are random 128-bit values: ranges of a few thousand ids from
/// two seeds overlap with negligible probability.
#[derive(Clone, Debug)]
pub struct TaskIds {
    seed: u128,
    issued: u64,
}

impl TaskIds {
    pub fn from_seed(seed: Uuid) -> TaskIds {
        TaskIds {
            seed: seed.as_u128(),
            issued: 0,
        }
    }

    pub fn next_id(&mut self) -> Uuid {
        let value = self.seed.wrapping_add(u128::from(self.issued));
        self.issued += 1;
        Builder::from_random_bytes(value.to_be_bytes()).into_uuid()
    }
}

/// The script host of a step that runs no script (failing an instance from outside a step,
/// tests of models without Python): any use of it is `Unavailable`.
pub(crate) struct NoScripts;

impl ScriptHost for NoScripts {
    fn eval(&self, _: &str, _: &Map, _: &expr::Context) -> Result<Value, ExprError> {
        Err(ExprError::of_kind(
            ErrorKind::Unavailable,
            "no scripts run here",
        ))
    }
    fn exec(&self, _: &str, _: &Map, _: &expr::Context) -> Result<Map, ExprError> {
        Err(ExprError::of_kind(
            ErrorKind::Unavailable,
            "no scripts run here",
        ))
    }
    fn check(&self, _: &str, _: bool) -> Result<(), ExprError> {
        Err(ExprError::of_kind(
            ErrorKind::Unavailable,
            "no scripts run here",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_seed_and_are_version_4() {
        let mut ids = TaskIds::from_seed(Uuid::nil());
        assert_eq!(
            ids.next_id().to_string(),
            "00000000-0000-4000-8000-000000000000"
        );
        assert_eq!(
            ids.next_id().to_string(),
            "00000000-0000-4000-8000-000000000001"
        );
        assert_eq!(ids.next_id().get_version_num(), 4);
    }

    #[test]
    fn ids_of_one_step_differ_even_where_the_seed_wraps() {
        let mut ids = TaskIds::from_seed(Uuid::from_u128(u128::MAX - 2));
        let issued: std::collections::HashSet<Uuid> = (0..10_000).map(|_| ids.next_id()).collect();
        assert_eq!(issued.len(), 10_000);
    }
}
