//! Data stores, for operators: list them, show what one holds, create or update one, delete
//! one. Models read and write them in their steps (`unit_of_work::data_stores`).
//!
//! JSON, JSON file and KKV stores are created here before a model can use them (as in
//! SpiffArena), keyed by kind, identifier (the `bpmn:dataStore` id) and location (a process
//! group path, `""` for every model). A typeahead store is a category that models write; it
//! needs no creation.

use super::{input, Error, Page, Result};
use crate::bpmn::DataStoreKind;
use crate::services::ErrorCode;
use crate::store::{self, data_stores::DataStoreRow};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

/// Which store: kind, identifier, location.
#[derive(Debug, Clone)]
pub struct StoreKey {
    pub kind: DataStoreKind,
    pub identifier: String,
    pub location: String,
}

impl StoreKey {
    /// Checks what a request names: a known kind; an identifier as a `bpmn:dataStore` id is
    /// written (a typeahead category: any text without control characters); a location that
    /// is empty or a process group path (`a/b`, or `a:b` as URLs write it).
    pub fn new(kind: &str, identifier: &str, location: Option<&str>) -> Result<StoreKey> {
        let Some(kind) = DataStoreKind::parse(kind) else {
            return Err(Error::refused(
                ErrorCode::InvalidDataStoreKind,
                format!(
                    "'{}' is no data store kind; the kinds are {}",
                    kind.escape_default(),
                    DataStoreKind::ALL.map(DataStoreKind::as_str).join(", ")
                ),
            ));
        };
        if kind == DataStoreKind::Typeahead {
            input::check_text(
                identifier,
                ErrorCode::InvalidDataStoreIdentifier,
                "the category",
                255,
            )?;
        } else if !is_store_id(identifier) {
            return Err(Error::refused(
                ErrorCode::InvalidDataStoreIdentifier,
                format!(
                    "'{}' is not a data store identifier: the id of the models' bpmn:dataStore (a \
                     letter or '_', then letters, digits, '_', '-' and '.'; at most 255 bytes)",
                    identifier.escape_default()
                ),
            ));
        }
        let location = match location.filter(|l| !l.is_empty()) {
            None => String::new(),
            Some(_) if kind == DataStoreKind::Typeahead => {
                return Err(Error::refused(
                    ErrorCode::InvalidQuery,
                    "typeahead categories have no location",
                ))
            }
            Some(location) => super::models::identifier_from_url(location)
                .map(|id| id.as_str().to_string())
                .map_err(|_| {
                    Error::refused(
                        ErrorCode::InvalidDataStoreLocation,
                        format!(
                        "'{}' is not a location: a process group path such as 'finance/invoices' \
                         (segments of letters, digits, '-', '_' and '.'), or empty for every model",
                        location.escape_default()
                    ),
                    )
                })?,
        };
        Ok(StoreKey {
            kind,
            identifier: identifier.to_string(),
            location,
        })
    }
}

fn is_store_id(identifier: &str) -> bool {
    let mut chars = identifier.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && identifier.len() <= 255
}

/// A store as lists show it.
#[derive(Debug, Clone)]
pub struct StoreSummary {
    pub kind: DataStoreKind,
    pub identifier: String,
    pub location: String,
    pub name: String,
    pub description: String,
    pub updated_at: Option<DateTime<Utc>>,
}

/// What a store holds.
#[derive(Debug, Clone)]
pub enum StoreContent {
    /// A JSON or JSON file store's value.
    Value(Value),
    /// A page of a KKV store's entries `(top-level key, secondary key, value)`, of `total`.
    Entries {
        entries: Vec<(String, String, Value)>,
        total: i64,
    },
    /// A page of a typeahead category's items `(search term, result)`, of `total`.
    Items {
        items: Vec<(String, Value)>,
        total: i64,
    },
}

#[derive(Debug, Clone)]
pub struct StoreDetail {
    pub summary: StoreSummary,
    pub created_at: Option<DateTime<Utc>>,
    pub content: StoreContent,
}

/// What a store is created or updated with.
#[derive(Debug, Clone, Default)]
pub struct StoreChange {
    pub name: Option<String>,
    pub description: Option<String>,
    /// A JSON or JSON file store's value (kept when absent; `{}` for a new store).
    pub data: Option<Value>,
}

pub const MAX_NAME_BYTES: usize = 255;
pub const MAX_DESCRIPTION_BYTES: usize = 10_000;

/// Every store of one kind, or of all kinds (typeahead categories last).
pub async fn list(pool: &PgPool, kind: Option<DataStoreKind>) -> Result<Vec<StoreSummary>> {
    let mut conn = pool.acquire().await?;
    let mut stores: Vec<StoreSummary> = vec![];
    if kind != Some(DataStoreKind::Typeahead) {
        let rows = store::data_stores::list(&mut conn, kind.map(DataStoreKind::as_str)).await?;
        stores.extend(rows.into_iter().map(summary_of));
    }
    if kind.is_none() || kind == Some(DataStoreKind::Typeahead) {
        let categories = store::data_stores::typeahead_categories(&mut conn).await?;
        stores.extend(
            categories
                .into_iter()
                .map(|(category, _, updated_at)| StoreSummary {
                    kind: DataStoreKind::Typeahead,
                    name: category.clone(),
                    identifier: category,
                    location: String::new(),
                    description: String::new(),
                    updated_at: Some(updated_at),
                }),
        );
    }
    Ok(stores)
}

fn summary_of(row: DataStoreRow) -> StoreSummary {
    StoreSummary {
        kind: DataStoreKind::parse(&row.kind).unwrap_or(DataStoreKind::Json),
        identifier: row.identifier,
        location: row.location,
        name: row.name,
        description: row.description,
        updated_at: Some(row.updated_at),
    }
}

/// A store and (a page of) what it holds; `prefix` narrows a typeahead category's items.
pub async fn show(pool: &PgPool, key: &StoreKey, page: Page, prefix: &str) -> Result<StoreDetail> {
    let mut conn = pool.acquire().await?;
    if key.kind == DataStoreKind::Typeahead {
        let total = store::data_stores::typeahead_count(&mut conn, &key.identifier, "").await?;
        if total == 0 {
            return Err(not_found(key));
        }
        let matching =
            store::data_stores::typeahead_count(&mut conn, &key.identifier, prefix).await?;
        let items = store::data_stores::typeahead_items(
            &mut conn,
            &key.identifier,
            prefix,
            page.offset(),
            page.limit(),
        )
        .await?;
        return Ok(StoreDetail {
            summary: StoreSummary {
                kind: key.kind,
                identifier: key.identifier.clone(),
                location: String::new(),
                name: key.identifier.clone(),
                description: String::new(),
                updated_at: None,
            },
            created_at: None,
            content: StoreContent::Items {
                items,
                total: matching,
            },
        });
    }
    let store::data_stores::DataStoreWithData { row, data } =
        store::data_stores::find(&mut conn, key.kind.as_str(), &key.identifier, &key.location)
            .await?
            .ok_or_else(|| not_found(key))?;
    let content = if key.kind == DataStoreKind::Kkv {
        StoreContent::Entries {
            total: store::data_stores::kkv_count(&mut conn, row.id).await?,
            entries: store::data_stores::kkv_entries(
                &mut conn,
                row.id,
                page.offset(),
                page.limit(),
            )
            .await?,
        }
    } else {
        StoreContent::Value(data)
    };
    let created_at = Some(row.created_at);
    Ok(StoreDetail {
        summary: summary_of(row),
        created_at,
        content,
    })
}

/// Creates the store or updates it; true when it was created.
pub async fn put(pool: &PgPool, key: &StoreKey, change: StoreChange) -> Result<bool> {
    if key.kind == DataStoreKind::Typeahead {
        return Err(Error::refused(
            ErrorCode::InvalidDataStoreKind,
            "a typeahead store needs no creation: the models that write a category create it",
        ));
    }
    if let Some(name) = &change.name {
        input::check_text(name, ErrorCode::InvalidPayload, "the name", MAX_NAME_BYTES)?;
    }
    if let Some(description) = &change.description {
        input::check_text(
            &description.replace(['\n', '\t', '\r'], " "),
            ErrorCode::InvalidPayload,
            "the description",
            MAX_DESCRIPTION_BYTES,
        )?;
    }
    if let Some(data) = &change.data {
        if key.kind == DataStoreKind::Kkv {
            return Err(Error::refused(
                ErrorCode::InvalidPayload,
                "a KKV store's entries are written by models (the data store reference's output): it is created empty",
            ));
        }
        input::check_json(data, ErrorCode::InvalidPayload, "the data")?;
    }
    let mut conn = pool.acquire().await?;
    let name = change.name.as_deref().unwrap_or(&key.identifier);
    let created = store::data_stores::upsert(
        &mut conn,
        key.kind.as_str(),
        &key.identifier,
        &key.location,
        name,
        change.description.as_deref().unwrap_or_default(),
        change.data.as_ref(),
    )
    .await?;
    Ok(created)
}

/// Deletes the store (a KKV store with its entries; a typeahead category's items).
pub async fn delete(pool: &PgPool, key: &StoreKey) -> Result<()> {
    let mut conn = pool.acquire().await?;
    let deleted = if key.kind == DataStoreKind::Typeahead {
        store::data_stores::typeahead_delete(&mut conn, &key.identifier).await?
    } else {
        store::data_stores::delete(&mut conn, key.kind.as_str(), &key.identifier, &key.location)
            .await?
    };
    if deleted {
        Ok(())
    } else {
        Err(not_found(key))
    }
}

fn not_found(key: &StoreKey) -> Error {
    let at = if key.location.is_empty() {
        String::new()
    } else {
        format!(" at location '{}'", key.location)
    };
    Error::refused(
        ErrorCode::DataStoreNotFound,
        format!(
            "there is no {} store '{}'{at}",
            key.kind.as_str(),
            key.identifier.escape_default()
        ),
    )
}
