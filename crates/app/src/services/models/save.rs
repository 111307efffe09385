//! Saving a model: its files built into a spec and checked against the other models (a
//! message start or a process id only one model may have), then stored as its current version
//! with what routing needs (message starts, correlation retrievals, the processes and
//! decisions it defines), and its start events scheduled.

use super::starts::schedule_starts;
use crate::bpmn::{ModelError, ModelSpec};
use crate::ids::ModelId;
use crate::services::model_cache::build_off_async_threads;
use crate::services::{Error, ErrorCode, ModelCache, Result};
use crate::store::{self, models::Retrieval, models::Trigger};
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use std::sync::Arc;

/// What `process_model.json` may say about a model (as SpiffArena writes it).
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct ModelMetadata {
    pub display_name: Option<String>,
    pub primary_file_name: Option<String>,
    pub primary_process_id: Option<String>,
}

/// Builds, validates and stores a model from its complete set of files (one transaction),
/// with the `python_warnings` the script host found in them besides the warnings of the build.
pub(super) async fn save_model(
    conn: &mut sqlx::PgConnection,
    cache: &ModelCache,
    identifier: &ModelId,
    metadata: &ModelMetadata,
    files: &[(String, String)],
    python_warnings: Vec<ModelError>,
) -> Result<Arc<ModelSpec>> {
    let primary_process_id = primary_process_id(metadata, files);
    let mut spec = build_off_async_threads(files.to_vec(), primary_process_id)
        .await?
        .map_err(invalid_model)?;
    spec.warnings.extend(python_warnings);
    spec.warnings.sort_by(|a, b| {
        (&a.file, &a.element_id, &a.reason).cmp(&(&b.file, &b.element_id, &b.reason))
    });
    spec.warnings.dedup();
    check_message_starts_are_free(conn, identifier, &spec).await?;
    check_process_ids_are_free(conn, identifier, &spec).await?;
    let sha = version_sha(&spec.primary_process_id, files);
    store_version(conn, identifier, metadata, &spec, &sha, files).await?;
    store_routing(conn, identifier, &spec).await?;
    store_definitions(conn, identifier, &spec).await?;
    schedule_starts(conn, cache, identifier, &spec).await?;
    let spec = Arc::new(spec);
    cache.insert(&sha, spec.clone());
    Ok(spec)
}

/// The primary process `process_model.json` names: its id, or the first process of the
/// primary file it names; `None` leaves it to the rule in `build_model`.
fn primary_process_id(metadata: &ModelMetadata, files: &[(String, String)]) -> Option<String> {
    match (&metadata.primary_process_id, &metadata.primary_file_name) {
        (Some(id), _) => Some(id.clone()),
        // a primary file without a process id: its first process
        (None, Some(file)) => files
            .iter()
            .find(|(name, _)| name == file)
            .and_then(|(name, xml)| crate::bpmn::parse_file(name, xml).ok())
            .and_then(|d| d.processes.first().map(|p| p.id.clone())),
        (None, None) => None,
    }
}

/// One model owns a start message: `message_start_conflict` when another model's message
/// start event already has one of this model's.
async fn check_message_starts_are_free(
    conn: &mut sqlx::PgConnection,
    identifier: &ModelId,
    spec: &ModelSpec,
) -> Result<()> {
    for start in &spec.message_starts {
        if let Some(owner) =
            store::models::trigger_owner(conn, &start.message_name, identifier).await?
        {
            return Err(Error::refused(
                ErrorCode::MessageStartConflict,
                format!(
                    "message '{}' already starts process model '{owner}'; one model owns a start message",
                    start.message_name
                ),
            )
            .with_extra(json!({ "message_name": start.message_name, "process_model_identifier": owner })));
        }
    }
    Ok(())
}

/// No other model defines one of this model's processes (see [`process_id_conflict`]).
async fn check_process_ids_are_free(
    conn: &mut sqlx::PgConnection,
    identifier: &ModelId,
    spec: &ModelSpec,
) -> Result<()> {
    let process_ids: Vec<&str> = spec.processes.keys().map(String::as_str).collect();
    if let Some((process_id, owner)) = store::models::process_owners(conn, &process_ids, identifier)
        .await?
        .into_iter()
        .next()
    {
        return Err(process_id_conflict(identifier, &process_id, owner.as_str()));
    }
    Ok(())
}

/// The model's row (its current version `sha`), the version, and its files.
async fn store_version(
    conn: &mut sqlx::PgConnection,
    identifier: &ModelId,
    metadata: &ModelMetadata,
    spec: &ModelSpec,
    sha: &str,
    files: &[(String, String)],
) -> Result<()> {
    let display_name = metadata.display_name.clone().unwrap_or_else(|| {
        let identifier = identifier.as_str();
        identifier
            .rsplit('/')
            .next()
            .unwrap_or(identifier)
            .to_string()
    });
    store::models::upsert(
        conn,
        &store::models::NewModel {
            identifier,
            display_name: &display_name,
            primary_file_name: metadata.primary_file_name.as_deref(),
            primary_process_id: &spec.primary_process_id,
            summary: &spec.summary(),
            version_sha: sha,
        },
    )
    .await?;
    store::models::insert_version(conn, identifier, sha, &spec.primary_process_id, files).await?;
    for (name, content) in files {
        store::models::upsert_file(
            conn,
            identifier,
            name,
            content,
            &sha256_hex(content.as_bytes()),
        )
        .await?;
    }
    Ok(())
}

/// What routes messages to the model: its message start events and its correlation
/// properties' retrieval expressions.
async fn store_routing(
    conn: &mut sqlx::PgConnection,
    identifier: &ModelId,
    spec: &ModelSpec,
) -> Result<()> {
    let triggers: Vec<Trigger> = spec
        .message_starts
        .iter()
        .map(|s| Trigger {
            message_name: &s.message_name,
            process_id: &s.process_id,
            start_event_id: &s.start_event_id,
        })
        .collect();
    let retrievals: Vec<Retrieval> = spec
        .correlation_properties
        .iter()
        .flat_map(|property| {
            property
                .retrieval
                .iter()
                .map(move |(message_name, expression)| Retrieval {
                    message_name,
                    property_id: &property.id,
                    expression: expression.source(),
                })
        })
        .collect();
    store::models::replace_routing(conn, identifier, &triggers, &retrievals).await?;
    Ok(())
}

/// The processes and decisions the model defines, by which call activities and business rule
/// tasks of other models find it.
async fn store_definitions(
    conn: &mut sqlx::PgConnection,
    identifier: &ModelId,
    spec: &ModelSpec,
) -> Result<()> {
    let process_ids: Vec<&str> = spec.processes.keys().map(String::as_str).collect();
    store::models::replace_process_definitions(conn, identifier, &process_ids)
        .await
        .map_err(|e| match e {
            // another model took one of the ids since the check
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                process_id_conflict(identifier, "(one of its processes)", "another model")
            }
            other => other.into(),
        })?;
    let decision_ids: Vec<&str> = spec.decisions.keys().map(String::as_str).collect();
    store::models::replace_decision_definitions(conn, identifier, &decision_ids).await?;
    Ok(())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The version of a model: its primary process and every file's content.
fn version_sha(primary_process_id: &str, files: &[(String, String)]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(primary_process_id.as_bytes());
    for (name, content) in files {
        hasher.update([0]);
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(sha256_hex(content.as_bytes()).as_bytes());
    }
    hex::encode(hasher.finalize())
}

pub(super) fn invalid_model(error: ModelError) -> Error {
    Error::refused(ErrorCode::InvalidProcessModel, error.to_string()).with_extra(json!({
        "file_name": error.file,
        "element_id": error.element_id,
        "reason": error.reason,
    }))
}

/// Indexes the processes of models stored before `process_definitions` existed (once: an
/// indexed model is skipped). A process id two of them define stays with the first, by
/// identifier; the other model's upload would now be refused, so it is only logged.
pub async fn index_process_definitions(pool: &PgPool, cache: &ModelCache) -> Result<()> {
    let mut conn = pool.acquire().await?;
    for (identifier, version) in store::models::without_process_definitions(&mut conn).await? {
        let spec = cache.spec(&mut conn, &identifier, &version).await?;
        let mut tx = pool.begin().await?;
        let ids: Vec<&str> = spec.processes.keys().map(String::as_str).collect();
        let taken = store::models::process_owners(&mut tx, &ids, &identifier).await?;
        let free: Vec<&str> = ids
            .into_iter()
            .filter(|id| !taken.iter().any(|(taken, _)| taken == id))
            .collect();
        for (process_id, owner) in &taken {
            tracing::warn!(%identifier, %process_id, %owner, "a process id defined by two models stays with the first");
        }
        store::models::replace_process_definitions(&mut tx, &identifier, &free).await?;
        tx.commit().await?;
    }
    Ok(())
}

/// Process ids are looked up service-wide (a call activity finds a process of another model by
/// its id), so two models may not define the same one.
fn process_id_conflict(identifier: &ModelId, process_id: &str, owner: &str) -> Error {
    Error::refused(
        ErrorCode::ProcessIdConflict,
        format!(
            "process '{process_id}' is already defined by process model '{owner}'; process ids are unique across models (call activities find processes by id), so '{identifier}' cannot define it too"
        ),
    )
    .with_extra(json!({ "process_id": process_id, "process_model_identifier": owner }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_changes_with_any_file_or_the_primary_process() {
        let files = vec![("a.bpmn".to_string(), "<x/>".to_string())];
        let v1 = version_sha("p", &files);
        assert_eq!(v1, version_sha("p", &files));
        assert_ne!(v1, version_sha("q", &files));
        assert_ne!(
            v1,
            version_sha("p", &[("a.bpmn".to_string(), "<y/>".to_string())])
        );
    }
}
