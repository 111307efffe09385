//! Data stores in the unit: before a step of a model that uses stores, what they hold (the
//! engine is pure: it is given them); after it, the step's writes, in the same transaction.
//!
//! A store is found as SpiffArena finds it: by kind and identifier, at the deepest location
//! (process group path) that contains the instance's model. Stores a model writes are locked
//! for the rest of the transaction, so two instances writing one store do not lose each
//! other's updates (locks are taken in store id order, the same order for every step).

use super::super::{Error, Result};
use super::UnitOfWork;
use crate::bpmn::{DataStoreKind, ModelSpec};
use crate::engine::{DataStoreContents, StoreContent};
use crate::ids::InstanceId;
use crate::ids::ModelId;
use crate::store;
use anyhow::anyhow;
use serde_json::{Map, Value};
use std::sync::Arc;

/// A step loads at most this many entries of a KKV store (its getter answers from them).
pub const MAX_KKV_ENTRIES_PER_STEP: usize = 10_000;

impl UnitOfWork<'_> {
    /// What the stores of `spec` hold, as an instance of `model` sees them.
    pub(super) async fn data_store_contents(
        &mut self,
        model: &ModelId,
        spec: &ModelSpec,
    ) -> Result<DataStoreContents> {
        let mut contents = DataStoreContents::default();
        if spec.data_stores.is_empty() {
            return Ok(contents);
        }
        let locations = locations_of(model);
        for (id, used) in &spec.data_stores {
            if used.kind == DataStoreKind::Typeahead {
                continue; // written only; it needs no creation
            }
            let found = store::data_stores::find_for(
                self.db().await?,
                used.kind.as_str(),
                id,
                &locations,
                used.written,
            )
            .await?;
            if let Some((row_id, _)) = &found {
                self.data_store_rows
                    .insert((model.clone(), id.clone()), *row_id);
            }
            let content = match (found, used.kind) {
                (None, kind) => StoreContent::Unavailable(format!(
                    "no {} '{id}' exists for the model '{model}' (create it with PUT /v1.0/data-stores/{}/{id})",
                    kind.class_name(),
                    kind.as_str()
                )),
                (Some((store_id, _)), DataStoreKind::Kkv) => self.kkv_content(store_id).await?,
                (Some((_, data)), _) => StoreContent::Value(data),
            };
            contents.stores.insert(id.clone(), content);
        }
        Ok(contents)
    }

    async fn kkv_content(&mut self, store_id: i64) -> Result<StoreContent> {
        let limit = MAX_KKV_ENTRIES_PER_STEP as i64 + 1;
        let rows = store::data_stores::kkv_entries(self.db().await?, store_id, 0, limit).await?;
        if rows.len() > MAX_KKV_ENTRIES_PER_STEP {
            return Ok(StoreContent::Unavailable(format!(
                "the KKV store holds more than {MAX_KKV_ENTRIES_PER_STEP} entries, more than a step loads"
            )));
        }
        let mut entries = Map::new();
        for (top, secondary, value) in rows {
            if let Value::Object(under) = entries
                .entry(top)
                .or_insert_with(|| Value::Object(Map::new()))
            {
                under.insert(secondary, value);
            }
        }
        Ok(StoreContent::Entries(Arc::new(entries)))
    }

    /// Carries out a store write of instance `id`'s step (the engine checked the value).
    pub(super) async fn write_data_store(
        &mut self,
        id: InstanceId,
        store_id: &str,
        kind: DataStoreKind,
        value: Value,
    ) -> Result<()> {
        let model = self.instances[&id].process_model_identifier.clone();
        if kind == DataStoreKind::Typeahead {
            for (category, items) in value.as_object().into_iter().flatten() {
                let items: Vec<(String, Value)> = items
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|item| {
                        let term = item["search_term"].as_str().unwrap_or_default();
                        (term.to_string(), item["result"].clone())
                    })
                    .collect();
                store::data_stores::typeahead_replace(self.db().await?, category, &items).await?;
            }
            return Ok(());
        }
        // the step was given the store's content, loaded (and locked) by this unit: the engine
        // refuses a write to a store that was not found
        let Some(&row_id) = self.data_store_rows.get(&(model, store_id.to_string())) else {
            return Err(Error::Internal(anyhow!(
                "instance {id} wrote the data store '{store_id}', which its step was not given"
            )));
        };
        if kind != DataStoreKind::Kkv {
            store::data_stores::set_data(self.db().await?, row_id, &value).await?;
            return Ok(());
        }
        for (top, second) in value.as_object().into_iter().flatten() {
            match second {
                Value::Object(seconds) => {
                    let entries: Vec<(String, Option<Value>)> = seconds
                        .iter()
                        .map(|(k, v)| (k.clone(), (!v.is_null()).then(|| v.clone())))
                        .collect();
                    store::data_stores::kkv_write(self.db().await?, row_id, top, &entries).await?;
                }
                _ => store::data_stores::kkv_delete_top(self.db().await?, row_id, top).await?,
            }
        }
        Ok(())
    }
}

/// Where a model's stores may be, deepest first: `a/b/m` -> `a/b/m`, `a/b`, `a`, `` (every
/// model).
pub fn locations_of(model: &ModelId) -> Vec<String> {
    let mut locations = vec![model.to_string()];
    let mut path = model.as_str();
    while let Some((parent, _)) = path.rsplit_once('/') {
        locations.push(parent.to_string());
        path = parent;
    }
    locations.push(String::new());
    locations
}

#[cfg(test)]
mod tests {
    use super::locations_of;

    #[test]
    fn a_model_sees_the_stores_of_its_groups_deepest_first() {
        let model = |id: &str| crate::ids::ModelId::parse(id).unwrap();
        assert_eq!(locations_of(&model("a/b/m")), ["a/b/m", "a/b", "a", ""]);
        assert_eq!(locations_of(&model("m")), ["m", ""]);
    }
}
