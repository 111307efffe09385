//! Processes and decisions of other models: a call activity whose process, or a business
//! rule task whose decision, is not in the instance's model stops its run where a token
//! reaches it (`Run::AsksFor`); the unit finds the model that defines it
//! (`process_definitions`, `decision_definitions`), pins that model's current version on the
//! instance (the version used for the instance's life), links it into the spec the instance
//! steps against, and continues the run where it stopped. What no model defines (or, for a decision, several
//! do), or what cannot be linked, is marked unavailable and the step fails the instance with
//! the reason.

use super::super::{ModelCache, Result};
use super::UnitOfWork;
use crate::bpmn::{call_depth, Callee, ModelSpec, MAX_CALL_DEPTH};
use crate::ids::ModelId;
use crate::store;
use anyhow::anyhow;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// More callee lookups than this for one step means something is wrong with the models.
pub(super) const MAX_CALLEE_LOOKUPS: usize = 64;

/// The model version a called process runs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub model: ModelId,
    pub version: String,
}

/// Which model defines a called process or decision.
enum Definer {
    /// This model, at its current version.
    Model { model: ModelId, version: String },
    /// No model (or, for a decision, several): why, as the instance's error says it.
    Missing(String),
}

/// What an instance knows of the processes it calls from other models.
#[derive(Clone, Debug, Default)]
pub(super) struct Callees {
    /// By `Callee::key`; pinned when first used, stored on the instance
    /// (`process_instances.callees`).
    pub pins: BTreeMap<String, Pin>,
    /// Found not runnable in this unit (the step then fails the instance), with the reason.
    pub unavailable: BTreeMap<String, String>,
}

impl Callees {
    pub fn from_stored(stored: &serde_json::Value) -> Result<Callees> {
        Ok(Callees {
            pins: serde_json::from_value(stored.clone())
                .map_err(|e| anyhow!("stored callees are unreadable: {e}"))?,
            unavailable: BTreeMap::new(),
        })
    }

    fn is_empty(&self) -> bool {
        self.pins.is_empty() && self.unavailable.is_empty()
    }

    /// The key of the linked spec in the model cache.
    fn cache_key(&self, version: &str) -> String {
        let pins: Vec<String> = self
            .pins
            .iter()
            .map(|(process, pin)| format!("{process}={}@{}", pin.model, pin.version))
            .collect();
        format!("{version}+{}", pins.join(","))
    }
}

/// The spec an instance of `identifier` at `version` steps against: the version's, linked
/// with the processes it calls from other models.
pub(super) async fn linked_spec(
    conn: &mut PgConnection,
    cache: &ModelCache,
    identifier: &ModelId,
    version: &str,
    callees: &Callees,
) -> Result<Arc<ModelSpec>> {
    let base = cache.spec(conn, identifier, version).await?;
    if callees.is_empty() {
        return Ok(base);
    }
    let key = callees.cache_key(version);
    if callees.unavailable.is_empty() {
        if let Some(spec) = cache.cached(&key) {
            return Ok(spec);
        }
    }
    let mut specs = Vec::with_capacity(callees.pins.len());
    let mut unrolled = BTreeSet::new();
    for (key, pin) in &callees.pins {
        match Callee::from_key(key) {
            Callee::Recursion(call) => {
                unrolled.insert(call);
            }
            callee => specs.push((callee, cache.spec(conn, &pin.model, &pin.version).await?)),
        }
    }
    // copying the callees in takes time in proportion to them: off the async threads
    let unavailable = callees.unavailable.clone();
    let linked = tokio::task::spawn_blocking(move || {
        let specs: Vec<(Callee, &ModelSpec)> = specs
            .iter()
            .map(|(callee, spec)| (callee.clone(), spec.as_ref()))
            .collect();
        base.with_callees_unrolled(&specs, unavailable, &unrolled)
    })
    .await
    .map_err(|e| anyhow!("linking a model's callees failed: {e}"))?
    .map_err(|e| anyhow!("linking the processes {identifier} calls: {e}"))?;
    let linked = Arc::new(linked);
    if callees.unavailable.is_empty() {
        cache.insert(&key, linked.clone());
    }
    Ok(linked)
}

impl<'c> UnitOfWork<'c> {
    /// A step of an instance of `identifier` at `version` needs `callee`: pins the current
    /// version of the model defining it, or marks it unavailable; the spec to step again with.
    pub(super) async fn provide_callee(
        &mut self,
        identifier: &ModelId,
        version: &str,
        callees: &mut Callees,
        callee: &Callee,
    ) -> Result<Arc<ModelSpec>> {
        let key = callee.key();
        match self.definer(callee, identifier, version).await? {
            Definer::Missing(reason) => {
                callees.unavailable.insert(key.clone(), reason);
            }
            Definer::Model { model, version } => {
                callees.pins.insert(key.clone(), Pin { model, version });
            }
        }
        let cache = self.cache;
        match linked_spec(
            self.db_without_new_rows(),
            cache,
            identifier,
            version,
            callees,
        )
        .await
        {
            Ok(spec) => Ok(spec),
            Err(error) => {
                // e.g. the callee calls back into its caller: a model error of the instance
                callees.pins.remove(&key);
                callees.unavailable.insert(
                    key,
                    format!(
                        "{} cannot be run: {error}",
                        capitalized(&callee.described())
                    ),
                );
                linked_spec(
                    self.db_without_new_rows(),
                    cache,
                    identifier,
                    version,
                    callees,
                )
                .await
            }
        }
    }

    /// The model (and its current version) that defines `callee`, or why there is none.
    async fn definer(
        &mut self,
        callee: &Callee,
        identifier: &ModelId,
        version: &str,
    ) -> Result<Definer> {
        let found = match callee {
            Callee::Recursion(call) => return Ok(recursion(call, identifier, version)),
            Callee::Process(id) => {
                match store::models::process_definer(self.db_without_new_rows(), id).await? {
                    Some(definer) => definer,
                    None => {
                        return Ok(Definer::Missing(format!(
                            "The called process '{id}' was not found: no process model defines it"
                        )))
                    }
                }
            }
            Callee::Decision(id) => {
                let mut definers =
                    store::models::decision_definers(self.db_without_new_rows(), id).await?;
                match definers.len() {
                    0 => return Ok(Definer::Missing(format!(
                        "The decision '{id}' was not found: no process model defines it (upload its .dmn file with a model)"
                    ))),
                    1 => definers.remove(0),
                    _ => {
                        let models: Vec<&str> = definers.iter().map(|(m, _)| m.as_str()).collect();
                        return Ok(Definer::Missing(format!(
                            "The decision '{id}' is defined by several process models ({}): keep the one to use in the calling model",
                            models.join(", ")
                        )));
                    }
                }
            }
        };
        let (model, version) = found;
        Ok(Definer::Model { model, version })
    }
}

/// A recursive call is copied in from the processes the instance already has (pinned under
/// the instance's own model), unless it is deeper than `MAX_CALL_DEPTH`.
fn recursion(call: &str, identifier: &ModelId, version: &str) -> Definer {
    let depth = call_depth(call);
    if depth > MAX_CALL_DEPTH {
        return Definer::Missing(format!(
            "The call activity would run {depth} calls deep: a process calling itself runs at most {MAX_CALL_DEPTH} calls deep (the limit)"
        ));
    }
    Definer::Model {
        model: identifier.clone(),
        version: version.to_string(),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
