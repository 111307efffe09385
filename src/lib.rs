//! workflow-backend: the engine side of a BPMN workflow system (see docs/architecture.md).
//! The pure core is the crate `workflow-core` (its modules are named here as they always were);
//! the script workers are `workflow-scripts`, the SQL `workflow-store`.

pub use workflow_core::{bpmn, correlation, dmn, engine, expr};
pub use workflow_store as store;

pub mod api;
pub mod config;
pub mod connector;
pub mod ids;
pub mod python;
pub mod services;
pub mod startup;
pub mod telemetry;
pub mod tokens;
pub mod workers;
