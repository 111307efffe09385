//! workflow-app: the service without its HTTP layer. Use cases, one transaction each
//! (`services`, with the unit of work that runs the engine), the background workers
//! (`workers`), the connector proxy's client, tokens, settings and telemetry, shared through
//! the application handle [`App`]. Knows nothing of HTTP: `workflow-http` and the binary sit
//! on top of it (docs/architecture.md).

pub use workflow_core::{bpmn, correlation, dmn, engine, expr};
// The store's rows stay inside: use cases answer with their own types, so a column change
// never reaches the HTTP contract (the compiler holds it: no crate above names the store).
use workflow_store as store;

mod app;
pub mod config;
pub mod connector;
pub mod ids;
pub mod python;
pub mod services;
pub mod telemetry;
pub mod tokens;
pub mod workers;

pub use app::{App, ConnectorJobGauges};
