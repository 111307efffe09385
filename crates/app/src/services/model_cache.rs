//! Compiled models and retrieval expressions, kept per process. Keyed by content (the
//! model's `version_sha`, the expression's source), so replicas never serve a stale model.

use super::clock::{Clock, SystemClock};
use super::message_catalog::MessageCatalog;
use super::service_tasks::{AcceptedCalls, CallHandOff, ReservedSlot};
use super::Result;
use crate::bpmn::{build_model, ModelError, ModelSpec};
use crate::expr::{Expression, ScriptHost};
use crate::ids::ModelId;
use crate::store;
use anyhow::anyhow;
use sqlx::PgConnection;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// `build_model` on a blocking thread: a large model takes a while to read and check (up to
/// the limits of `crate::bpmn::limits`), and an async thread busy with it would hold up every
/// request it serves.
pub(crate) async fn build_off_async_threads(
    files: Vec<(String, String)>,
    primary_process_id: Option<String>,
) -> Result<std::result::Result<ModelSpec, ModelError>> {
    tokio::task::spawn_blocking(move || build_model(&files, primary_process_id.as_deref()))
        .await
        .map_err(|e| anyhow!("building a model failed: {e}").into())
}

pub struct ModelCache {
    specs: RwLock<HashMap<String, Arc<ModelSpec>>>,
    expressions: RwLock<HashMap<String, Arc<Expression>>>,
    /// The Python every model's scripts run on.
    scripts: Arc<dyn ScriptHost>,
    /// What the script functions say about this service.
    site: ScriptSite,
    /// Where steps read the time and draw their task ids' seeds.
    clock: Arc<dyn Clock>,
    /// Each message name's retrievals and start trigger, checked against the database's
    /// version where used.
    catalog: MessageCatalog,
    /// Where units of work hand the connector calls they schedule, while this replica's
    /// dispatcher runs (see `service_tasks::hand_off`).
    calls: RwLock<Option<Arc<CallHandOff>>>,
    /// The proxies' 202s this replica has not recorded yet (see `service_tasks::acceptances`):
    /// units of work that end a task's job forget its 202 here.
    accepted_calls: AcceptedCalls,
}

/// What the script functions `get_frontend_url()` and `get_env()` answer.
#[derive(Clone, Debug, Default)]
pub struct ScriptSite {
    pub frontend_url: String,
    pub env_identifier: String,
}

impl ModelCache {
    pub fn new(scripts: Arc<dyn ScriptHost>) -> ModelCache {
        ModelCache {
            specs: RwLock::default(),
            expressions: RwLock::default(),
            scripts,
            site: ScriptSite::default(),
            clock: Arc::new(SystemClock),
            catalog: MessageCatalog::default(),
            calls: RwLock::default(),
            accepted_calls: AcceptedCalls::default(),
        }
    }

    pub fn catalog(&self) -> &MessageCatalog {
        &self.catalog
    }

    /// Steps read the time and draw their seeds from `clock` (tests fix them).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> ModelCache {
        self.clock = clock;
        self
    }

    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    pub fn with_site(mut self, site: ScriptSite) -> ModelCache {
        self.site = site;
        self
    }

    pub fn site(&self) -> &ScriptSite {
        &self.site
    }

    /// Units of work hand the calls they schedule to `calls` from now on (`None`: to no one;
    /// they are claimed by a dispatcher).
    pub fn hand_calls_to(&self, calls: Option<Arc<CallHandOff>>) {
        *self.calls.write().expect("hand-off lock") = calls;
    }

    /// A slot of the running dispatcher for a call about to be scheduled, if it has one free.
    pub fn reserve_call_slot(&self) -> Option<ReservedSlot> {
        self.calls
            .read()
            .expect("hand-off lock")
            .as_ref()?
            .reserve()
    }

    /// The proxies' 202s not recorded yet.
    pub fn accepted_calls(&self) -> &AcceptedCalls {
        &self.accepted_calls
    }

    /// The Python models' scripts and expressions run on.
    pub fn scripts(&self) -> Arc<dyn ScriptHost> {
        self.scripts.clone()
    }

    /// The compiled model for this identifier at this version, built from the version's
    /// stored files on a miss.
    pub async fn spec(
        &self,
        conn: &mut PgConnection,
        identifier: &ModelId,
        version_sha: &str,
    ) -> Result<Arc<ModelSpec>> {
        self.version_spec(conn, identifier, version_sha)
            .await?
            .ok_or_else(|| {
                // an instance stored before starts and deletes were serialised may outlive
                // its model: what steps it is refused, never a 500
                super::Error::refused(
                    super::ErrorCode::ProcessModelVersionNotFound,
                    format!(
                        "version {version_sha} of process model '{identifier}' is gone (the \
                         model was deleted): nothing can step against it"
                    ),
                )
            })
    }

    /// As [`ModelCache::spec`], `None` when the model has no such version.
    pub async fn version_spec(
        &self,
        conn: &mut PgConnection,
        identifier: &ModelId,
        version_sha: &str,
    ) -> Result<Option<Arc<ModelSpec>>> {
        if let Some(spec) = self.specs.read().expect("cache lock").get(version_sha) {
            return Ok(Some(spec.clone()));
        }
        let Some(version) = store::models::version(conn, identifier, version_sha).await? else {
            return Ok(None);
        };
        let built = build_off_async_threads(version.files(), Some(version.primary_process_id));
        let spec = built
            .await?
            .map_err(|e| anyhow!("stored model {identifier} no longer builds: {e}"))?;
        let spec = Arc::new(spec);
        self.insert(version_sha, spec.clone());
        Ok(Some(spec))
    }

    /// A spec cached under `key` (a version, or a version linked with its callees).
    pub fn cached(&self, key: &str) -> Option<Arc<ModelSpec>> {
        self.specs.read().expect("cache lock").get(key).cloned()
    }

    pub fn insert(&self, version_sha: &str, spec: Arc<ModelSpec>) {
        self.specs
            .write()
            .expect("cache lock")
            .insert(version_sha.to_string(), spec);
    }

    /// A retrieval expression compiled once per process.
    pub fn expression(&self, source: &str) -> Option<Arc<Expression>> {
        if let Some(e) = self.expressions.read().expect("cache lock").get(source) {
            return Some(e.clone());
        }
        let compiled = Arc::new(Expression::compile(source).ok()?);
        self.expressions
            .write()
            .expect("cache lock")
            .insert(source.to_string(), compiled.clone());
        Some(compiled)
    }
}
