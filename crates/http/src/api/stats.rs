//! The console's overview: instances per model and status, errors by element, messages per
//! minute, and where a model's instances stand on its diagram. Each answer shows a caller only
//! the models whose instances it may read.

use super::auth::Principal;
use super::error::{ApiError, Problem};
use crate::services;
use crate::services::stats::{self, Window};
use crate::App;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// One model's instances per status.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelOverview {
    #[schema(example = "shop/orders")]
    process_model_identifier: String,
    /// Instances per status (`running`, `waiting`, `user_input_required`, `suspended`,
    /// `error`, `complete`, `terminated`), each counted up to `count_cap`.
    counts: BTreeMap<String, i64>,
    /// The statuses whose count reached `count_cap` (there are at least that many).
    capped: Vec<String>,
}

/// Instances in error that failed at the same element with the same message.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorGroupAnswer {
    process_model_identifier: String,
    element_id: Option<String>,
    /// The error's message (its first 500 characters).
    message: Option<String>,
    count: i64,
}

/// Sends (messages posted to the service) now and in the last hour.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessagesOverview {
    /// Sends in the buffer, waiting for an instance to take them.
    buffered_now: i64,
    /// Sends that arrived in the last hour, by their state now (`accepted`, `buffered`,
    /// `completed`, `rejected`).
    last_hour: BTreeMap<String, i64>,
}

/// The overview of the models the caller may read.
#[derive(Debug, Serialize, ToSchema)]
pub struct OverviewAnswer {
    /// When these aggregates were computed (a replica reuses them for a few seconds).
    generated_at: DateTime<Utc>,
    /// A count stops here.
    count_cap: i64,
    models: Vec<ModelOverview>,
    /// More models exist than the overview covers (the first 500 by identifier).
    models_truncated: bool,
    /// The largest groups of instances in error (at most 50).
    errors: Vec<ErrorGroupAnswer>,
    /// Present when the caller may read every instance's messages (`instances:read:*`).
    messages: Option<MessagesOverview>,
}

/// The console's overview: per model the caller may read (`instances:read:<model>`), its
/// instances per status (each a count up to `count_cap`); its instances in error grouped by
/// element and message; and, for a caller that may read every message (`instances:read:*`),
/// the sends buffered now and those of the last hour by state. A replica computes the
/// aggregates at most every two seconds; each reads a bounded number of rows.
#[utoipa::path(
    get,
    path = "/v1.0/stats/overview",
    tag = "stats",
    responses(
        (status = 200, description = "The overview", body = OverviewAnswer),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: the token may read no model's instances", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn overview(
    principal: Principal,
    state: web::Data<App>,
) -> Result<HttpResponse, ApiError> {
    // refused before anything is computed when no scope could read any model's instances
    if !principal.may_read_some_instances() {
        principal.require("instances:read:*")?;
    }
    let overview = stats::overview(&state.pool, &state.stats).await?;
    let readable = |model: &str| principal.allows(&format!("instances:read:{model}"));
    let models: Vec<ModelOverview> = overview
        .models
        .iter()
        .filter(|m| readable(m.process_model_identifier.as_str()))
        .map(|m| ModelOverview {
            process_model_identifier: m.process_model_identifier.to_string(),
            counts: m
                .counts
                .iter()
                .map(|(status, count)| (status.to_string(), *count))
                .collect(),
            capped: m
                .counts
                .iter()
                .filter(|(_, count)| **count >= stats::COUNT_CAP)
                .map(|(status, _)| status.to_string())
                .collect(),
        })
        .collect();
    let every_model = principal.allows("instances:read:*");
    if models.is_empty() && !every_model {
        principal.require("instances:read:*")?;
    }
    let errors = overview
        .errors
        .iter()
        .filter(|e| readable(e.process_model_identifier.as_str()))
        .map(|e| ErrorGroupAnswer {
            process_model_identifier: e.process_model_identifier.to_string(),
            element_id: e.element_id.clone(),
            message: e.message.clone(),
            count: e.count,
        })
        .collect();
    let messages = every_model.then(|| MessagesOverview {
        buffered_now: overview.buffered_now,
        last_hour: labelled(&overview.last_hour),
    });
    Ok(HttpResponse::Ok().json(OverviewAnswer {
        generated_at: overview.generated_at,
        count_cap: stats::COUNT_CAP,
        models,
        models_truncated: overview.models_truncated,
        errors,
        messages,
    }))
}

fn labelled<K: std::fmt::Display>(counts: &BTreeMap<K, i64>) -> BTreeMap<String, i64> {
    counts.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChartQuery {
    /// `hour` (default) or `day`
    #[param(pattern = "^(hour|day)$")]
    window: Option<String>,
}

/// Sends that arrived in one minute, by their state now.
#[derive(Debug, Serialize, ToSchema)]
pub struct MinuteAnswer {
    start: DateTime<Utc>,
    /// `accepted`, `buffered`, `completed`, `rejected`
    counts: BTreeMap<String, i64>,
}

/// Sends per minute over a window.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageChartAnswer {
    /// `hour` or `day`
    window: String,
    bucket_seconds: i64,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    /// Every minute of the window, oldest first.
    buckets: Vec<MinuteAnswer>,
    /// Whether every send of the window was counted; when it held more messages than a chart
    /// reads (50,000), only those after `counted_since` were.
    complete: bool,
    counted_since: Option<DateTime<Utc>>,
}

/// Messages posted to the service per minute of arrival over the last hour or day, by their
/// state now (`accepted`, `buffered`, `completed`, `rejected`). Needs `instances:read:*` (as
/// the messages list). The newest 50,000 messages are read: a busier window is cut, and the
/// answer says where.
#[utoipa::path(
    get,
    path = "/v1.0/stats/messages",
    tag = "stats",
    params(ChartQuery),
    responses(
        (status = 200, description = "Sends per minute", body = MessageChartAnswer),
        (status = 400, description = "`invalid_query`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:*`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn message_chart(
    principal: Principal,
    state: web::Data<App>,
    query: web::Query<ChartQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require("instances:read:*")?;
    let window = match super::filter(&query.window) {
        None | Some("hour") => Window::Hour,
        Some("day") => Window::Day,
        Some(other) => {
            return Err(ApiError::refused(
                services::ErrorCode::InvalidQuery,
                format!(
                    "window must be `hour` or `day`, got '{}'",
                    other.escape_default()
                ),
            ))
        }
    };
    let chart = stats::message_chart(&state.pool, &state.stats, window).await?;
    Ok(HttpResponse::Ok().json(MessageChartAnswer {
        window: match chart.window {
            Window::Hour => "hour",
            Window::Day => "day",
        }
        .into(),
        bucket_seconds: 60,
        since: chart.since,
        until: chart.until,
        buckets: chart
            .minutes
            .iter()
            .map(|(start, counts)| MinuteAnswer {
                start: *start,
                counts: labelled(counts),
            })
            .collect(),
        complete: chart.cut_at.is_none(),
        counted_since: chart.cut_at,
    }))
}

/// Instances of a model at one element.
#[derive(Debug, Serialize, ToSchema)]
pub struct ElementCountAnswer {
    element_id: String,
    /// Instances with a live task (ready, waiting or started) at the element.
    waiting: i64,
    /// Instances in error that failed at the element.
    error: i64,
}

/// Instances on other versions of the model (not drawn on the current version's diagram).
#[derive(Debug, Serialize, ToSchema)]
pub struct OtherVersionsAnswer {
    waiting: i64,
    error: i64,
}

/// Where a model's instances stand on its current version's diagram.
#[derive(Debug, Serialize, ToSchema)]
pub struct ElementCountsAnswer {
    #[schema(example = "shop/orders")]
    process_model_identifier: String,
    /// The version counted: the model's current one.
    version_sha: String,
    /// The elements with an instance, by element id.
    elements: Vec<ElementCountAnswer>,
    other_versions: OtherVersionsAnswer,
}

/// Where a model's live and failed instances stand on its current version: per element, the
/// instances with a live task there and the instances in error that failed there (as the
/// console draws them on the diagram). Needs `instances:read:<model>`. Instances on older
/// versions are counted apart (`other_versions`). Up to 100,000 live instances are read.
#[utoipa::path(
    get,
    path = "/v1.0/process-models/{modified_process_model_identifier}/element-counts",
    tag = "stats",
    params(("modified_process_model_identifier" = String, Path, max_length = 255, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(:[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$", description = "`group:sub:model`")),
    responses(
        (status = 200, description = "The counts", body = ElementCountsAnswer),
        (status = 400, description = "`invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `instances:read:<model>`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn element_counts(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let model = services::models::identifier_from_url(&path)?;
    principal.require(&format!("instances:read:{model}"))?;
    let counted = stats::element_counts(&state.pool, &model).await?;
    Ok(HttpResponse::Ok().json(ElementCountsAnswer {
        process_model_identifier: counted.process_model_identifier.to_string(),
        version_sha: counted.version_sha,
        elements: counted
            .counts
            .elements
            .into_iter()
            .map(|e| ElementCountAnswer {
                element_id: e.element_id,
                waiting: e.waiting,
                error: e.error,
            })
            .collect(),
        other_versions: OtherVersionsAnswer {
            waiting: counted.counts.other_versions_waiting,
            error: counted.counts.other_versions_error,
        },
    }))
}
