//! The message catalog a replica keeps in memory: for each message name, the retrieval
//! expressions every model declares for it and the start event that takes it, as read at one
//! version of the database's `message_catalog_version` (which the statements that change
//! `correlation_retrievals` or `message_triggers` move on: `store::models`).
//!
//! What is served from here is checked, not trusted: a unit of work notes the version of what
//! it used, and its correlation lookup runs `workflow_catalog_is(version)` in the same
//! statement. A model uploaded or deleted through another replica since then fails that
//! statement (`WFCAT`); the catalog is forgotten and the transaction runs again, reading it
//! afresh. Saves the two lookups of every message start (one of every correlation) without a
//! window in which another replica's upload is missed.
//!
//! At most [`MAX_NAMES`] names are kept (past that it starts again empty): a caller sending
//! made-up names cannot grow it.

use crate::store::models::TriggerRow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The most message names kept; past it the catalog starts again empty.
pub const MAX_NAMES: usize = 10_000;

/// (property id, expression), as `correlation_retrievals` orders them.
pub type Retrievals = Arc<Vec<(String, String)>>;

#[derive(Default)]
pub struct MessageCatalog {
    kept: RwLock<Kept>,
}

/// What was read at `version`.
#[derive(Default)]
struct Kept {
    version: i64,
    retrievals: HashMap<String, Retrievals>,
    triggers: HashMap<String, TriggerRow>,
}

impl Kept {
    /// Ready to keep what was read at `version`: what was kept at an older one goes.
    fn at(&mut self, version: i64) -> bool {
        if version > self.version || self.names() >= MAX_NAMES {
            *self = Kept {
                version,
                ..Kept::default()
            };
        }
        version == self.version
    }

    fn names(&self) -> usize {
        self.retrievals.len() + self.triggers.len()
    }
}

impl MessageCatalog {
    /// The retrievals of `name` and the version they were read at, if kept.
    pub fn retrievals(&self, name: &str) -> Option<(i64, Retrievals)> {
        let kept = self.kept.read().unwrap();
        let retrievals = kept.retrievals.get(name)?;
        Some((kept.version, retrievals.clone()))
    }

    /// Keeps the retrievals of `name` read at `version` (none, for a name no model declares
    /// correlation for).
    pub fn keep_retrievals(
        &self,
        version: i64,
        name: &str,
        retrievals: Vec<(String, String)>,
    ) -> Retrievals {
        let retrievals = Arc::new(retrievals);
        let mut kept = self.kept.write().unwrap();
        if kept.at(version) {
            kept.retrievals.insert(name.to_string(), retrievals.clone());
        }
        retrievals
    }

    /// The start trigger of `name` as read at `version`, if kept at that version.
    pub fn trigger(&self, version: i64, name: &str) -> Option<TriggerRow> {
        let kept = self.kept.read().unwrap();
        (kept.version == version)
            .then(|| kept.triggers.get(name).cloned())
            .flatten()
    }

    /// Keeps the start trigger of `name` read at `version`.
    pub fn keep_trigger(&self, version: i64, name: &str, trigger: &TriggerRow) {
        let mut kept = self.kept.write().unwrap();
        if kept.at(version) {
            kept.triggers.insert(name.to_string(), trigger.clone());
        }
    }

    /// Forgets everything: the database's catalog moved on.
    pub fn forget(&self) {
        *self.kept.write().unwrap() = Kept::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger() -> TriggerRow {
        TriggerRow {
            process_model_identifier: crate::ids::ModelId::parse("shop/orders").unwrap(),
            process_id: "orders".into(),
            start_event_id: "start".into(),
            model_version: "v1".into(),
        }
    }

    #[test]
    fn what_was_read_at_an_older_version_is_not_served_next_to_a_newer_one() {
        let catalog = MessageCatalog::default();
        catalog.keep_retrievals(3, "paid", vec![("order_id".into(), "order_id".into())]);
        catalog.keep_trigger(3, "placed", &trigger());
        assert_eq!(catalog.retrievals("paid").unwrap().0, 3);
        assert!(catalog.trigger(3, "placed").is_some());
        assert!(catalog.trigger(4, "placed").is_none());

        catalog.keep_retrievals(4, "other", vec![("k".into(), "k".into())]);
        assert!(catalog.retrievals("paid").is_none());
        assert!(catalog.trigger(3, "placed").is_none());
        // a late reader of the older version keeps nothing
        catalog.keep_trigger(3, "placed", &trigger());
        assert!(catalog.trigger(3, "placed").is_none());
        assert_eq!(catalog.retrievals("other").unwrap().0, 4);

        catalog.forget();
        assert!(catalog.retrievals("other").is_none());
    }

    #[test]
    fn the_kept_names_are_bounded() {
        let catalog = MessageCatalog::default();
        catalog.keep_retrievals(1, "made up", Vec::new());
        assert!(catalog.retrievals("made up").unwrap().1.is_empty());
        for n in 0..MAX_NAMES + 1 {
            catalog.keep_retrievals(1, &format!("n{n}"), vec![("k".into(), "k".into())]);
        }
        assert!(catalog.kept.read().unwrap().names() <= MAX_NAMES);
    }
}
