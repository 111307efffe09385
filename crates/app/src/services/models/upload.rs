//! Uploads: one file of a model created or replaced, and every model of a folder loaded at
//! startup. The Python of the files is checked (on a blocking thread) before any transaction
//! begins; the model is then saved in one.

use super::save::{save_model, ModelMetadata};
use super::{check_file_name, identifier_from_url, show, ModelDetail, ModelId};
use crate::bpmn::ModelError;
use crate::expr::{ErrorKind, ScriptHost};
use crate::services::{retry_transaction, Error, ErrorCode, ModelCache, Result};
use crate::store;
use anyhow::anyhow;
use sqlx::PgPool;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Creates or replaces one file of a model, creating the model if needed. `Ok(true)` when
/// the model was created.
pub async fn put_file(
    pool: &PgPool,
    cache: &ModelCache,
    model: &ModelId,
    file_name: &str,
    content: &str,
) -> Result<(bool, ModelDetail)> {
    let identifier = model;
    check_file_name(file_name)?;
    if content.contains('\0') {
        return Err(Error::refused(
            ErrorCode::InvalidProcessModel,
            "the file contains a NUL character",
        ));
    }
    // the other files' warnings were found when they were uploaded
    let uploaded = vec![(file_name.to_string(), content.to_string())];
    let warnings = python_warnings(uploaded, cache.scripts()).await?;
    // run again on a conflict: on Citus, writing the model's reference tables while a worker
    // claims a timer start can be taken for a distributed deadlock
    let created = retry_transaction!(save_file(
        pool,
        cache,
        identifier,
        file_name,
        content,
        warnings.clone()
    ))?;
    Ok((created, show(pool, model).await?))
}

/// [`put_file`]'s transaction: whether it created the model.
async fn save_file(
    pool: &PgPool,
    cache: &ModelCache,
    identifier: &ModelId,
    file_name: &str,
    content: &str,
    mut warnings: Vec<ModelError>,
) -> Result<bool> {
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
    if let Some(model) = &existing {
        warnings.extend(python_warnings_kept(&model.summary.0, file_name));
    }
    let metadata = ModelMetadata {
        display_name: existing.as_ref().map(|m| m.display_name.clone()),
        primary_file_name: existing.as_ref().and_then(|m| m.primary_file_name.clone()),
        // derived again from the primary file (process_model.json) or the rule in build_model
        primary_process_id: None,
    };
    save_model(&mut tx, cache, identifier, &metadata, &files, warnings).await?;
    tx.commit().await?;
    Ok(existing.is_none())
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
    let identifier = &identifier_from_url(identifier)?;
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
    let warnings = python_warnings(files.clone(), cache.scripts()).await?;
    let mut tx = pool.begin().await?;
    store::models::lock_identifier(&mut tx, identifier).await?;
    save_model(&mut tx, cache, identifier, &metadata, &files, warnings).await?;
    tx.commit().await?;
    Ok(())
}

/// Every expression and script of these files that the fast path cannot answer, compiled as
/// CPython compiles it (asked of the script host, on a blocking thread, before any database
/// transaction begins: the files' own text is all it needs): each that does not compile is a
/// warning of the model, naming its file, element, what it is for, and the line and column
/// (SpiffWorkflow loads such a model, and SpiffArena fails when the element runs, as the
/// engine does). A file that does not parse is left to `build_model`, which says why.
async fn python_warnings(
    files: Vec<(String, String)>,
    scripts: Arc<dyn ScriptHost>,
) -> Result<Vec<ModelError>> {
    let checked = tokio::task::spawn_blocking(move || {
        let mut found = vec![];
        for (name, xml) in &files {
            if name.ends_with(".dmn") {
                found.extend(decision_python_errors(name, xml, scripts.as_ref()));
            } else if name.ends_with(".bpmn") {
                found.extend(process_python_errors(name, xml, scripts.as_ref()));
            }
        }
        found
    })
    .await
    .map_err(|e| Error::Internal(anyhow!("the script check's thread failed: {e}")))?;
    let mut warnings = Vec::with_capacity(checked.len());
    for (error, kind) in checked {
        match kind {
            ErrorKind::Python => warnings.push(error),
            _ => return Err(Error::ScriptsUnavailable(error.reason)),
        }
    }
    Ok(warnings)
}

/// The warnings of a model's stored `summary` about files other than `replaced` (which are
/// unchanged: `save_model` drops those `build_model` finds again).
fn python_warnings_kept(summary: &serde_json::Value, replaced: &str) -> Vec<ModelError> {
    let Some(warnings) = summary["warnings"].as_array() else {
        return vec![];
    };
    warnings
        .iter()
        .filter_map(|warning| {
            let file = warning["file_name"].as_str()?;
            let reason = warning["reason"].as_str()?;
            (file != replaced)
                .then(|| ModelError::new(file, warning["element_id"].as_str(), reason))
        })
        .collect()
}

/// The Python of a `.bpmn` file that CPython does not compile (or that could not be checked).
fn process_python_errors(
    name: &str,
    xml: &str,
    scripts: &dyn ScriptHost,
) -> Vec<(ModelError, ErrorKind)> {
    let Ok(definitions) = crate::bpmn::parse_file(name, xml) else {
        return vec![];
    };
    definitions
        .python_sources()
        .iter()
        .filter(|source| source.needs_python)
        .filter_map(|source| {
            let error = scripts.check(source.source, source.is_script).err()?;
            let reason = format!("{}: {}", source.what, error.message);
            let element = Some(source.element_id);
            Some((ModelError::new(source.file, element, reason), error.kind))
        })
        .collect()
}

/// The Python of a `.dmn` file that CPython does not compile (each rule's tests, as
/// SpiffWorkflow would run them, and its outputs).
fn decision_python_errors(
    name: &str,
    xml: &str,
    scripts: &dyn ScriptHost,
) -> Vec<(ModelError, ErrorKind)> {
    let Ok(decisions) = crate::dmn::parse_dmn_file(name, xml) else {
        return vec![];
    };
    decisions
        .iter()
        .flat_map(|decision| {
            decision
                .python_sources()
                .into_iter()
                .filter_map(|(what, source)| {
                    let error = scripts.check(source, false).err()?;
                    let reason = format!("{what}: {}", error.message);
                    Some((
                        ModelError::new(name, Some(&decision.id), reason),
                        error.kind,
                    ))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}
