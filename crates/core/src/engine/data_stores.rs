//! Data stores, with SpiffArena's semantics: a task that reads a store (`dataInputAssociation`
//! from a data store reference) finds its content in its data under the store's id while it
//! runs (a KKV store: a getter function `store(top_key, secondary_key)` for its scripts, as
//! SpiffArena's); a task that writes one (`dataOutputAssociation`) hands the value it leaves
//! under the store's id to the store when it completes, and the value leaves its data.
//!
//! The core does no IO: the shell loads what the model's stores hold before the step
//! ([`DataStoreContents`](super::DataStoreContents)) and applies the step's writes ([`super::Effect::WriteDataStore`]) in
//! the step's transaction. Within a step a read sees the step's earlier writes.

use super::context::StoreContent;
use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::Effect;
use crate::bpmn::{DataStoreKind, ElementSpec};
use serde_json::{Map, Value};
use std::sync::Arc;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    /// Before the task runs: the JSON stores it reads go into its data (a KKV store reaches
    /// its scripts as a getter, see [`Interpreter::kkv_getters`]).
    pub fn read_data_stores(&mut self, guid: Uuid, element: &ElementSpec) -> Outcome {
        let owner = self.state.data_owner(Some(guid));
        for store in &element.store_reads {
            let value = match self.store_content(store) {
                StoreContent::Value(value) => value.clone(),
                StoreContent::Entries(_) => continue,
                StoreContent::Unavailable(why) => {
                    return Err(ModelFailure::new(
                        &element.id,
                        format!("Unable to read from data store '{store}': {why}"),
                    ))
                }
            };
            self.state.data_of_mut(owner).insert(store.clone(), value);
        }
        Ok(())
    }

    /// When the task completes: each store it writes takes the value under its id out of its
    /// data (checked as SpiffArena checks it); the stores it only read leave its data.
    pub fn write_data_stores(&mut self, guid: Uuid, element: &ElementSpec) -> Outcome {
        let owner = self.state.data_owner(Some(guid));
        for store in &element.store_writes {
            let value = self.state.data_of_mut(owner).remove(store).ok_or_else(|| {
                ModelFailure::new(
                    &element.id,
                    format!("the data store '{store}' it writes is missing from the task data"),
                )
            })?;
            let kind = self.model.data_stores[store].kind;
            let written = self.written_content(store, kind, &value).map_err(|why| {
                ModelFailure::new(
                    &element.id,
                    format!("Unable to write to data store '{store}': {why}"),
                )
            })?;
            if let Some(content) = written {
                self.store_writes.insert(store.clone(), content);
            }
            self.effects.push(Effect::WriteDataStore {
                task_guid: guid,
                store: store.clone(),
                kind,
                value,
            });
        }
        for store in &element.store_reads {
            self.state.data_of_mut(owner).remove(store);
        }
        Ok(())
    }

    /// The KKV stores the current task reads, for its scripts' getters: store id -> entries.
    pub(super) fn kkv_getters(&self) -> Option<Map<String, Value>> {
        let guid = self.current.filter(|guid| self.has_task(*guid))?;
        let element = self.element_of(guid);
        let mut getters = Map::new();
        for store in &element.store_reads {
            if let StoreContent::Entries(entries) = self.store_content(store) {
                getters.insert(store.clone(), Value::Object(entries.as_ref().clone()));
            }
        }
        (!getters.is_empty()).then_some(getters)
    }

    /// What a store holds now: the step's own write, else what the shell loaded.
    fn store_content(&self, store: &str) -> &StoreContent {
        static NOT_LOADED: std::sync::LazyLock<StoreContent> =
            std::sync::LazyLock::new(|| StoreContent::Unavailable("it was not loaded".into()));
        self.store_writes
            .get(store)
            .or_else(|| self.context.data_stores.stores.get(store))
            .unwrap_or(&NOT_LOADED)
    }

    /// What the store holds after `value` is written to it (None: nothing this step reads,
    /// a typeahead store); Err: why the value cannot be written.
    fn written_content(
        &self,
        store: &str,
        kind: DataStoreKind,
        value: &Value,
    ) -> Result<Option<StoreContent>, String> {
        match kind {
            DataStoreKind::Typeahead => {
                typeahead_checked(store, value)?;
                Ok(None)
            }
            DataStoreKind::Json | DataStoreKind::JsonFile => match self.store_content(store) {
                StoreContent::Unavailable(why) => Err(why.clone()),
                _ => Ok(Some(StoreContent::Value(value.clone()))),
            },
            DataStoreKind::Kkv => match self.store_content(store) {
                StoreContent::Unavailable(why) => Err(why.clone()),
                StoreContent::Value(_) => Err("it is not a KKV store".into()),
                StoreContent::Entries(entries) => {
                    let mut entries = entries.as_ref().clone();
                    kkv_apply(store, &mut entries, value)?;
                    Ok(Some(StoreContent::Entries(Arc::new(entries))))
                }
            },
        }
    }
}

/// Applies a KKV write as SpiffArena does: a dict of top-level keys, each a dict of
/// secondary keys to values (None deletes that entry) or None (deletes every entry under it).
pub fn kkv_apply(
    store: &str,
    entries: &mut Map<String, Value>,
    value: &Value,
) -> Result<(), String> {
    let Value::Object(tops) = value else {
        return Err(format!(
            "When writing to this data store, a dictionary is expected as the value for variable '{store}'"
        ));
    };
    for (top, second) in tops {
        match second {
            Value::Null => {
                entries.remove(top);
            }
            Value::Object(seconds) => {
                let under = entries
                    .entry(top.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(under) = under else {
                    unreachable!("entries are dicts")
                };
                for (secondary, value) in seconds {
                    if value.is_null() {
                        under.remove(secondary);
                    } else {
                        under.insert(secondary.clone(), value.clone());
                    }
                }
                if under.is_empty() {
                    entries.remove(top);
                }
            }
            _ => {
                return Err(format!(
                    "When writing to this data store, a dictionary is expected as the value for '{store}[\"{top}\"]'"
                ))
            }
        }
    }
    Ok(())
}

/// A typeahead write: category -> list of `{"search_term": str, "result": dict}`.
fn typeahead_checked(store: &str, value: &Value) -> Result<(), String> {
    let Value::Object(categories) = value else {
        return Err(format!(
            "a dictionary of categories, each a list of items, is expected as the value for variable '{store}'"
        ));
    };
    for (category, items) in categories {
        let Value::Array(items) = items else {
            return Err(format!("'{store}[\"{category}\"]' must be a list of items"));
        };
        for item in items {
            if !(item["search_term"].is_string() && item["result"].is_object()) {
                return Err(format!(
                    "each item of '{store}[\"{category}\"]' must be a dict with a string 'search_term' and a dict 'result'"
                ));
            }
        }
    }
    Ok(())
}
