//! Process models: upload a file, load a folder of models at startup, list and show.

use super::{Error, ModelCache, Page, Result};
use crate::bpmn::{build_model, ModelError, ModelSpec};
use crate::expr::{ErrorKind, ScriptHost};
pub use crate::ids::ModelId;
use crate::services::ErrorCode;
use crate::store::{self, models::Retrieval, models::Trigger};
use anyhow::anyhow;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The longest process model identifier (bytes).
pub const MAX_IDENTIFIER_BYTES: usize = 255;
/// The longest segment of an identifier, and the longest file name (bytes).
pub const MAX_SEGMENT_BYTES: usize = 100;

/// A segment of an identifier, or a file name's stem: a letter or digit, then letters, digits,
/// `-`, `_` and `.` (so no hidden `.name`, no `..`, no spaces or control characters).
fn is_plain_name(segment: &str) -> bool {
    let mut chars = segment.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && segment.len() <= MAX_SEGMENT_BYTES
}

/// `group:sub:model` (URL form) -> `group/sub/model`, checked segment by segment.
pub fn identifier_from_url(modified: &str) -> Result<ModelId> {
    let identifier = modified.replace(':', "/");
    let valid =
        identifier.len() <= MAX_IDENTIFIER_BYTES && identifier.split('/').all(is_plain_name);
    if !valid {
        return Err(Error::refused(
            ErrorCode::InvalidProcessModelIdentifier,
            format!(
                "'{}' is not a process model identifier: segments separated by ':', each a \
                 letter or digit followed by letters, digits, '-', '_' and '.' (at most \
                 {MAX_SEGMENT_BYTES} bytes a segment, {MAX_IDENTIFIER_BYTES} in all)",
                cut(modified)
            ),
        ));
    }
    Ok(ModelId::checked(identifier))
}

/// A model file name: a plain name (see [`is_plain_name`]) ending in `.bpmn` or `.dmn`.
pub fn check_file_name(file_name: &str) -> Result<()> {
    let valid = [".bpmn", ".dmn"].iter().any(|suffix| {
        file_name
            .strip_suffix(suffix)
            .is_some_and(|stem| !stem.is_empty() && is_plain_name(file_name))
    });
    if valid {
        Ok(())
    } else {
        Err(Error::refused(
            ErrorCode::InvalidFileName,
            format!(
                "'{}' is not a model file name: a letter or digit, then letters, digits, '-', \
                 '_' and '.', ending in .bpmn or .dmn (at most {MAX_SEGMENT_BYTES} bytes)",
                cut(file_name)
            ),
        ))
    }
}

/// The start of a long name, for an error message (control characters escaped).
fn cut(text: &str) -> String {
    let shown: String = text.chars().take(80).collect();
    let shown = shown.escape_default().to_string();
    if text.chars().count() > 80 {
        format!("{shown}...")
    } else {
        shown
    }
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

fn invalid_model(error: ModelError) -> Error {
    Error::refused(ErrorCode::InvalidProcessModel, error.to_string()).with_extra(json!({
        "file_name": error.file,
        "element_id": error.element_id,
        "reason": error.reason,
    }))
}

/// Every expression and script of these files that the fast path cannot answer must compile
/// as CPython compiles it (asked of the script host, on a blocking thread, before any database
/// transaction begins: the files' own text is all it needs); the first that does not is the
/// model's error, naming its file, element, what it is for, and the line and column. A file
/// that does not parse is left to `build_model`, which says why.
async fn check_python(files: Vec<(String, String)>, scripts: Arc<dyn ScriptHost>) -> Result<()> {
    let refused = tokio::task::spawn_blocking(move || {
        files.iter().find_map(|(name, xml)| {
            if name.ends_with(".dmn") {
                return refused_decision_python(name, xml, scripts.as_ref());
            }
            let definitions = crate::bpmn::parse_file(name, xml).ok()?;
            definitions
                .python_sources()
                .iter()
                .filter(|source| source.needs_python)
                .find_map(|source| {
                    let error = scripts.check(source.source, source.is_script).err()?;
                    let reason = format!("{}: {}", source.what, error.message);
                    let element = Some(source.element_id);
                    Some((ModelError::new(source.file, element, reason), error.kind))
                })
        })
    })
    .await
    .map_err(|e| Error::Internal(anyhow!("the script check's thread failed: {e}")))?;
    match refused {
        None => Ok(()),
        Some((error, ErrorKind::Python)) => Err(invalid_model(error)),
        Some((error, _)) => Err(Error::ScriptsUnavailable(error.reason)),
    }
}

/// The first piece of Python in a `.dmn` file that CPython does not compile (each rule's
/// tests, as SpiffWorkflow would run them, and its outputs).
fn refused_decision_python(
    name: &str,
    xml: &str,
    scripts: &dyn ScriptHost,
) -> Option<(ModelError, ErrorKind)> {
    let decisions = crate::dmn::parse_dmn_file(name, xml).ok()?;
    decisions.iter().find_map(|decision| {
        decision
            .python_sources()
            .into_iter()
            .find_map(|(what, source)| {
                let error = scripts.check(source, false).err()?;
                let reason = format!("{what}: {}", error.message);
                Some((
                    ModelError::new(name, Some(&decision.id), reason),
                    error.kind,
                ))
            })
    })
}

/// What `process_model.json` may say about a model (as SpiffArena writes it).
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct ModelMetadata {
    pub display_name: Option<String>,
    pub primary_file_name: Option<String>,
    pub primary_process_id: Option<String>,
}

/// Builds, validates and stores a model from its complete set of files (one transaction).
async fn save_model(
    conn: &mut sqlx::PgConnection,
    cache: &ModelCache,
    identifier: &str,
    metadata: &ModelMetadata,
    files: &[(String, String)],
) -> Result<Arc<ModelSpec>> {
    let primary_process_id = match (&metadata.primary_process_id, &metadata.primary_file_name) {
        (Some(id), _) => Some(id.clone()),
        // a primary file without a process id: its first process
        (None, Some(file)) => files
            .iter()
            .find(|(name, _)| name == file)
            .and_then(|(name, xml)| crate::bpmn::parse_file(name, xml).ok())
            .and_then(|d| d.processes.first().map(|p| p.id.clone())),
        (None, None) => None,
    };
    let spec = build_model(files, primary_process_id.as_deref()).map_err(invalid_model)?;
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
    let process_ids: Vec<&str> = spec.processes.keys().map(String::as_str).collect();
    if let Some((process_id, owner)) = store::models::process_owners(conn, &process_ids, identifier)
        .await?
        .into_iter()
        .next()
    {
        return Err(process_id_conflict(identifier, &process_id, &owner));
    }
    let sha = version_sha(&spec.primary_process_id, files);
    let display_name = metadata.display_name.clone().unwrap_or_else(|| {
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
            version_sha: &sha,
        },
    )
    .await?;
    store::models::insert_version(conn, identifier, &sha, &spec.primary_process_id, files).await?;
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
    store::models::replace_process_definitions(conn, identifier, &process_ids)
        .await
        .map_err(|e| match e {
            // another model took one of the ids since the check above
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                process_id_conflict(identifier, "(one of its processes)", "another model")
            }
            other => other.into(),
        })?;
    let decision_ids: Vec<&str> = spec.decisions.keys().map(String::as_str).collect();
    store::models::replace_decision_definitions(conn, identifier, &decision_ids).await?;
    schedule_starts(conn, cache, identifier, &spec).await?;
    let spec = Arc::new(spec);
    cache.insert(&sha, spec.clone());
    Ok(spec)
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
fn process_id_conflict(identifier: &str, process_id: &str, owner: &str) -> Error {
    Error::refused(
        ErrorCode::ProcessIdConflict,
        format!(
            "process '{process_id}' is already defined by process model '{owner}'; process ids are unique across models (call activities find processes by id), so '{identifier}' cannot define it too"
        ),
    )
    .with_extra(json!({ "process_id": process_id, "process_model_identifier": owner }))
}

/// The version's timer start events get their next occurrence (an unchanged timer keeps the
/// one it had), and its signal starts replace the model's.
async fn schedule_starts(
    conn: &mut sqlx::PgConnection,
    cache: &ModelCache,
    identifier: &str,
    spec: &ModelSpec,
) -> Result<()> {
    let existing = store::timers::start_timers_of(conn, identifier).await?;
    let mut timers = vec![];
    for start in &spec.timer_starts {
        let timer = start.timer.clone().expect("a timer start has its timer");
        let source = timer.expression.source().to_string();
        let unchanged = existing.iter().find(|t| {
            t.start_event_id == start.start_event_id
                && t.process_id == start.process_id
                && t.expression == source
        });
        if let Some(kept) = unchanged {
            timers.push(kept.clone());
            continue;
        }
        let cx = super::clock::expr_context(cache);
        let needs_python = timer.expression.needs_python();
        let evaluate = move || crate::engine::first_start_occurrence(&timer, &cx);
        let first = if needs_python {
            tokio::task::spawn_blocking(evaluate)
                .await
                .map_err(|e| Error::Internal(anyhow!("a timer start's thread failed: {e}")))?
        } else {
            evaluate()
        };
        let cycle = first.map_err(|reason| {
            let file = &spec.processes[&start.process_id].file;
            invalid_model(ModelError::new(file, Some(&start.start_event_id), reason))
        })?;
        timers.push(store::timers::StartTimer {
            process_model_identifier: identifier.to_string(),
            start_event_id: start.start_event_id.clone(),
            process_id: start.process_id.clone(),
            expression: source,
            due_at: cycle.due,
            interval_ms: cycle.interval_ms,
            remaining: cycle
                .remaining
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        });
    }
    let signals: Vec<(String, String, String)> = spec
        .signal_starts
        .iter()
        .map(|s| {
            (
                s.signal_name
                    .clone()
                    .expect("a signal start has its signal"),
                s.process_id.clone(),
                s.start_event_id.clone(),
            )
        })
        .collect();
    store::timers::replace_starts(conn, identifier, &timers, &signals).await?;
    Ok(())
}

/// Creates or replaces one file of a model, creating the model if needed. `Ok(true)` when
/// the model was created.
pub async fn put_file(
    pool: &PgPool,
    cache: &ModelCache,
    model: &ModelId,
    file_name: &str,
    content: &str,
) -> Result<(bool, ModelDetail)> {
    let identifier = model.as_str();
    check_file_name(file_name)?;
    if content.contains('\0') {
        return Err(Error::refused(
            ErrorCode::InvalidProcessModel,
            "the file contains a NUL character",
        ));
    }
    // the other files were checked when they were uploaded
    let uploaded = vec![(file_name.to_string(), content.to_string())];
    check_python(uploaded, cache.scripts()).await?;
    let mut tx = pool.begin().await?;
    store::models::lock_identifier(&mut tx, identifier).await?;
    let existing = store::models::find(&mut tx, identifier).await?;
    let mut files: Vec<(String, String)> = store::models::files(&mut tx, identifier)
        .await?
        .into_iter()
        .filter(|f| f.file_name != file_name)
        .map(|f| (f.file_name, f.content))
        .collect();
    files.push((file_name.to_string(), content.to_string()));
    files.sort();
    let metadata = ModelMetadata {
        display_name: existing.as_ref().map(|m| m.display_name.clone()),
        primary_file_name: existing.as_ref().and_then(|m| m.primary_file_name.clone()),
        // derived again from the primary file (process_model.json) or the rule in build_model
        primary_process_id: None,
    };
    save_model(&mut tx, cache, identifier, &metadata, &files).await?;
    tx.commit().await?;
    Ok((existing.is_none(), show(pool, model).await?))
}

/// Loads every model under `root` (a folder holding `.bpmn` files is a model, with its
/// `.dmn` files; its path below `root` is its identifier). A model that does not load is logged and skipped.
pub async fn load_directory(
    pool: &PgPool,
    cache: &ModelCache,
    root: &Path,
) -> anyhow::Result<usize> {
    let mut folders = Vec::new();
    collect_model_folders(root, &mut folders)?;
    let mut loaded = 0;
    for folder in folders {
        let identifier = folder
            .strip_prefix(root)
            .unwrap_or(&folder)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        match load_folder(pool, cache, &identifier, &folder).await {
            Ok(()) => loaded += 1,
            Err(e) => tracing::error!(model = %identifier, error = %e, "process model not loaded"),
        }
    }
    Ok(loaded)
}

fn collect_model_folders(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    if entries
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "bpmn"))
    {
        out.push(dir.to_path_buf());
    }
    for entry in entries {
        if entry.is_dir() {
            collect_model_folders(&entry, out)?;
        }
    }
    Ok(())
}

async fn load_folder(
    pool: &PgPool,
    cache: &ModelCache,
    identifier: &str,
    folder: &Path,
) -> Result<()> {
    let identifier = identifier_from_url(identifier)?;
    let identifier = identifier.as_str();
    let metadata: ModelMetadata = match std::fs::read_to_string(folder.join("process_model.json")) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}/process_model.json: {e}", folder.display()))?,
        Err(_) => ModelMetadata::default(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(anyhow::Error::from)? {
        let path = entry.map_err(anyhow::Error::from)?.path();
        if path.extension().is_some_and(|e| e == "bpmn" || e == "dmn") {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push((
                name,
                std::fs::read_to_string(&path).map_err(anyhow::Error::from)?,
            ));
        }
    }
    files.sort();
    check_python(files.clone(), cache.scripts()).await?;
    let mut tx = pool.begin().await?;
    store::models::lock_identifier(&mut tx, identifier).await?;
    save_model(&mut tx, cache, identifier, &metadata, &files).await?;
    tx.commit().await?;
    Ok(())
}

/// 404 `process_model_not_found`.
pub fn model_not_found(identifier: &str) -> Error {
    Error::refused(
        ErrorCode::ProcessModelNotFound,
        format!("process model '{identifier}' does not exist"),
    )
}

/// A process model as stored (its current version).
pub type Model = store::models::ModelRow;

/// A version that live instances run on.
pub type VersionInUse = store::models::VersionInUse;

/// A file of the current version.
#[derive(Debug, Clone)]
pub struct ModelFile {
    pub name: String,
    pub sha256: String,
    pub size: usize,
}

/// A model with its files and the versions its live instances run on.
#[derive(Debug, Clone)]
pub struct ModelDetail {
    pub model: Model,
    pub files: Vec<ModelFile>,
    pub versions_in_use: Vec<VersionInUse>,
}

pub async fn show(pool: &PgPool, identifier: &ModelId) -> Result<ModelDetail> {
    let identifier = identifier.as_str();
    let mut conn = pool.acquire().await?;
    let model = store::models::find(&mut conn, identifier)
        .await?
        .ok_or_else(|| model_not_found(identifier))?;
    let files = store::models::files(&mut conn, identifier).await?;
    let versions_in_use = store::models::versions_in_use(&mut conn, identifier).await?;
    Ok(ModelDetail {
        model,
        files: files
            .into_iter()
            .map(|f| ModelFile {
                size: f.content.len(),
                name: f.file_name,
                sha256: f.sha256,
            })
            .collect(),
        versions_in_use,
    })
}

/// The content of one file of a model: of its current version, or of `version`.
pub async fn file(
    pool: &PgPool,
    identifier: &ModelId,
    file_name: &str,
    version: Option<&str>,
) -> Result<String> {
    check_file_name(file_name)?;
    let identifier = identifier.as_str();
    let mut conn = pool.acquire().await?;
    let files = match version {
        None => {
            store::models::find(&mut conn, identifier)
                .await?
                .ok_or_else(|| model_not_found(identifier))?;
            store::models::files(&mut conn, identifier)
                .await?
                .into_iter()
                .map(|f| (f.file_name, f.content))
                .collect::<Vec<_>>()
        }
        Some(version) => store::models::version(&mut conn, identifier, version)
            .await?
            .ok_or_else(|| {
                Error::refused(
                    ErrorCode::ProcessModelVersionNotFound,
                    format!("process model '{identifier}' has no version '{version}'"),
                )
            })?
            .files(),
    };
    files
        .into_iter()
        .find(|(name, _)| name == file_name)
        .map(|(_, content)| content)
        .ok_or_else(|| {
            Error::refused(
                ErrorCode::ProcessModelFileNotFound,
                format!(
                    "process model '{identifier}' has no file '{file_name}'{}",
                    version
                        .map(|v| format!(" in version '{v}'"))
                        .unwrap_or_default()
                ),
            )
        })
}

/// Deletes a model (its files, versions, message and timer starts), unless instances of it
/// are live: 409 `process_model_in_use` then, with their number.
pub async fn delete(pool: &PgPool, identifier: &ModelId) -> Result<()> {
    let identifier = identifier.as_str();
    let mut tx = pool.begin().await?;
    // as an upload does: no file of it is written meanwhile
    store::models::lock_identifier(&mut tx, identifier).await?;
    store::models::find(&mut tx, identifier)
        .await?
        .ok_or_else(|| model_not_found(identifier))?;
    let live = store::models::count_live_instances(&mut tx, identifier).await?;
    if live > 0 {
        return Err(Error::refused(
            ErrorCode::ProcessModelInUse,
            format!(
                "process model '{identifier}' has {live} live instance(s) (not complete or \
                 terminated): terminate them or let them finish first"
            ),
        )
        .with_extra(serde_json::json!({ "live_instances": live })));
    }
    store::models::delete(&mut tx, identifier).await?;
    tx.commit().await?;
    Ok(())
}

/// One page of the models, by identifier.
pub struct ModelPage {
    pub results: Vec<Model>,
    pub pagination: super::Pagination,
}

pub async fn list(pool: &PgPool, page: Page) -> Result<ModelPage> {
    let mut conn = pool.acquire().await?;
    let rows = store::models::list(&mut conn, page.limit(), page.offset()).await?;
    let total = store::models::count(&mut conn).await?;
    Ok(ModelPage {
        pagination: page.pagination_of(total, rows.len()),
        results: rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_use_colons_in_urls() {
        assert_eq!(
            identifier_from_url("finance:invoices:approve")
                .unwrap()
                .as_str(),
            "finance/invoices/approve"
        );
        assert_eq!(identifier_from_url("single").unwrap().as_str(), "single");
        let long = "a".repeat(5_000);
        for bad in [
            "",
            "a::b",
            "a:..:b",
            "a:b c",
            "a:/b",
            "a:.hidden",
            "a:b\nc",
            &long,
        ] {
            assert!(identifier_from_url(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn file_names_are_plain() {
        for good in ["a.bpmn", "Order-Flow_2.v1.bpmn", "rules.dmn"] {
            assert!(check_file_name(good).is_ok(), "{good}");
        }
        for bad in [
            ".bpmn",
            ".hidden.bpmn",
            "a\n.bpmn",
            "a b.bpmn",
            "a.xml",
            ".dmn",
            "a/b.bpmn",
        ] {
            assert!(check_file_name(bad).is_err(), "{bad}");
        }
        assert!(check_file_name(&format!("{}.bpmn", "a".repeat(100))).is_err());
    }

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
