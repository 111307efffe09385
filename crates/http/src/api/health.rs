//! Liveness, readiness and metrics.

use std::time::Duration;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::error::{ApiError, Problem};
use crate::App;

/// How long readiness waits for the database before answering 503.
const READINESS_TIMEOUT: Duration = Duration::from_secs(3);

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
    // Every connection open and in use: the database answers, the service is only busy.
    // Waiting for a free connection would report saturation as an outage.
    let pool = &state.pool;
    // with several hosts, a pooled connection may still reach one that no longer takes writes
    if let Some(primary) = &state.database_primary {
        if !primary.is_writable() {
            tracing::warn!("readiness: no database host takes writes");
            return Err(ApiError::database_unavailable(
                "no database host takes writes (a failover is under way)",
            ));
        }
    }
    if pool.num_idle() == 0 && pool.size() >= pool.options().get_max_connections() {
        return Ok(web::Json(ReadyBody {
            ok: true,
            database: "busy".into(),
            connector_jobs_waiting: state.connector_jobs.waiting.get(),
        }));
    }
    let ping = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(pool);
    let cause = match tokio::time::timeout(READINESS_TIMEOUT, ping).await {
        Ok(Ok(_)) => {
            return Ok(web::Json(ReadyBody {
                ok: true,
                database: "up".into(),
                connector_jobs_waiting: state.connector_jobs.waiting.get(),
            }))
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {READINESS_TIMEOUT:?}"),
    };
    tracing::warn!(cause, "readiness: the database does not answer");
    Err(ApiError::database_unavailable(cause))
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
