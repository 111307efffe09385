//! data_stores, kkv_data_store_entries, typeahead_entries: SpiffArena's data stores.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

/// A JSON, JSON file or KKV store, without its content.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DataStoreRow {
    pub id: i64,
    pub kind: String,
    pub identifier: String,
    pub location: String,
    pub name: String,
    pub description: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The store of this kind and identifier a model at one of `locations` uses: the one at the
/// deepest location (locations are paths, and each is a prefix of the deeper ones).
/// `lock`: held until the transaction ends (the step writes it).
pub async fn find_for(
    conn: &mut PgConnection,
    kind: &str,
    identifier: &str,
    locations: &[String],
    lock: bool,
) -> sqlx::Result<Option<(i64, Value)>> {
    let sql = if lock {
        "SELECT id, data FROM data_stores WHERE kind = $1 AND identifier = $2 \
         AND location = ANY($3) ORDER BY length(location) DESC LIMIT 1 FOR UPDATE"
    } else {
        "SELECT id, data FROM data_stores WHERE kind = $1 AND identifier = $2 \
         AND location = ANY($3) ORDER BY length(location) DESC LIMIT 1"
    };
    sqlx::query_as(sql)
        .bind(kind)
        .bind(identifier)
        .bind(locations)
        .fetch_optional(conn)
        .await
}

/// At most `limit` entries of a KKV store, in key order.
pub async fn kkv_entries(
    conn: &mut PgConnection,
    store_id: i64,
    offset: i64,
    limit: i64,
) -> sqlx::Result<Vec<(String, String, Value)>> {
    sqlx::query_as(
        "SELECT top_level_key, secondary_key, value FROM kkv_data_store_entries \
         WHERE data_store_id = $1 ORDER BY top_level_key, secondary_key OFFSET $2 LIMIT $3",
    )
    .bind(store_id)
    .bind(offset)
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub async fn kkv_count(conn: &mut PgConnection, store_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM kkv_data_store_entries WHERE data_store_id = $1")
        .bind(store_id)
        .fetch_one(conn)
        .await
}

pub async fn set_data(conn: &mut PgConnection, store_id: i64, data: &Value) -> sqlx::Result<()> {
    sqlx::query("UPDATE data_stores SET data = $2, updated_at = now() WHERE id = $1")
        .bind(store_id)
        .bind(data)
        .execute(conn)
        .await?;
    Ok(())
}

/// Removes every entry under a top-level key.
pub async fn kkv_delete_top(conn: &mut PgConnection, store_id: i64, top: &str) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM kkv_data_store_entries WHERE data_store_id = $1 AND top_level_key = $2",
    )
    .bind(store_id)
    .bind(top)
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets (`Some`) or removes (`None`) the entries under one top-level key.
pub async fn kkv_write(
    conn: &mut PgConnection,
    store_id: i64,
    top: &str,
    entries: &[(String, Option<Value>)],
) -> sqlx::Result<()> {
    let (removed, set): (Vec<_>, Vec<_>) = entries.iter().partition(|(_, v)| v.is_none());
    let removed: Vec<&str> = removed.iter().map(|(k, _)| k.as_str()).collect();
    if !removed.is_empty() {
        sqlx::query(
            "DELETE FROM kkv_data_store_entries WHERE data_store_id = $1 AND top_level_key = $2 \
             AND secondary_key = ANY($3)",
        )
        .bind(store_id)
        .bind(top)
        .bind(&removed)
        .execute(&mut *conn)
        .await?;
    }
    if !set.is_empty() {
        let keys: Vec<&str> = set.iter().map(|(k, _)| k.as_str()).collect();
        let values: Vec<&Value> = set.iter().filter_map(|(_, v)| v.as_ref()).collect();
        sqlx::query(
            "INSERT INTO kkv_data_store_entries (data_store_id, top_level_key, secondary_key, value) \
             SELECT $1, $2, k, v FROM unnest($3::text[], $4::jsonb[]) AS e(k, v) \
             ON CONFLICT (data_store_id, top_level_key, secondary_key) \
             DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(store_id)
        .bind(top)
        .bind(&keys)
        .bind(&values)
        .execute(conn)
        .await?;
    }
    Ok(())
}

/// Replaces a typeahead category's items (`(search_term, result)`, in order).
pub async fn typeahead_replace(
    conn: &mut PgConnection,
    category: &str,
    items: &[(String, Value)],
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM typeahead_entries WHERE category = $1")
        .bind(category)
        .execute(&mut *conn)
        .await?;
    let terms: Vec<&str> = items.iter().map(|(t, _)| t.as_str()).collect();
    let results: Vec<&Value> = items.iter().map(|(_, r)| r).collect();
    sqlx::query(
        "INSERT INTO typeahead_entries (category, position, search_term, result) \
         SELECT $1, (n - 1)::int, t, r FROM unnest($2::text[], $3::jsonb[]) WITH ORDINALITY AS e(t, r, n)",
    )
    .bind(category)
    .bind(&terms)
    .bind(&results)
    .execute(conn)
    .await?;
    Ok(())
}

/// Items of a category whose search term starts with `prefix`, in write order.
pub async fn typeahead_items(
    conn: &mut PgConnection,
    category: &str,
    prefix: &str,
    offset: i64,
    limit: i64,
) -> sqlx::Result<Vec<(String, Value)>> {
    sqlx::query_as(
        "SELECT search_term, result FROM typeahead_entries WHERE category = $1 \
         AND starts_with(search_term, $2) ORDER BY position OFFSET $3 LIMIT $4",
    )
    .bind(category)
    .bind(prefix)
    .bind(offset)
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub async fn typeahead_count(
    conn: &mut PgConnection,
    category: &str,
    prefix: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM typeahead_entries WHERE category = $1 AND starts_with(search_term, $2)",
    )
    .bind(category)
    .bind(prefix)
    .fetch_one(conn)
    .await
}

pub async fn typeahead_delete(conn: &mut PgConnection, category: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM typeahead_entries WHERE category = $1")
        .bind(category)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The typeahead categories with their item counts and last write, by name.
pub async fn typeahead_categories(
    conn: &mut PgConnection,
) -> sqlx::Result<Vec<(String, i64, DateTime<Utc>)>> {
    sqlx::query_as(
        "SELECT category, count(*), max(updated_at) FROM typeahead_entries GROUP BY category \
         ORDER BY category",
    )
    .fetch_all(conn)
    .await
}

/// Every JSON, JSON file and KKV store (of one kind), by kind, identifier and location.
pub async fn list(conn: &mut PgConnection, kind: Option<&str>) -> sqlx::Result<Vec<DataStoreRow>> {
    sqlx::query_as(
        "SELECT id, kind, identifier, location, name, description, created_at, updated_at \
         FROM data_stores WHERE ($1::text IS NULL OR kind = $1) ORDER BY kind, identifier, location",
    )
    .bind(kind)
    .fetch_all(conn)
    .await
}

/// A store with its data (a KKV store's data is `{}`: its entries are apart).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DataStoreWithData {
    #[sqlx(flatten)]
    pub row: DataStoreRow,
    pub data: Value,
}

/// One store by its key, with its data.
pub async fn find(
    conn: &mut PgConnection,
    kind: &str,
    identifier: &str,
    location: &str,
) -> sqlx::Result<Option<DataStoreWithData>> {
    sqlx::query_as(
        "SELECT id, kind, identifier, location, name, description, created_at, updated_at, data \
         FROM data_stores WHERE kind = $1 AND identifier = $2 AND location = $3",
    )
    .bind(kind)
    .bind(identifier)
    .bind(location)
    .fetch_optional(conn)
    .await
}

/// Creates the store, or updates its name, description and (when given) data; true when it
/// was created.
#[allow(clippy::too_many_arguments)]
pub async fn upsert(
    conn: &mut PgConnection,
    kind: &str,
    identifier: &str,
    location: &str,
    name: &str,
    description: &str,
    data: Option<&Value>,
) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "INSERT INTO data_stores (kind, identifier, location, name, description, data) \
         VALUES ($1, $2, $3, $4, $5, coalesce($6, '{}'::jsonb)) \
         ON CONFLICT (kind, identifier, location) DO UPDATE SET name = excluded.name, \
         description = excluded.description, data = coalesce($6, data_stores.data), \
         updated_at = excluded.updated_at \
         RETURNING (xmax = 0)",
    )
    .bind(kind)
    .bind(identifier)
    .bind(location)
    .bind(name)
    .bind(description)
    .bind(data)
    .fetch_one(conn)
    .await
}

pub async fn delete(
    conn: &mut PgConnection,
    kind: &str,
    identifier: &str,
    location: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "DELETE FROM data_stores WHERE kind = $1 AND identifier = $2 AND location = $3",
    )
    .bind(kind)
    .bind(identifier)
    .bind(location)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}
