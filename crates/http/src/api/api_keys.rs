//! POST /v1.0/api-keys, GET /v1.0/api-keys, DELETE /v1.0/api-keys/{name}: keys for machine
//! clients (the `api-key` command does the same). Listing needs `api-keys:read`, creating and
//! revoking `api-keys:write`; a caller may only give a new key scopes its own credential grants,
//! so the right to make keys is not a way to more rights.

use super::auth::{scope_contains, Principal};
use super::error::{ApiError, Problem};
use crate::services::api_keys::{self, ApiKey};
use crate::App;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub const READ_SCOPE: &str = "api-keys:read";
pub const WRITE_SCOPE: &str = "api-keys:write";

/// A key as answers show it: never the key itself, except once in [`CreatedApiKey`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyAnswer {
    #[schema(example = "order-service")]
    pub name: String,
    /// The key's first characters, to tell keys apart.
    #[schema(example = "wbk_3f9a1c2e")]
    pub prefix: String,
    #[schema(example = json!(["messages:send", "instances:read:*"]))]
    pub scopes: Vec<String>,
    /// Who created it (`cli` for the command).
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it was last accepted (recorded to the minute).
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<ApiKey> for ApiKeyAnswer {
    fn from(key: ApiKey) -> ApiKeyAnswer {
        ApiKeyAnswer {
            name: key.name,
            prefix: key.prefix,
            scopes: key.scopes,
            created_by: key.created_by,
            created_at: key.created_at,
            expires_at: key.expires_at,
            revoked_at: key.revoked_at,
            last_used_at: key.last_used_at,
        }
    }
}

/// A new key: `key` is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedApiKey {
    /// Send it as `Authorization: Bearer <key>` or `SpiffWorkflow-Api-Key: <key>`. Only its
    /// hash is stored: it cannot be shown again.
    #[schema(example = "wbk_3f9a1c2e...")]
    pub key: String,
    #[serde(flatten)]
    pub api_key: ApiKeyAnswer,
}

/// `{results}`: active keys first, newest first, then revoked ones.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyList {
    pub results: Vec<ApiKeyAnswer>,
}

/// The body of `POST /v1.0/api-keys`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewApiKeyBody {
    /// Letters, digits, `_`, `.` and `-`, starting with a letter or `_` (at most 128).
    #[schema(example = "order-service", max_length = 128)]
    pub name: String,
    /// Space-separated scopes, as a token's.
    #[schema(example = "messages:send instances:read:*")]
    pub scope: String,
    /// Days until it stops working (1 to 3650); without it, until revoked.
    #[schema(example = 90, minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<u32>,
}

/// Create an API key for a machine client.
///
/// The answer holds the key, shown this once. Every scope asked for must be contained in the
/// caller's own grants: all it would grant must be granted to the caller (`instances:read:*`
/// gives `instances:read:finance/*`, not `instances:*`; only `admin` gives `admin`).
#[utoipa::path(
    post,
    path = "/v1.0/api-keys",
    tag = "api keys",
    request_body(content = NewApiKeyBody, content_type = "application/json", example = json!({"name": "order-service", "scope": "messages:send instances:read:*", "expires_in_days": 90})),
    responses(
        (status = 201, description = "Created; `key` is shown this once", body = CreatedApiKey),
        (status = 400, description = "`invalid_api_key_name`, `invalid_scope`, `invalid_expiry`, `invalid_json`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `api-keys:write`, and every scope given to the key", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`api_key_name_conflict`: an active key has this name", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request_timeout`: the body did not arrive in time", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`: not application/json", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create_api_key(
    principal: Principal,
    state: web::Data<App>,
    body: web::Json<NewApiKeyBody>,
) -> Result<HttpResponse, ApiError> {
    principal.require(WRITE_SCOPE)?;
    let body = body.into_inner();
    api_keys::check_name(&body.name)?;
    let scopes = api_keys::parse_scopes(&body.scope)?;
    if let Some(beyond) = scopes
        .iter()
        .find(|asked| !principal.scopes.iter().any(|g| scope_contains(g, asked)))
    {
        return Err(ApiError::forbidden(format!(
            "A key may only get scopes the caller has: `{beyond}` is not granted to you."
        ))
        .with_extra("required_scope", beyond.as_str()));
    }
    let created = api_keys::create(
        &state.pool,
        &body.name,
        &scopes,
        body.expires_in_days,
        Some(&principal.subject),
    )
    .await?;
    Ok(HttpResponse::Created().json(CreatedApiKey {
        key: created.token,
        api_key: created.key.into(),
    }))
}

/// List API keys (never the keys themselves).
#[utoipa::path(
    get,
    path = "/v1.0/api-keys",
    tag = "api keys",
    responses(
        (status = 200, description = "Keys", body = ApiKeyList),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `api-keys:read`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_api_keys(
    principal: Principal,
    state: web::Data<App>,
) -> Result<HttpResponse, ApiError> {
    principal.require(READ_SCOPE)?;
    let results = api_keys::list(&state.pool)
        .await?
        .into_iter()
        .map(ApiKeyAnswer::from)
        .collect();
    Ok(HttpResponse::Ok().json(ApiKeyList { results }))
}

/// Revoke the active API key of this name: every replica refuses it from its next request.
#[utoipa::path(
    delete,
    path = "/v1.0/api-keys/{name}",
    tag = "api keys",
    params(("name" = String, Path, max_length = 128, description = "The key's name")),
    responses(
        (status = 200, description = "Revoked", body = ApiKeyAnswer),
        (status = 400, description = "`invalid_api_key_name`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `api-keys:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`api_key_not_found`: no active key has this name", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn revoke_api_key(
    principal: Principal,
    state: web::Data<App>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    principal.require(WRITE_SCOPE)?;
    let key = api_keys::revoke(&state.pool, &name).await?;
    Ok(HttpResponse::Ok().json(ApiKeyAnswer::from(key)))
}
