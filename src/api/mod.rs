//! HTTP layer: routes, the OpenAPI document, error answers and authentication.
//!
//! Routes are registered one resource (or one `web::scope`) per family, never a catch-all
//! `web::scope("/v1.0")`: such a scope would swallow `/v1.0/ui/` and `/v1.0/openapi.json`.

pub mod auth;
pub mod error;
pub mod health;

use std::sync::OnceLock;

use actix_web::{web, HttpResponse};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::api::error::Problem;

pub const OPENAPI_PATH: &str = "/v1.0/openapi.json";

/// The OpenAPI document of every endpoint (`openapi/openapi.json` is this, pretty-printed).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "workflow-backend",
        description = "The engine side of a BPMN workflow system: messages, correlation, service \
                       tasks and connector proxy callbacks. Errors are `application/problem+json` \
                       (`Problem`); authenticated endpoints take a bearer JWT (`bearer`).",
        license(name = "MIT", identifier = "MIT")
    ),
    paths(health::status, health::ready, health::metrics, openapi_json),
    components(schemas(Problem)),
    modifiers(&BearerSecurity),
    tags(
        (name = "health", description = "Liveness, readiness and metrics"),
        (name = "meta", description = "This API's description")
    )
)]
pub struct ApiDoc;

/// Adds the `bearer` security scheme (JWT in `Authorization: Bearer ...`). Endpoints that need
/// a token say so with `security(("bearer" = []))` in their `#[utoipa::path]`.
struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT (HS256, RS256 or ES256) with `exp`, `sub` and a space-separated \
                         `scope` claim. Missing or invalid: 401 `invalid_token` (`token_expired` \
                         when expired); valid without the needed scope: 403 `not_authorized`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as served and as committed: pretty JSON with a trailing newline.
pub fn openapi_document() -> String {
    let mut json = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

/// This API's OpenAPI document.
#[utoipa::path(
    get,
    path = "/v1.0/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json"))
)]
pub async fn openapi_json() -> HttpResponse {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.get_or_init(openapi_document).as_str())
}

/// Registers every route. `/metrics` is answered by the metrics middleware (see `startup`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v1.0/status").route(web::get().to(health::status)))
        .service(web::resource("/v1.0/health/ready").route(web::get().to(health::ready)))
        .service(web::resource("/metrics").route(web::get().to(health::metrics)))
        .service(web::resource(OPENAPI_PATH).route(web::get().to(openapi_json)))
        .service(web::redirect("/v1.0/ui", "/v1.0/ui/"))
        .service(SwaggerUi::new("/v1.0/ui/{_:.*}").config(Config::from(OPENAPI_PATH)));
}
