//! workflow-backend: the engine side of a BPMN workflow system (see docs/architecture.md).
//! The crates are the layers: the pure core (`workflow-core`), the script workers
//! (`workflow-scripts`), the SQL (`workflow-store`), the service without HTTP (`workflow-app`)
//! and the HTTP layer (`workflow-http`); this crate is the composition root (`startup`, the
//! binary), which builds the `App` and hands it to the HTTP server and the workers. Their
//! modules are named here as they always were.

pub use workflow_app::{
    bpmn, config, connector, correlation, dmn, engine, expr, ids, python, services, telemetry,
    tokens, workers, App, ConnectorJobGauges,
};
pub use workflow_http::api;
pub use workflow_store as store;

pub mod startup;
