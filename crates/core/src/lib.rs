//! The pure core of workflow-backend: BPMN models (`bpmn`), Python expressions and the script
//! host's protocol (`expr`), the engine (`engine`), decision tables (`dmn`) and correlation
//! keys (`correlation`). Deterministic and free of IO: the time, new ids, the script workers
//! and data stores' contents come in from the caller (docs/architecture.md).

#[cfg(test)]
#[macro_use]
#[path = "../../../tests/support/conformance.rs"]
mod conformance;

pub mod bpmn;
pub mod correlation;
pub mod dmn;
pub mod engine;
pub mod expr;

#[cfg(test)]
mod test_support;
