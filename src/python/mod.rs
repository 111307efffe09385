//! The script host: SpiffArena-dialect Python run by CPython in a pool of worker processes
//! (`pool`), behind the core's [`ScriptHost`] trait. Worker processes, not an interpreter in
//! this process, because only a process can be stopped in the middle of one long C call and
//! held to an address-space limit (docs/adr/0003-script-runtime.md has the measurements).
//!
//! Calls block: the service runs engine steps that need Python on blocking threads, never on
//! the async ones, so a runaway script holds up only its own request.

mod pool;
mod wall;

pub use pool::{PoolError, PoolSettings, WorkerPool};
pub use wall::OsWallMode;

use crate::expr::{Context, ErrorKind, ExprError, Map, ScriptHost};
use serde_json::{json, Value};

/// Where the pinned Python packages are installed by the build (see build.rs).
pub const DEFAULT_PACKAGES: &str = env!("WORKFLOW_BACKEND_PYTHON_PACKAGES");

/// CPython through the worker pool.
pub struct PythonHost {
    pool: WorkerPool,
}

impl PythonHost {
    pub fn start(settings: PoolSettings) -> Result<PythonHost, PoolError> {
        Ok(PythonHost {
            pool: WorkerPool::start(settings)?,
        })
    }

    fn ask(&self, request: Value) -> Result<Value, ExprError> {
        // scripts of one model queue fairly against another's (the model is the tenant)
        let tenant = request["env"]["process_model_identifier"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let answer = self
            .pool
            .call_for(&tenant, &request)
            .map_err(|e| self.pool_error(e))?;
        if answer["ok"] == Value::Bool(true) {
            return Ok(answer);
        }
        Err(python_error(&answer["error"]))
    }

    fn pool_error(&self, error: PoolError) -> ExprError {
        match error {
            PoolError::TimeLimit => ExprError::of_kind(
                ErrorKind::TimeLimit,
                format!(
                    "TimeoutError: the script ran longer than its limit of {} ms and was stopped",
                    self.pool.settings().time_limit.as_millis()
                ),
            ),
            PoolError::Busy => ExprError::of_kind(
                ErrorKind::Unavailable,
                "every script worker stayed busy: try again shortly",
            ),
            PoolError::Broken(why) => ExprError::of_kind(ErrorKind::Unavailable, why),
        }
    }
}

/// What the script functions answer from: the step's environment and the current task; the
/// secrets only for code that asks for one.
fn env_of(source: &str, cx: &Context) -> Value {
    let mut env = json!(cx.env.as_ref());
    env["task"] = json!(cx.task);
    if source.contains("get_secret") {
        env["secrets"] = json!(cx.env.secrets);
    }
    if let Some(lookup) = &cx.lookup {
        env["lookup"] = json!(lookup);
    }
    if let Some(kkv) = &cx.kkv {
        env["kkv"] = json!(kkv);
    }
    env
}

/// `Class: message (line L, column C)` from a worker's error object.
fn python_error(error: &Value) -> ExprError {
    let class = error["class"].as_str().unwrap_or("RuntimeError");
    let message = error["message"].as_str().unwrap_or_default();
    let mut text = if message.is_empty() {
        class.to_string()
    } else {
        format!("{class}: {message}")
    };
    if let Some(line) = error["line"].as_u64() {
        text.push_str(&format!(" (line {line}"));
        if let Some(column) = error["column"].as_u64() {
            text.push_str(&format!(", column {column}"));
        }
        text.push(')');
    }
    let kind = if class == "MemoryError" {
        ErrorKind::MemoryLimit
    } else {
        ErrorKind::Python
    };
    ExprError::of_kind(kind, text)
}

impl ScriptHost for PythonHost {
    fn eval(&self, source: &str, vars: &Map, cx: &Context) -> Result<Value, ExprError> {
        let request =
            json!({"op": "eval", "source": source, "data": vars, "env": env_of(source, cx)});
        let answer = self.ask(request)?;
        Ok(answer["value"].clone())
    }

    /// Compiles (and refuses dunder attributes); the error has its line and column.
    fn check(&self, source: &str, is_script: bool) -> Result<(), ExprError> {
        let mode = if is_script { "exec" } else { "eval" };
        self.ask(json!({"op": "check", "source": source, "mode": mode}))
            .map(|_| ())
    }

    fn exec(&self, source: &str, data: &Map, cx: &Context) -> Result<Map, ExprError> {
        let request =
            json!({"op": "exec", "source": source, "data": data, "env": env_of(source, cx)});
        let answer = self.ask(request)?;
        match answer.get("data") {
            Some(Value::Object(map)) => Ok(map.clone()),
            _ => Err(ExprError::of_kind(
                ErrorKind::Unavailable,
                "the script worker answered without task data",
            )),
        }
    }
}

/// One worker pool per test process, for unit tests that run Python (started on first use,
/// in UTC as SpiffArena's servers run).
#[cfg(test)]
pub(crate) fn test_host() -> std::sync::Arc<dyn ScriptHost> {
    use std::sync::{Arc, OnceLock};
    static HOST: OnceLock<Arc<PythonHost>> = OnceLock::new();
    HOST.get_or_init(|| {
        std::env::set_var("TZ", "UTC");
        let host = PythonHost::start(PoolSettings {
            python: "python3".into(),
            packages: DEFAULT_PACKAGES.into(),
            workers: 2,
            time_limit: std::time::Duration::from_secs(5),
            memory_limit_mb: 128,
            queue_timeout: std::time::Duration::from_secs(60),
            os_wall: OsWallMode::Required,
            unguarded_for_tests: false,
        })
        .expect("the script worker starts (python3 and the packages build.rs installs)");
        Arc::new(host)
    })
    .clone()
}
