//! Python expressions and scripts over JSON task data, in SpiffArena's dialect. The core does
//! not run Python itself: a [`ScriptHost`] given in the [`Context`] does (in the service, a
//! pool of CPython worker processes, through [`python`]). What the core keeps is a pure-Rust
//! fast path for the hot forms (names, literals, `name["key"]` chains), which never leaves
//! the thread.
//!
//! Variables are the top-level keys of the data map; values that are not JSON in Python
//! (datetime, Decimal, ...) travel tagged, `{"__type__": "datetime", "value": "..."}`.
mod convert;
mod fast;
pub mod python;
mod redact;
mod scan;
pub mod storable;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
pub use convert::is_truthy;
use fast::FastExpr;
use serde::Serialize;
use serde_json::{Map as JsonMap, Value};
use std::fmt;
use std::sync::Arc;

pub type Map = JsonMap<String, Value>;

/// What kind of failure an evaluation had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A Python exception (or a syntax error): the model's fault.
    Python,
    /// The script ran past its time limit and was stopped.
    TimeLimit,
    /// The script tried to use more memory than its limit.
    MemoryLimit,
    /// No Python was available to run it (all busy, or broken): nobody's fault in the model;
    /// the step must not happen rather than fail.
    Unavailable,
    /// It handed back what cannot be stored (a NUL in a string or key, a number that would
    /// not read back).
    Unstorable,
    /// It handed back more task data than the limit (`MAX_TASK_DATA_BYTES`).
    DataLimit,
    /// Its worker process ended while running it, without an answer.
    Crashed,
}

/// A Python-style error: `NameError: name 'x' is not defined (line 2, column 5)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub message: String,
    pub kind: ErrorKind,
}

impl ExprError {
    pub fn new(message: impl Into<String>) -> ExprError {
        ExprError {
            message: message.into(),
            kind: ErrorKind::Python,
        }
    }

    pub fn of_kind(kind: ErrorKind, message: impl Into<String>) -> ExprError {
        ExprError {
            message: message.into(),
            kind,
        }
    }

    /// The error with each secret's value that `secrets` holds (those the step's scripts are
    /// handed) replaced by `[secret NAME]` (see [`redact`]).
    pub fn without_secrets(mut self, secrets: &std::collections::BTreeMap<String, String>) -> Self {
        if let std::borrow::Cow::Owned(redacted) = redact::redact(&self.message, secrets) {
            self.message = redacted;
        }
        self
    }

    /// The instance error code of a broken limit.
    pub fn error_code(&self) -> Option<&'static str> {
        match self.kind {
            ErrorKind::TimeLimit => Some("script_time_limit"),
            ErrorKind::MemoryLimit => Some("script_memory_limit"),
            ErrorKind::Unstorable => Some("script_data_unstorable"),
            ErrorKind::DataLimit => Some("script_data_limit"),
            ErrorKind::Crashed => Some("script_crashed"),
            ErrorKind::Python | ErrorKind::Unavailable => None,
        }
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

/// Runs Python for the core. Implementations may block (the caller is never an async thread).
/// `cx` says where the code runs (instance, task, user), for SpiffArena's script functions.
pub trait ScriptHost: Send + Sync {
    /// The value of an expression with `vars` as variables (SpiffArena's `evaluate`).
    fn eval(&self, source: &str, vars: &Map, cx: &Context) -> Result<Value, ExprError>;
    /// The task data after a script ran with `data` as its variables (SpiffArena's
    /// `execute`: script globals and callables are not kept).
    fn exec(&self, source: &str, data: &Map, cx: &Context) -> Result<Map, ExprError>;
    /// Whether `source` compiles as a script (`is_script`) or an expression; the error says
    /// where it does not.
    fn check(&self, source: &str, is_script: bool) -> Result<(), ExprError>;
}

/// Where code runs, for SpiffArena's script functions (`get_toplevel_process_info()`,
/// `get_current_user()`, `get_secret(key)`, ...): given by the shell for each step.
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct ScriptEnv {
    pub process_instance_id: Option<i64>,
    pub process_model_identifier: Option<String>,
    /// The subject that moved the instance (a token's `sub`).
    pub user: Option<String>,
    /// The subject that started it (only for models that ask).
    pub initiator: Option<String>,
    pub frontend_url: String,
    pub env_identifier: String,
    /// Only filled for models that call `get_secret` (values never leave the step otherwise).
    #[serde(skip)]
    pub secrets: std::collections::BTreeMap<String, String>,
}

impl fmt::Debug for ScriptEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptEnv")
            .field("process_instance_id", &self.process_instance_id)
            .field("process_model_identifier", &self.process_model_identifier)
            .field("user", &self.user)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The task whose code runs (`get_current_task_info()`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRef {
    pub id: String,
    pub bpmn_identifier: String,
    pub bpmn_name: Option<String>,
    pub typename: String,
}

/// The instance's tasks as `get_url_for_task_with_bpmn_identifier()` and
/// `get_last_user_completing_task()` see them; given only to models whose code calls them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskLookup {
    /// The tasks the step knows (live ones, and those it created), in creation order.
    pub tasks: Vec<KnownTask>,
    /// Who last completed each human task, by process (or subprocess) id, then element id.
    pub completed_by:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KnownTask {
    pub id: String,
    pub bpmn_identifier: String,
    /// A person completes it (user or manual task): it has a URL.
    pub human: bool,
    pub live: bool,
}

/// What code may use from outside its variables: the Python that runs it, the time, and
/// where it runs. Passed in rather than reached for, so the core stays free of IO and tests
/// can pin all of it.
#[derive(Clone)]
pub struct Context {
    pub now: DateTime<Utc>,
    pub host: Arc<dyn ScriptHost>,
    pub env: Arc<ScriptEnv>,
    pub task: Option<TaskRef>,
    /// The instance's tasks, for models whose code looks tasks up.
    pub lookup: Option<Arc<TaskLookup>>,
    /// The KKV stores the task reads (store id -> top-level key -> secondary key -> value):
    /// its scripts call them as getters.
    pub kkv: Option<Arc<JsonMap<String, Value>>>,
}

impl Context {
    pub fn new(now: DateTime<Utc>, host: Arc<dyn ScriptHost>) -> Context {
        Context {
            now,
            host,
            env: Arc::default(),
            task: None,
            lookup: None,
            kkv: None,
        }
    }

    pub fn with_env(mut self, env: Arc<ScriptEnv>) -> Context {
        self.env = env;
        self
    }

    /// The same context, for code of `task`.
    pub fn for_task(&self, task: Option<TaskRef>) -> Context {
        Context {
            task,
            ..self.clone()
        }
    }

    /// The same context, with the instance's tasks to look up.
    pub fn with_lookup(mut self, lookup: TaskLookup) -> Context {
        self.lookup = Some(Arc::new(lookup));
        self
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("now", &self.now)
            .field("env", &self.env)
            .field("task", &self.task)
            .finish()
    }
}

/// A Python expression. Its syntax is checked when its model is uploaded (by the host).
#[derive(Clone, Debug)]
pub struct Expression {
    source: String,
    fast: Option<FastExpr>,
}

impl Expression {
    /// Python syntax is the host's to judge (an empty expression too: SpiffWorkflow loads it
    /// and fails when it is evaluated, as Python does here).
    pub fn compile(source: &str) -> Result<Expression, ExprError> {
        let trimmed = source.trim();
        Ok(Expression {
            source: source.to_owned(),
            fast: FastExpr::parse(trimmed),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether evaluating it may need Python (not only the fast path).
    pub fn needs_python(&self) -> bool {
        self.fast.is_none()
    }

    /// Evaluate with the top-level keys of `vars` as Python variables.
    pub fn eval(&self, vars: &Map, cx: &Context) -> Result<Value, ExprError> {
        if let Some(result) = self.fast.as_ref().and_then(|fast| fast.eval(vars)) {
            return result;
        }
        cx.host
            .eval(&self.source, vars, cx)
            .map_err(|e| e.without_secrets(&cx.env.secrets))
    }

    /// Python truthiness of the result (None, False, 0, 0.0, "", [], {} are false).
    pub fn eval_bool(&self, vars: &Map, cx: &Context) -> Result<bool, ExprError> {
        self.eval(vars, cx).map(|value| is_truthy(&value))
    }
}

/// A Python script (statements).
#[derive(Clone, Debug)]
pub struct Script {
    source: String,
}

impl Script {
    pub fn compile(source: &str) -> Result<Script, ExprError> {
        Ok(Script {
            source: source.to_owned(),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs with `data`'s keys as variables; `data` becomes the task data the script leaves
    /// (SpiffArena's rules). On error `data` is left untouched.
    pub fn run(&self, data: &mut Map, cx: &Context) -> Result<(), ExprError> {
        *data = cx
            .host
            .exec(&self.source, data, cx)
            .map_err(|e| e.without_secrets(&cx.env.secrets))?;
        Ok(())
    }
}
