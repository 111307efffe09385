//! workflow-backend: the engine side of a BPMN workflow system (see DESIGN.md).

pub mod api;
pub mod config;
pub mod startup;
pub mod telemetry;
pub mod workers;
