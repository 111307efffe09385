//! The script host of SpiffArena-dialect Python: the core's [`ScriptHost`] spoken as the
//! worker protocol's JSON to the script workers (`workflow_script_port::ScriptWorkers`, CPython
//! processes in `workflow-scripts`). What comes back is held to what the service can store
//! ([`storable`](super::storable)) and to a size limit; a worker's failure becomes the
//! error kind the engine acts on.

use super::storable::{keep_floats, storage_problem};
use super::{Context, ErrorKind, ExprError, Map, ScriptHost};
use serde_json::{json, Value};
pub use workflow_script_port::{PoolError, ScriptWorkers};

/// Task data a script or expression may leave unless told otherwise (as compact JSON): 4 MiB.
pub const DEFAULT_MAX_DATA_BYTES: usize = 4 * 1024 * 1024;

/// CPython through the script workers (`workflow-scripts`).
pub struct PythonHost {
    workers: Box<dyn ScriptWorkers>,
    /// The most task data (compact JSON bytes) a script or expression may hand back.
    max_data_bytes: usize,
}

impl PythonHost {
    pub fn new(workers: impl ScriptWorkers + 'static) -> PythonHost {
        PythonHost {
            workers: Box::new(workers),
            max_data_bytes: DEFAULT_MAX_DATA_BYTES,
        }
    }

    /// The same host, holding what scripts and expressions hand back to `bytes` of JSON.
    pub fn with_max_data_bytes(mut self, bytes: usize) -> PythonHost {
        self.max_data_bytes = bytes;
        self
    }

    /// What a script or expression handed back, if the service can store it: no NUL in a
    /// string or key (Postgres refuses it), no number that would not read back, not nested
    /// too deep, at most `max_data_bytes` of JSON. Otherwise the model's fault, as a Python
    /// error would be: its instance errs naming the element, the step is not tried again.
    /// Floats are written so that storage gives them back as floats (`keep_floats`).
    fn storable(&self, mut value: Value, what: &str) -> Result<Value, ExprError> {
        keep_floats(&mut value);
        if let Some(problem) = storage_problem(&value) {
            return Err(ExprError::of_kind(
                ErrorKind::Unstorable,
                format!("ValueError: {what} cannot be stored: {problem}"),
            ));
        }
        let size = json_size(&value);
        if size > self.max_data_bytes {
            return Err(ExprError::of_kind(
                ErrorKind::DataLimit,
                format!(
                    "ValueError: {what} is {size} bytes of JSON, more than the limit of {} bytes",
                    self.max_data_bytes
                ),
            ));
        }
        Ok(value)
    }

    fn ask(&self, request: Value) -> Result<Value, ExprError> {
        // scripts of one model queue fairly against another's (the model is the tenant)
        let tenant = request["env"]["process_model_identifier"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let answer = self
            .workers
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
                    self.workers.time_limit().as_millis()
                ),
            ),
            PoolError::Busy => ExprError::of_kind(
                ErrorKind::Unavailable,
                "every script worker stayed busy: try again shortly",
            ),
            PoolError::Broken(why) => ExprError::of_kind(ErrorKind::Unavailable, why),
            // the request killed its worker: run again it would again, so the model's fault
            // (a 503 would have a client, or the timer worker, try it for ever)
            PoolError::Died => ExprError::of_kind(
                ErrorKind::Crashed,
                "SystemError: the script's worker process ended without answering (out of \
                 memory while writing its result, or stopped by the operating system)",
            ),
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

/// The length of a value as compact JSON, without building the text.
fn json_size(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).expect("a JSON value serialises");
    counter.0
}

/// `Class: message (line L, column C)` from a worker's error object. A NUL (which Postgres
/// cannot store, and a script may put in an exception) is shown as `\x00`.
fn python_error(error: &Value) -> ExprError {
    let class = error["class"].as_str().unwrap_or("RuntimeError");
    let message = error["message"].as_str().unwrap_or_default();
    let (class, message) = (class.replace('\0', "\\x00"), message.replace('\0', "\\x00"));
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
        let mut answer = self.ask(request)?;
        self.storable(answer["value"].take(), "the expression's value")
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
        let mut answer = self.ask(request)?;
        match self.storable(answer["data"].take(), "the task data the script left")? {
            Value::Object(map) => Ok(map),
            _ => Err(ExprError::of_kind(
                ErrorKind::Unavailable,
                "the script worker answered without task data",
            )),
        }
    }
}
