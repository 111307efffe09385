//! The port between the core and the processes that run scripts: the core's script host
//! (`workflow_core::expr::python`) speaks the worker protocol's JSON through [`ScriptWorkers`];
//! `workflow-scripts` implements it with CPython worker processes. A crate of its own so that
//! the core depends on neither (and its tests can use the real workers).

use serde_json::Value;
use std::time::Duration;

/// Why a request got no answer from Python.
#[derive(Debug, PartialEq)]
pub enum PoolError {
    /// The script ran past the time limit; its worker was killed.
    TimeLimit,
    /// Every worker stayed busy for the queue timeout.
    Busy,
    /// A worker could not be started, or was gone before it took the request.
    Broken(String),
    /// The worker ended while it ran the request, without answering: what the script did
    /// killed it (no memory left to write its answer, stopped by the OS).
    Died,
}

/// Workers that answer one JSON request of the worker protocol at a time, fairly across
/// tenants (a tenant's runaways hold up that tenant first).
pub trait ScriptWorkers: Send + Sync {
    fn call_for(&self, tenant: &str, request: &Value) -> Result<Value, PoolError>;

    /// How long one request may run before its worker is stopped.
    fn time_limit(&self) -> Duration;
}
