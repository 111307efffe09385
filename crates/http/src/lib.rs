//! workflow-http: the HTTP layer of workflow-backend. Routes, authentication and scopes,
//! request guards, `application/problem+json` errors, the wire types (which are the OpenAPI
//! schemas) and the console's embedded files. It only translates: each handler turns a request
//! into a use case of `workflow-app` on the [`App`] it is given, and the outcome into an
//! answer.

pub use workflow_app::{
    bpmn, config, connector, correlation, dmn, engine, expr, ids, python, services, telemetry,
    tokens, App,
};

pub mod api;
