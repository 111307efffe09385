//! Typed ids for what the API names: an instance's id, a message's id and a task's guid (from
//! workflow-types, through the unit of work to the store), and a model's checked identifier.

pub use workflow_types::ids::{InstanceId, MessageId, TaskGuid};

use std::fmt;

/// A process model's identifier, checked (`group/sub/model`); made by
/// `services::models::identifier_from_url`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(String);

impl ModelId {
    /// Only for an identifier that has been checked.
    pub(crate) fn checked(identifier: String) -> ModelId {
        ModelId(identifier)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ModelId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ModelId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}
