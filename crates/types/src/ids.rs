//! Typed ids for what the API names by number or uuid: an instance's id and a message's id are
//! both integers, and their types keep one from being passed where the other is meant, from
//! the use cases through the unit of work to the store's statements (feature `sqlx`: they bind
//! and decode as the numbers and uuids they wrap).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A process instance's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
#[serde(transparent)]
pub struct InstanceId(pub i64);

/// A message instance's id (a send or a receive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
#[serde(transparent)]
pub struct MessageId(pub i64);

/// A task's guid (the instance's task the API names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
#[serde(transparent)]
pub struct TaskGuid(pub uuid::Uuid);

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for TaskGuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A process model's identifier as stored (`group/sub/model`): segments separated by `/`, each
/// a letter or digit followed by letters, digits, `-`, `_` and `.`. Made by [`ModelId::parse`]
/// (the API's `group:sub:model` form is turned into this first), or read back from the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
#[serde(transparent)]
pub struct ModelId(String);

impl ModelId {
    /// The longest identifier (bytes).
    pub const MAX_BYTES: usize = 255;
    /// The longest segment of an identifier (bytes).
    pub const MAX_SEGMENT_BYTES: usize = 100;

    /// `identifier` if it is one (no hidden `.name`, no `..`, no spaces or control characters,
    /// within the lengths).
    pub fn parse(identifier: &str) -> Option<ModelId> {
        let valid =
            identifier.len() <= Self::MAX_BYTES && identifier.split('/').all(is_plain_segment);
        valid.then(|| ModelId(identifier.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A segment of an identifier: a letter or digit, then letters, digits, `-`, `_` and `.`.
pub fn is_plain_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && segment.len() <= ModelId::MAX_SEGMENT_BYTES
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ModelId {
    fn as_ref(&self) -> &str {
        &self.0
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

#[cfg(test)]
mod tests {
    use super::ModelId;

    #[test]
    fn model_ids_are_plain_segments_within_their_lengths() {
        assert_eq!(
            ModelId::parse("finance/invoices").unwrap(),
            "finance/invoices"
        );
        for bad in ["", "a//b", ".hidden", "a/../b", "a b", "a/-b", "tab\there"] {
            assert!(ModelId::parse(bad).is_none(), "{bad:?}");
        }
        let long = "a".repeat(ModelId::MAX_SEGMENT_BYTES + 1);
        assert!(ModelId::parse(&long).is_none());
        let segment = "a".repeat(ModelId::MAX_SEGMENT_BYTES);
        assert!(
            ModelId::parse(&[segment.as_str(); 3].join("/")).is_none(),
            "over 255 bytes"
        );
    }
}
