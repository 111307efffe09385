//! The pools the escape tests run scripts on, and the assertions every technique shares.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use workflow_backend::python::{default_packages, OsWallMode, PoolSettings, WorkerPool};

/// A secret every request carries (as `get_secret('API_KEY')` would see it).
pub const SECRET: &str = "s3cr3t-escape-canary-7f1c";
/// The content of the canary file, which each payload tries to read once it is out.
pub const MARKER: &str = "file-escape-canary-92ad";

/// The canary file's path; `{PATH}` in a technique's source stands for it.
pub fn canary_path() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path: PathBuf =
            std::env::temp_dir().join(format!("escape-canary-{}", std::process::id()));
        std::fs::write(&path, MARKER).expect("the canary file");
        path.to_string_lossy().into_owned()
    })
}

/// The one place these tests spell the pool's settings: behind the OS wall, as the server
/// runs them, with the Python guards on (the wall under test).
pub fn settings(workers: usize) -> PoolSettings {
    PoolSettings {
        python: "python3".into(),
        packages: default_packages(),
        workers,
        time_limit: Duration::from_secs(10),
        memory_limit_mb: 256,
        queue_timeout: Duration::from_secs(60),
        os_wall: OsWallMode::Required,
        unguarded_for_tests: false,
    }
}

/// A pool shared by the tests of this binary (techniques are independent requests).
pub fn shared_pool() -> &'static WorkerPool {
    static POOL: OnceLock<WorkerPool> = OnceLock::new();
    POOL.get_or_init(|| WorkerPool::start(settings(2)).expect("the script worker starts"))
}

/// A pool of one worker: consecutive requests meet the same process (unless it asked to be
/// replaced), so what one script leaves behind is what the next one sees.
pub fn one_worker() -> WorkerPool {
    WorkerPool::start(settings(1)).expect("the script worker starts")
}

/// Runs `source` as a script task (with `data`) and returns the worker's answer.
pub fn exec_on(pool: &WorkerPool, source: &str, data: Value) -> Value {
    let request = json!({
        "op": "exec",
        "source": source.replace("{PATH}", canary_path()),
        "data": data,
        "env": {"secrets": {"API_KEY": SECRET}, "user": "mallory"},
    });
    pool.call(&request).expect("the worker answers")
}

/// The technique in `source` errs with `class`, its message holds `because`, and the answer
/// leaks neither the secret nor the canary. Returns the error object.
pub fn refused(source: &str, class: &str, because: &str) -> Value {
    refused_with(source, json!({}), class, because)
}

pub fn refused_with(source: &str, data: Value, class: &str, because: &str) -> Value {
    let answer = exec_on(shared_pool(), source, data);
    assert_nothing_leaks(&answer);
    assert_eq!(answer["ok"], json!(false), "the technique ran: {answer}");
    let error = &answer["error"];
    assert_eq!(error["class"], class, "{answer}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(because), "{message:?} lacks {because:?}");
    error.clone()
}

pub fn assert_nothing_leaks(answer: &Value) {
    let text = answer.to_string();
    assert!(!text.contains(SECRET), "the secret leaked: {text}");
    assert!(!text.contains(MARKER), "the canary file was read: {text}");
}
