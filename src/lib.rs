//! workflow-backend: the engine side of a BPMN workflow system (see docs/architecture.md).

pub mod api;
pub mod bpmn;
pub mod config;
pub mod connector;
pub mod correlation;
pub mod dmn;
pub mod engine;
pub mod expr;
pub mod ids;
pub mod python;
pub mod services;
pub mod startup;
pub mod store;
pub mod telemetry;
#[cfg(test)]
mod test_support;
pub mod tokens;
pub mod workers;
