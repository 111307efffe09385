//! The stored models: one shown with its files and the versions its live instances run on,
//! a file's content (of the current or an older version), a page of them, and deletion.

use super::{check_file_name, ModelId};
use crate::services::{Error, ErrorCode, Page, Pagination, Result};
use crate::store;
use sqlx::PgPool;

/// 404 `process_model_not_found`.
pub fn model_not_found(identifier: &ModelId) -> Error {
    Error::refused(
        ErrorCode::ProcessModelNotFound,
        format!("process model '{identifier}' does not exist"),
    )
}

/// A process model as stored (its current version).
#[derive(Debug, Clone)]
pub struct Model {
    pub identifier: ModelId,
    pub display_name: String,
    pub primary_file_name: Option<String>,
    pub primary_process_id: String,
    /// What the upload found: processes, messages, warnings.
    pub summary: serde_json::Value,
    pub version_sha: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<store::models::ModelRow> for Model {
    fn from(row: store::models::ModelRow) -> Model {
        Model {
            identifier: row.identifier,
            display_name: row.display_name,
            primary_file_name: row.primary_file_name,
            primary_process_id: row.primary_process_id,
            summary: row.summary.0,
            version_sha: row.version_sha,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A version that live instances run on, and how many do.
#[derive(Debug, Clone)]
pub struct VersionInUse {
    pub version_sha: String,
    pub live_instances: i64,
    /// When it was stored (None for a version stored before versions were kept).
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<store::models::VersionInUse> for VersionInUse {
    fn from(row: store::models::VersionInUse) -> VersionInUse {
        VersionInUse {
            version_sha: row.version_sha,
            live_instances: row.live_instances,
            created_at: row.created_at,
        }
    }
}

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
    let mut conn = pool.acquire().await?;
    let model = store::models::find(&mut conn, identifier)
        .await?
        .ok_or_else(|| model_not_found(identifier))?;
    let files = store::models::files(&mut conn, identifier).await?;
    let versions_in_use = store::models::versions_in_use(&mut conn, identifier).await?;
    Ok(ModelDetail {
        model: model.into(),
        files: files
            .into_iter()
            .map(|f| ModelFile {
                size: f.content.len(),
                name: f.file_name,
                sha256: f.sha256,
            })
            .collect(),
        versions_in_use: versions_in_use
            .into_iter()
            .map(VersionInUse::from)
            .collect(),
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
    let mut tx = pool.begin().await?;
    // as an upload does: no file of it is written meanwhile
    store::models::lock_identifier(&mut tx, identifier).await?;
    // waits for the starts that have read the model: their instances are counted below
    store::models::lock_instances_of(&mut tx, identifier, true).await?;
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
    pub pagination: Pagination,
}

pub async fn list(pool: &PgPool, page: Page) -> Result<ModelPage> {
    let mut conn = pool.acquire().await?;
    let rows = store::models::list(&mut conn, page.limit(), page.offset()).await?;
    let total = store::models::count(&mut conn).await?;
    Ok(ModelPage {
        pagination: page.pagination_of(total, rows.len()),
        results: rows.into_iter().map(Model::from).collect(),
    })
}
