//! The one error shape: every non-2xx answer is `application/problem+json` (RFC 9457) with
//! `type`, `title`, `status`, `detail`, `error_code` and `message` (= `detail`), plus optional
//! extra members.
//!
//! Handlers return [`ApiError`]. actix's own errors are turned into the same shape in two places:
//! - the extractor configs below ([`json_config`], [`query_config`], [`path_config`]) give body,
//!   query and path errors their codes: `invalid_json` (400), `payload_too_large` (413),
//!   `unsupported_media_type` (415), `invalid_query` (400), `invalid_path` (400);
//! - [`problem_fallback`] (an `ErrorHandlers` middleware on the whole app) rewrites any other
//!   error answer that is not a problem yet: the default service's 404 `not_found`, a resource's
//!   405 `method_not_allowed` for a known path with another method, 413 from a raw payload
//!   extractor, Swagger UI's 404 for an unknown asset. Its code is the status's reason phrase in
//!   snake case (403 is `not_authorized`); a 5xx detail is never exposed.

use crate::services::{ErrorCode, Refusal};
use std::borrow::Cow;
use std::fmt;

use actix_web::body::BoxBody;
use actix_web::dev::ServiceResponse;
use actix_web::error::{JsonPayloadError, PathError, PayloadError, QueryPayloadError};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::ErrorHandlerResponse;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// What `Retry-After` says while the database is unavailable.
pub const DATABASE_RETRY_AFTER_SECONDS: u32 = 2;

const INTERNAL_DETAIL: &str =
    "The server could not complete the request; the cause has been logged.";

/// An error answer. Build one with a constructor, add members with [`ApiError::with_extra`],
/// return it from a handler (`Result<_, ApiError>`).
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    error_code: Cow<'static, str>,
    detail: String,
    extra: Map<String, Value>,
    /// Seconds for a `Retry-After` header (503 while the database is unavailable).
    retry_after: Option<u32>,
}

/// The body of every error answer (`application/problem+json`). Further members may be
/// present, depending on the error (for example `required_scope` on a 403).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "type": "about:blank",
    "title": "Not Found",
    "status": 404,
    "detail": "No resource at /v1.0/nothing-here.",
    "error_code": "not_found",
    "message": "No resource at /v1.0/nothing-here."
}))]
pub struct Problem {
    /// Always `about:blank`: the kind of error is `error_code`.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// The HTTP reason phrase of `status`.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong, for a human.
    pub detail: String,
    /// Stable, machine-readable code (snake case), e.g. `invalid_token`, `not_authorized`.
    pub error_code: String,
    /// Same as `detail` (clients of the reference implementation read `message`).
    pub message: String,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        error_code: impl Into<Cow<'static, str>>,
        detail: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            error_code: error_code.into(),
            detail: detail.into(),
            extra: Map::new(),
            retry_after: None,
        }
    }

    /// 503 `database_unavailable` with `Retry-After`: the database cannot be reached or every
    /// connection is busy. Nothing was done; the request may be sent again.
    pub fn database_unavailable(cause: impl fmt::Display) -> Self {
        tracing::warn!(cause = %cause, "database unavailable");
        let mut err = Self::refused(
            ErrorCode::DatabaseUnavailable,
            "The database is unavailable or busy; try again shortly.",
        );
        err.retry_after = Some(DATABASE_RETRY_AFTER_SECONDS);
        err
    }

    /// 503 `scripts_unavailable` with `Retry-After`: every script worker stayed busy (or
    /// Python is broken). Nothing was done; the request may be sent again.
    pub fn scripts_unavailable(cause: impl fmt::Display) -> Self {
        tracing::warn!(cause = %cause, "scripts unavailable");
        let mut err = Self::refused(
            ErrorCode::ScriptsUnavailable,
            "No script worker is free to run this request's scripts; try again shortly.",
        );
        err.retry_after = Some(DATABASE_RETRY_AFTER_SECONDS);
        err
    }

    /// The refusal `code` stands for, with its registered status.
    pub fn refused(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self::new(status_of(code), code.as_str(), detail)
    }

    /// With `Retry-After`: a 503 whose cause should pass shortly.
    pub fn retry_later(mut self) -> Self {
        self.retry_after = Some(DATABASE_RETRY_AFTER_SECONDS);
        self
    }

    /// 403 `not_authorized`.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::refused(ErrorCode::NotAuthorized, detail)
    }

    /// 500 `internal_server_error`. The cause is logged here and never sent to the client.
    pub fn internal(err: impl fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::refused(ErrorCode::InternalServerError, INTERNAL_DETAIL)
    }

    /// Adds a member to the body. The six standard members cannot be overridden.
    pub fn with_extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn error_code(&self) -> &str {
        &self.error_code
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The JSON body: the standard members plus the extra ones.
    pub fn body(&self) -> Value {
        let problem = Problem {
            problem_type: "about:blank".into(),
            title: self.status.canonical_reason().unwrap_or("Error").into(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            error_code: self.error_code.to_string(),
            message: self.detail.clone(),
        };
        let mut body = self.extra.clone();
        if let Value::Object(standard) =
            serde_json::to_value(problem).expect("a Problem serialises")
        {
            body.extend(standard);
        }
        Value::Object(body)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.error_code,
            self.detail
        )
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse<BoxBody> {
        let mut response = HttpResponse::build(self.status);
        response.insert_header((header::CONTENT_TYPE, PROBLEM_JSON));
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        response.body(self.body().to_string())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(err: anyhow::Error) -> Self {
        ApiError::internal(format_args!("{err:#}"))
    }
}

fn payload_too_large(limit: usize) -> ApiError {
    ApiError::refused(
        ErrorCode::PayloadTooLarge,
        format!("The request body is larger than the limit of {limit} bytes."),
    )
    .with_extra("limit_bytes", limit)
}

fn body_timeout() -> ApiError {
    ApiError::refused(
        ErrorCode::RequestTimeout,
        "The request body did not arrive in time.",
    )
}

/// JSON bodies: size limit and problem answers for every `web::Json` extraction error.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .error_handler(|err, _req| {
            let api_error = match err {
                JsonPayloadError::OverflowKnownLength { limit, .. }
                | JsonPayloadError::Overflow { limit } => payload_too_large(limit),
                JsonPayloadError::Payload(e) if super::guard::is_body_timeout(&e) => body_timeout(),
                JsonPayloadError::Payload(PayloadError::Overflow) => {
                    ApiError::refused(ErrorCode::PayloadTooLarge, "The request body is too large.")
                }
                JsonPayloadError::ContentType => ApiError::refused(
                    ErrorCode::UnsupportedMediaType,
                    "Expected a JSON body with Content-Type: application/json.",
                ),
                JsonPayloadError::Deserialize(e) => ApiError::refused(
                    ErrorCode::InvalidJson,
                    format!("The request body is not valid JSON for this endpoint: {e}."),
                ),
                JsonPayloadError::Serialize(e) => ApiError::internal(e),
                other => ApiError::refused(
                    ErrorCode::InvalidJson,
                    format!("The request body could not be read: {other}."),
                ),
            };
            api_error.into()
        })
}

/// Query strings: 400 `invalid_query`.
pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let detail = match err {
            QueryPayloadError::Deserialize(e) => format!("Invalid query string: {e}."),
            other => format!("Invalid query string: {other}."),
        };
        ApiError::refused(ErrorCode::InvalidQuery, detail).into()
    })
}

/// Path parameters: 400 `invalid_path`.
pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err, _req| {
        let detail = match err {
            PathError::Deserialize(e) => format!("Invalid path parameter: {e}."),
            other => format!("Invalid path parameter: {other}."),
        };
        ApiError::refused(ErrorCode::InvalidPath, detail).into()
    })
}

/// Raw bodies (`Bytes`, `String`): the same size limit as JSON; errors go through [`problem_fallback`].
pub fn payload_config(limit: usize) -> web::PayloadConfig {
    web::PayloadConfig::new(limit)
}

/// The app's default service: 404 `not_found` for a path no resource matches.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::refused(
        ErrorCode::NotFound,
        format!("No resource at {}.", req.path()),
    ))
}

/// `ErrorHandlers` default handler: rewrites an error answer that is not a problem yet.
pub fn problem_fallback<B>(res: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    if is_problem(res.headers()) {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let cause = res.response().error().map(|e| e.to_string());
    let body_timed_out = res
        .response()
        .error()
        .and_then(|e| e.as_error::<PayloadError>())
        .is_some_and(super::guard::is_body_timeout);
    let api_error = if body_timed_out {
        // a raw body (`web::Bytes`) cut off by the body-read deadline: the same answer as a
        // JSON body's (actix calls it a 400)
        body_timeout()
    } else if status.is_server_error() {
        tracing::error!(
            status = status.as_u16(),
            cause = cause.as_deref().unwrap_or("-"),
            path = res.request().path(),
            "server error"
        );
        ApiError::new(status, snake_case_reason(status), INTERNAL_DETAIL)
    } else {
        let detail = match (status, cause) {
            (StatusCode::NOT_FOUND, _) => format!("No resource at {}.", res.request().path()),
            (StatusCode::METHOD_NOT_ALLOWED, _) => format!(
                "Method {} is not allowed on {}.",
                res.request().method(),
                res.request().path()
            ),
            (_, Some(cause)) => format!("{cause}."),
            (_, None) => {
                status
                    .canonical_reason()
                    .unwrap_or("Client error")
                    .to_string()
                    + "."
            }
        };
        ApiError::new(status, snake_case_reason(status), detail)
    };
    let (req, old) = res.into_parts();
    let mut new = api_error.error_response();
    for name in [header::ALLOW, header::WWW_AUTHENTICATE] {
        if let Some(value) = old.headers().get(&name) {
            new.headers_mut().insert(name, value.clone());
        }
    }
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(req, new).map_into_right_body(),
    ))
}

fn is_problem(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROBLEM_JSON))
}

fn snake_case_reason(status: StatusCode) -> String {
    match status {
        StatusCode::FORBIDDEN => "not_authorized".into(),
        _ => status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
            .replace(['-', ' '], "_")
            .replace('\'', ""),
    }
}

/// The HTTP status of a refusal.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code.refusal() {
        Refusal::Invalid => StatusCode::BAD_REQUEST,
        Refusal::Unauthenticated => StatusCode::UNAUTHORIZED,
        Refusal::Forbidden => StatusCode::FORBIDDEN,
        Refusal::NotFound => StatusCode::NOT_FOUND,
        Refusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Refusal::Timeout => StatusCode::REQUEST_TIMEOUT,
        Refusal::Conflict => StatusCode::CONFLICT,
        Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Refusal::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Refusal::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        Refusal::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

impl From<crate::services::Error> for ApiError {
    fn from(err: crate::services::Error) -> Self {
        // services knows which database errors mean "unavailable" (503, nothing was done)
        let unavailable = err.is_unavailable();
        match err {
            crate::services::Error::Client {
                code,
                detail,
                extra,
            } => {
                let mut api = ApiError::refused(code, detail);
                if api.status == StatusCode::SERVICE_UNAVAILABLE {
                    api = api.retry_later();
                }
                if let Some(Value::Object(members)) = extra {
                    for (key, value) in members {
                        api = api.with_extra(key, value);
                    }
                }
                api
            }
            crate::services::Error::Database(e) if unavailable => ApiError::database_unavailable(e),
            crate::services::Error::Database(e) => {
                ApiError::internal(format_args!("database error: {e}"))
            }
            crate::services::Error::ScriptsUnavailable(cause) => {
                ApiError::scripts_unavailable(cause)
            }
            crate::services::Error::Internal(e) => ApiError::from(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_has_the_six_members_and_extras() {
        let err = ApiError::refused(ErrorCode::MigrationNotPossible, "Already there")
            .with_extra("id", 7)
            .with_extra("status", "ignored");
        assert_eq!(
            err.body(),
            json!({
                "type": "about:blank", "title": "Conflict", "status": 409,
                "detail": "Already there", "error_code": "migration_not_possible", "message": "Already there", "id": 7
            })
        );
    }

    #[test]
    fn unauthorized_carries_the_bearer_challenge() {
        let resp = ApiError::refused(ErrorCode::InvalidToken, "no").error_response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers().get(header::WWW_AUTHENTICATE).unwrap(),
            "Bearer"
        );
        assert_eq!(
            resp.headers().get(header::CONTENT_TYPE).unwrap(),
            PROBLEM_JSON
        );
        let forbidden = ApiError::forbidden("no").error_response();
        assert!(forbidden.headers().get(header::WWW_AUTHENTICATE).is_none());
    }

    #[test]
    fn internal_hides_the_cause() {
        let err = ApiError::internal("password=hunter2 in a connection string");
        assert_eq!(err.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(err.error_code(), "internal_server_error");
        assert!(!err.body().to_string().contains("hunter2"));
    }

    #[test]
    fn an_unavailable_database_is_503_with_retry_after_and_other_database_errors_500() {
        let busy = ApiError::from(crate::services::Error::Database(sqlx::Error::PoolTimedOut));
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.error_code(), "database_unavailable");
        let resp = busy.error_response();
        assert_eq!(
            resp.headers().get(header::RETRY_AFTER).unwrap(),
            &DATABASE_RETRY_AFTER_SECONDS.to_string()
        );
        let other = ApiError::from(crate::services::Error::Database(sqlx::Error::RowNotFound));
        assert_eq!(other.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(other.error_code(), "internal_server_error");
    }

    #[test]
    fn reason_codes() {
        assert_eq!(
            snake_case_reason(StatusCode::METHOD_NOT_ALLOWED),
            "method_not_allowed"
        );
        assert_eq!(
            snake_case_reason(StatusCode::PAYLOAD_TOO_LARGE),
            "payload_too_large"
        );
        assert_eq!(
            snake_case_reason(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            "unsupported_media_type"
        );
        assert_eq!(snake_case_reason(StatusCode::FORBIDDEN), "not_authorized");
        assert_eq!(
            snake_case_reason(StatusCode::SERVICE_UNAVAILABLE),
            "service_unavailable"
        );
    }
}
