//! PUT /v1.0/secrets/{name}, GET /v1.0/secrets, DELETE /v1.0/secrets/{name}: the secrets
//! scripts read with `get_secret(name)`. Scope `secrets:manage` (or `admin`). No endpoint
//! answers a value, and no refusal quotes one.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use super::process_models::PageQuery;
use crate::services::ErrorCode;
use crate::services::{self, secrets::Secret};
use crate::App;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The scope every secrets endpoint needs.
pub const SCOPE: &str = "secrets:manage";

/// A secret as answers show it: its name and times, never its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretAnswer {
    #[schema(example = "SMTP_PASSWORD")]
    pub name: String,
    pub created_at: DateTime<Utc>,
    /// When the value was last set.
    pub updated_at: DateTime<Utc>,
}

impl From<Secret> for SecretAnswer {
    fn from(secret: Secret) -> SecretAnswer {
        SecretAnswer {
            name: secret.name,
            created_at: secret.created_at,
            updated_at: secret.updated_at,
        }
    }
}

/// `{results, pagination}`: a page of secrets by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretList {
    pub results: Vec<SecretAnswer>,
    pub pagination: super::display::PaginationAnswer,
}

/// The body of `PUT /v1.0/secrets/{name}`.
// Read by hand ([`value_of`]), so that no refusal quotes the value as serde's messages would;
// `Deserialize` is here for `deny_unknown_fields`, which the document shows.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct SecretValueBody {
    /// The value: 1 to 65,536 bytes of UTF-8 text without NUL characters. It is never shown
    /// again.
    #[schema(min_length = 1, max_length = 65536, pattern = "^[^\\u0000]+$")]
    value: String,
}

/// The `value` of a `{"value": "..."}` body. A value of another type is refused without
/// quoting it.
fn value_of(body: Value) -> Result<String, ApiError> {
    let Value::Object(mut members) = body else {
        return Err(ApiError::refused(
            ErrorCode::InvalidJson,
            "The body must be a JSON object: {\"value\": \"...\"}.",
        ));
    };
    if let Some(other) = members.keys().find(|k| k.as_str() != "value") {
        return Err(ApiError::refused(
            ErrorCode::InvalidJson,
            format!(
                "Unknown member '{}': the body is {{\"value\": \"...\"}}.",
                other.escape_default()
            ),
        ));
    }
    match members.remove("value") {
        Some(Value::String(value)) => Ok(value),
        Some(_) => Err(ApiError::refused(
            ErrorCode::InvalidSecretValue,
            "The value must be a string.",
        )),
        None => Err(ApiError::refused(
            ErrorCode::InvalidJson,
            "The body has no member 'value': it is {\"value\": \"...\"}.",
        )),
    }
}

/// Create or replace a secret.
///
/// Scripts read it with `get_secret(name)`. The answer shows the name and times; the value is
/// never shown again, by this or any other endpoint.
#[utoipa::path(
    put,
    path = "/v1.0/secrets/{name}",
    tag = "secrets",
    params(("name" = String, Path, max_length = 128, pattern = "^[A-Za-z_][A-Za-z0-9_.-]{0,127}$", description = "A letter or `_`, then letters, digits, `_`, `.` and `-` (at most 128)")),
    request_body(content = SecretValueBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Created", body = SecretAnswer),
        (status = 200, description = "Replaced", body = SecretAnswer),
        (status = 400, description = "`invalid_secret_name`, `invalid_secret_value` (not a string, empty, longer than 65,536 bytes, a NUL character), `invalid_json`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `secrets:manage`", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "`request_timeout`: the body did not arrive in time", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large` (with `limit_bytes`, the limit, when the request says the length of its body)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`unsupported_media_type`: not application/json", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn put_secret(
    principal: Principal,
    state: web::Data<App>,
    name: web::Path<String>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    principal.require(SCOPE)?;
    services::secrets::check_name(&name)?;
    let value = value_of(body.into_inner())?;
    let (created, secret) = services::secrets::set(&state.pool, &name, &value).await?;
    Ok(if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    }
    .json(SecretAnswer::from(secret)))
}

/// List secrets by name: names and times, never values.
#[utoipa::path(
    get,
    path = "/v1.0/secrets",
    tag = "secrets",
    params(PageQuery),
    responses(
        (status = 200, description = "Secrets", body = SecretList),
        (status = 400, description = "`invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `secrets:manage`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_secrets(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require(SCOPE)?;
    let page = services::Page::new(query.page, query.per_page)?;
    let (secrets, pagination) = services::secrets::list(&state.pool, page).await?;
    Ok(HttpResponse::Ok().json(SecretList {
        results: secrets.into_iter().map(SecretAnswer::from).collect(),
        pagination: pagination.into(),
    }))
}

/// Delete a secret.
#[utoipa::path(
    delete,
    path = "/v1.0/secrets/{name}",
    tag = "secrets",
    params(("name" = String, Path, max_length = 128, pattern = "^[A-Za-z_][A-Za-z0-9_.-]{0,127}$", description = "The secret's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`invalid_secret_name`, `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `secrets:manage`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`secret_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn delete_secret(
    principal: Principal,
    state: web::Data<App>,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    principal.require(SCOPE)?;
    services::secrets::delete(&state.pool, &name).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_body_never_quotes_the_value() {
        assert_eq!(value_of(json!({"value": "hunter2"})).unwrap(), "hunter2");
        for body in [
            json!({"value": 424242}),
            json!({"value": ["hunter2"]}),
            json!({"value": {"hunter2": "hunter2"}}),
            json!(["hunter2"]),
            json!("hunter2"),
            json!({"value": "hunter2", "other": 1}),
            json!({}),
        ] {
            let err = value_of(body.clone()).unwrap_err();
            assert_eq!(err.status().as_u16(), 400, "{body}");
            let shown = err.body().to_string();
            assert!(
                !shown.contains("hunter2") && !shown.contains("424242"),
                "{shown}"
            );
        }
    }
}
