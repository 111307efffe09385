//! Liveness, readiness and metrics.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::error::{ApiError, Problem};
use crate::services::health::{readiness, Readiness};
use crate::App;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StatusBody {
    pub ok: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReadyBody {
    pub ok: bool,
    /// `up` when the database answered, `busy` when every pooled connection is in use.
    pub database: String,
    /// Connector calls due and waiting for a dispatcher slot, as last counted (at most a
    /// second old while the dispatcher runs): a number that keeps growing means calls are
    /// recorded faster than they are made. Also on `/metrics` as
    /// `workflow_backend_connector_jobs_waiting`.
    #[serde(default)]
    pub connector_jobs_waiting: i64,
    /// What in the database's upkeep needs an operator, in words: autovacuum turned off for
    /// the cluster or for some of the service's tables (nothing is then analysed or vacuumed,
    /// and the service slows as its tables grow). Empty when nothing does, or when the
    /// database was too busy to ask (`busy`). Also logged as a warning at start.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// The process is up (no database check, no authentication).
#[utoipa::path(
    get,
    path = "/v1.0/status",
    tag = "health",
    responses((status = 200, description = "The service is running", body = StatusBody))
)]
pub async fn status() -> web::Json<StatusBody> {
    web::Json(StatusBody { ok: true })
}

/// The service can serve requests: the database answers (no authentication).
#[utoipa::path(
    get,
    path = "/v1.0/health/ready",
    tag = "health",
    responses(
        (status = 200, description = "The database answers", body = ReadyBody),
        (status = 503, description = "The database does not answer (`database_unavailable`)",
         body = Problem, content_type = "application/problem+json")
    )
)]
pub async fn ready(state: web::Data<App>) -> Result<web::Json<ReadyBody>, ApiError> {
    let (database, warnings) = match readiness(&state.pool, state.database_primary.as_deref()).await
    {
        Readiness::Up { warnings } => ("up", warnings),
        Readiness::Busy => ("busy", Vec::new()),
        Readiness::Unavailable(cause) => return Err(ApiError::database_unavailable(cause)),
    };
    Ok(web::Json(ReadyBody {
        ok: true,
        database: database.into(),
        connector_jobs_waiting: state.connector_jobs.waiting.get(),
        warnings,
    }))
}

/// Prometheus metrics: request counts and latency histograms per route pattern, method and
/// status (no authentication). The body is written by the `PrometheusMetrics` middleware
/// (`startup.rs`); this handler only gives the route a resource, so other methods answer 405.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "health",
    responses((status = 200, description = "Prometheus text exposition format",
               body = String, content_type = "text/plain"))
)]
pub async fn metrics() -> HttpResponse {
    HttpResponse::Ok().finish()
}
