//! Scripts in the service: the core's Python host (`workflow_core::expr::python`) over the
//! CPython worker processes of `workflow-scripts`, named here for the rest of the service.

pub use workflow_core::expr::python::{PythonHost, DEFAULT_MAX_DATA_BYTES};
pub use workflow_scripts::{default_packages, OsWallMode, PoolError, PoolSettings, WorkerPool};
