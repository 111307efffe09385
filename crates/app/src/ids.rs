//! Typed ids for what the API names: an instance's id, a message's id and a task's guid (from
//! workflow-types, through the unit of work to the store), and a model's identifier.

pub use workflow_types::ids::{InstanceId, MessageId, ModelId, TaskGuid};
