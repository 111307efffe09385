//! Data stores: list them, show what one holds, create or update one, delete one. Scopes
//! `data-stores:read` (list, show) and `data-stores:write` (all four), or `admin`.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use crate::bpmn::DataStoreKind;
use crate::services::ErrorCode;
use crate::services::{
    self,
    data_stores::{StoreChange, StoreContent, StoreDetail, StoreKey, StoreSummary},
};
use crate::App;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

const READ: &[&str] = &["data-stores:read", "data-stores:write"];
const WRITE: &str = "data-stores:write";

/// A data store, as lists show it.
#[derive(Serialize, ToSchema)]
pub struct DataStoreAnswer {
    /// `json`, `json_file`, `kkv` or `typeahead` (SpiffArena's `JSONDataStore`,
    /// `JSONFileDataStore`, `KKVDataStore`, `TypeaheadDataStore`).
    #[schema(example = "json")]
    kind: String,
    /// The `bpmn:dataStore` id models name it by (a typeahead store: its category).
    #[schema(example = "approved_vendors")]
    identifier: String,
    /// The process group whose models use it (`""`: every model); a model uses the store at
    /// the deepest location that contains it.
    #[schema(example = "finance")]
    location: String,
    name: String,
    description: String,
    /// When models or this API last wrote it.
    updated_at: Option<DateTime<Utc>>,
}

impl From<StoreSummary> for DataStoreAnswer {
    fn from(store: StoreSummary) -> DataStoreAnswer {
        DataStoreAnswer {
            kind: store.kind.as_str().to_string(),
            identifier: store.identifier,
            location: store.location,
            name: store.name,
            description: store.description,
            updated_at: store.updated_at,
        }
    }
}

/// `{results}`: every store, by kind, identifier and location (typeahead categories last).
#[derive(Serialize, ToSchema)]
pub struct DataStoreList {
    results: Vec<DataStoreAnswer>,
}

/// One KKV entry.
#[derive(Serialize, ToSchema)]
pub struct KkvEntry {
    top_level_key: String,
    secondary_key: String,
    #[schema(value_type = Object)]
    value: Value,
}

/// One typeahead item.
#[derive(Serialize, ToSchema)]
pub struct TypeaheadItem {
    search_term: String,
    #[schema(value_type = Object)]
    result: Value,
}

/// A store and what it holds: `data` (JSON and JSON file stores), a page of `entries` (KKV)
/// or of `items` (typeahead) with their `total`.
#[derive(Serialize, ToSchema)]
pub struct DataStoreDetail {
    kind: String,
    identifier: String,
    location: String,
    name: String,
    description: String,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<KkvEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<Vec<TypeaheadItem>>,
    /// How many entries or items there are (matching `prefix`, for typeahead items).
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<i64>,
}

impl From<StoreDetail> for DataStoreDetail {
    fn from(detail: StoreDetail) -> DataStoreDetail {
        let summary = DataStoreAnswer::from(detail.summary);
        let (data, entries, items, total) = match detail.content {
            StoreContent::Value(value) => (Some(value), None, None, None),
            StoreContent::Entries { entries, total } => {
                let entries = entries
                    .into_iter()
                    .map(|(top_level_key, secondary_key, value)| KkvEntry {
                        top_level_key,
                        secondary_key,
                        value,
                    })
                    .collect();
                (None, Some(entries), None, Some(total))
            }
            StoreContent::Items { items, total } => {
                let items = items
                    .into_iter()
                    .map(|(search_term, result)| TypeaheadItem {
                        search_term,
                        result,
                    })
                    .collect();
                (None, None, Some(items), Some(total))
            }
        };
        DataStoreDetail {
            kind: summary.kind,
            identifier: summary.identifier,
            location: summary.location,
            name: summary.name,
            description: summary.description,
            created_at: detail.created_at,
            updated_at: summary.updated_at,
            data,
            entries,
            items,
            total,
        }
    }
}

/// The body of `PUT /v1.0/data-stores/{kind}/{identifier}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataStoreBody {
    /// The process group whose models use it (`a/b`); empty or absent: every model.
    #[serde(default)]
    #[schema(
        max_length = 255,
        pattern = "^([A-Za-z0-9][A-Za-z0-9._-]{0,99}([/:][A-Za-z0-9][A-Za-z0-9._-]{0,99})*)?$"
    )]
    location: Option<String>,
    /// Shown to operators (default: the identifier).
    #[schema(max_length = 255)]
    name: Option<String>,
    #[schema(max_length = 10000)]
    description: Option<String>,
    /// A JSON or JSON file store's value (a new store without one holds `{}`; an update
    /// without one keeps it). Not for KKV stores: models write their entries.
    #[schema(value_type = Object)]
    data: Option<Value>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KindQuery {
    /// Only stores of this kind.
    #[param(pattern = "^(json|json_file|kkv|typeahead)$")]
    kind: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LocationQuery {
    /// The store's location (a process group path, `a/b` or `a:b`); absent: `""`.
    #[param(max_length = 255)]
    location: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShowQuery {
    /// The store's location (a process group path, `a/b` or `a:b`); absent: `""`.
    #[param(max_length = 255)]
    location: Option<String>,
    /// Typeahead: only items whose search term starts with this.
    #[param(max_length = 255)]
    prefix: Option<String>,
    /// Page of KKV entries or typeahead items: 1 (default) on.
    #[param(minimum = 1, maximum = 100001)]
    page: Option<i64>,
    /// 1 to 500 (default 10)
    #[param(minimum = 1, maximum = 500)]
    per_page: Option<i64>,
}

/// List the data stores (JSON, JSON file and KKV stores, and typeahead categories).
#[utoipa::path(
    get,
    path = "/v1.0/data-stores",
    tag = "data stores",
    params(KindQuery),
    responses(
        (status = 200, description = "The stores", body = DataStoreList),
        (status = 400, description = "`invalid_query` (`kind` is not a kind of store: with `parameter` and `allowed`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `data-stores:read` or `data-stores:write`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_data_stores(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<KindQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(READ)?;
    let kinds = DataStoreKind::ALL.map(DataStoreKind::as_str);
    services::input::check_choice(query.kind.as_deref(), "kind", &kinds)?;
    let kind = query.kind.as_deref().and_then(DataStoreKind::parse);
    let stores = services::data_stores::list(&state.pool, kind).await?;
    Ok(HttpResponse::Ok().json(DataStoreList {
        results: stores.into_iter().map(DataStoreAnswer::from).collect(),
    }))
}

/// Show a data store and what it holds (a page of a KKV store's entries or of a typeahead
/// category's items).
#[utoipa::path(
    get,
    path = "/v1.0/data-stores/{kind}/{identifier}",
    tag = "data stores",
    params(
        ("kind" = String, Path, pattern = "^(json|json_file|kkv|typeahead)$", description = "`json`, `json_file`, `kkv` or `typeahead`"),
        ("identifier" = String, Path, max_length = 255, description = "The `bpmn:dataStore` id (typeahead: the category)"),
        ShowQuery,
    ),
    responses(
        (status = 200, description = "The store", body = DataStoreDetail),
        (status = 400, description = "`invalid_data_store_kind`, `invalid_data_store_identifier`, `invalid_data_store_location`, `invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `data-stores:read` or `data-stores:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`data_store_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_data_store(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    query: web::Query<ShowQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(READ)?;
    let (kind, identifier) = path.into_inner();
    let key = StoreKey::new(&kind, &identifier, query.location.as_deref())?;
    let page = services::Page::new(query.page, query.per_page)?;
    let prefix = query.prefix.as_deref().unwrap_or_default();
    services::input::check_text(prefix, ErrorCode::InvalidQuery, "prefix", 255)?;
    let detail = services::data_stores::show(&state.pool, &key, page, prefix).await?;
    Ok(HttpResponse::Ok().json(DataStoreDetail::from(detail)))
}

/// Create a JSON, JSON file or KKV data store, or update its name, description or (JSON
/// kinds) value. Models find it by kind, identifier and location.
#[utoipa::path(
    put,
    path = "/v1.0/data-stores/{kind}/{identifier}",
    tag = "data stores",
    params(
        ("kind" = String, Path, pattern = "^(json|json_file|kkv)$", description = "`json`, `json_file` or `kkv`"),
        ("identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z_][A-Za-z0-9_.-]{0,254}$", description = "The `bpmn:dataStore` id models name it by"),
    ),
    request_body(content = DataStoreBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Updated", body = DataStoreDetail),
        (status = 201, description = "Created", body = DataStoreDetail),
        (status = 400, description = "`invalid_data_store_kind` (typeahead stores need no creation), `invalid_data_store_identifier`, `invalid_data_store_location`, `invalid_json`, `invalid_payload`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `data-stores:write`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn put_data_store(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    principal.require(WRITE)?;
    let (kind, identifier) = path.into_inner();
    let request: DataStoreBody = serde_json::from_slice(&body).map_err(|e| {
        ApiError::refused(
            ErrorCode::InvalidJson,
            format!("the body is not a data store: {e}"),
        )
    })?;
    let key = StoreKey::new(&kind, &identifier, request.location.as_deref())?;
    let mut data = request.data;
    data.iter_mut().for_each(services::input::keep_floats);
    let change = StoreChange {
        name: request.name,
        description: request.description,
        data,
    };
    let created = services::data_stores::put(&state.pool, &key, change).await?;
    let page = services::Page::new(None, None)?;
    let detail = services::data_stores::show(&state.pool, &key, page, "").await?;
    let mut answer = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(answer.json(DataStoreDetail::from(detail)))
}

/// Delete a data store (a KKV store with its entries; a typeahead category's items).
#[utoipa::path(
    delete,
    path = "/v1.0/data-stores/{kind}/{identifier}",
    tag = "data stores",
    params(
        ("kind" = String, Path, pattern = "^(json|json_file|kkv|typeahead)$", description = "`json`, `json_file`, `kkv` or `typeahead`"),
        ("identifier" = String, Path, max_length = 255, description = "The `bpmn:dataStore` id (typeahead: the category)"),
        LocationQuery,
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`invalid_data_store_kind`, `invalid_data_store_identifier`, `invalid_data_store_location`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `data-stores:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`data_store_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn delete_data_store(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<(String, String)>,
    query: web::Query<LocationQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require(WRITE)?;
    let (kind, identifier) = path.into_inner();
    let key = StoreKey::new(&kind, &identifier, query.location.as_deref())?;
    services::data_stores::delete(&state.pool, &key).await?;
    Ok(HttpResponse::NoContent().finish())
}
