//! workflow-backend: the engine side of a BPMN workflow system (see docs/architecture.md).
//! The crates are the layers: the pure core (`workflow-core`), the script workers
//! (`workflow-scripts`), the SQL (`workflow-store`), the service without HTTP (`workflow-app`);
//! this crate is the HTTP layer (`api`) and the composition root (`startup`, the binary). Their
//! modules are named here as they always were.

pub use workflow_app::{
    bpmn, config, connector, correlation, dmn, engine, expr, ids, python, services, store,
    telemetry, tokens, workers, App, ConnectorJobGauges,
};

pub mod api;
pub mod startup;
