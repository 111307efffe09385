//! The console's overview (instances per model and status, errors by element, messages per
//! minute) and a model's element counts. Each aggregate is read by a bounded statement
//! (`store::stats`); the overview's are kept per replica for `stats_cache_ms`, since every
//! open console polls them and they need not be newer than that.

use super::Result;
use crate::store::{self, stats as stored};
use chrono::{DateTime, Duration as Span, DurationRound, Utc};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use workflow_types::{InstanceStatus, MessageState, ModelId};

pub use stored::{ElementCount, ErrorGroup};

/// A count of instances in one status stops here (it then reads "at least"): the history of a
/// busy model is not worth reading whole for a number on a dashboard.
pub const COUNT_CAP: i64 = 10_000;
/// Models the overview covers (in identifier order).
pub const MAX_MODELS: i64 = 500;
/// Instances in error read for the error groups, and groups shown.
const ERRORS_READ: i64 = 10_000;
const ERROR_GROUPS: i64 = 50;
/// Messages (sends and receives) read backwards for a chart: a busier window is cut.
pub const MESSAGES_READ: i64 = 50_000;
/// Buffered sends counted.
const BUFFERED_CAP: i64 = 100_000;
/// Live instances read for a model's element counts.
const ELEMENT_INSTANCES_READ: i64 = 100_000;

/// The states a send's chart counts (a send's labels, [`MessageState::of`]).
pub const SEND_STATES: [MessageState; 4] = [
    MessageState::Accepted,
    MessageState::Buffered,
    MessageState::Completed,
    MessageState::Rejected,
];

/// One model's instances per status.
#[derive(Debug, Clone)]
pub struct ModelCounts {
    pub process_model_identifier: ModelId,
    /// Every status, counted up to [`COUNT_CAP`].
    pub counts: BTreeMap<InstanceStatus, i64>,
}

/// The overview of every model (the API shows a caller the models it may read).
#[derive(Debug, Clone)]
pub struct Overview {
    pub generated_at: DateTime<Utc>,
    pub models: Vec<ModelCounts>,
    /// More models exist than [`MAX_MODELS`].
    pub models_truncated: bool,
    pub errors: Vec<ErrorGroup>,
    /// Sends in the buffer now.
    pub buffered_now: i64,
    /// Sends of the last hour by state.
    pub last_hour: BTreeMap<MessageState, i64>,
}

/// The chart's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Window {
    Hour,
    Day,
}

impl Window {
    fn span(self) -> Span {
        match self {
            Window::Hour => Span::hours(1),
            Window::Day => Span::days(1),
        }
    }
}

/// Sends per minute of arrival and state, every minute of the window (oldest first).
#[derive(Debug, Clone)]
pub struct MessageChart {
    pub window: Window,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub minutes: Vec<(DateTime<Utc>, BTreeMap<MessageState, i64>)>,
    /// Set when the window held more messages than [`MESSAGES_READ`]: the counts cover the
    /// messages that arrived after it.
    pub cut_at: Option<DateTime<Utc>>,
}

/// What a replica keeps of the aggregates, and for how long. Each is computed under its lock,
/// held across the computation: consoles polling together when it runs out wait for one
/// computation instead of each making their own.
pub struct StatsCache {
    ttl: Duration,
    overview: Mutex<Option<(Instant, Arc<Overview>)>>,
    charts: Mutex<Vec<(Window, Instant, Arc<MessageChart>)>>,
}

impl StatsCache {
    pub fn new(ttl: Duration) -> StatsCache {
        StatsCache {
            ttl,
            overview: Mutex::new(None),
            charts: Mutex::new(Vec::new()),
        }
    }

    fn fresh<T>(&self, at: Instant, value: &Arc<T>) -> Option<Arc<T>> {
        (at.elapsed() < self.ttl).then(|| value.clone())
    }
}

/// The overview, from this replica's cache when it is recent enough.
pub async fn overview(pool: &PgPool, cache: &StatsCache) -> Result<Arc<Overview>> {
    let mut kept = cache.overview.lock().await;
    if let Some(overview) = kept.as_ref().and_then(|(at, o)| cache.fresh(*at, o)) {
        return Ok(overview);
    }
    let hour = message_chart(pool, cache, Window::Hour).await?;
    let mut conn = pool.acquire().await?;
    let mut models: Vec<ModelId> = store::models::list(&mut conn, MAX_MODELS + 1, 0)
        .await?
        .into_iter()
        .map(|m| m.identifier)
        .collect();
    let models_truncated = models.len() as i64 > MAX_MODELS;
    models.truncate(MAX_MODELS as usize);
    let mut counts: BTreeMap<ModelId, BTreeMap<InstanceStatus, i64>> = models
        .iter()
        .map(|m| (m.clone(), BTreeMap::new()))
        .collect();
    for row in stored::status_counts(&mut conn, &models, COUNT_CAP).await? {
        if let Some(model) = counts.get_mut(&row.process_model_identifier) {
            model.insert(row.status, row.count);
        }
    }
    let errors = stored::error_groups(&mut conn, &models, ERRORS_READ, ERROR_GROUPS).await?;
    let buffered_now = stored::buffered_sends(&mut conn, BUFFERED_CAP).await?;
    let mut last_hour: BTreeMap<MessageState, i64> = SEND_STATES.iter().map(|s| (*s, 0)).collect();
    for (_, states) in &hour.minutes {
        for (state, count) in states {
            *last_hour.entry(*state).or_default() += count;
        }
    }
    let overview = Arc::new(Overview {
        generated_at: Utc::now(),
        models: counts
            .into_iter()
            .map(|(process_model_identifier, counts)| ModelCounts {
                process_model_identifier,
                counts,
            })
            .collect(),
        models_truncated,
        errors,
        buffered_now,
        last_hour,
    });
    *kept = Some((Instant::now(), overview.clone()));
    Ok(overview)
}

/// Sends per minute over `window`, from this replica's cache when it is recent enough.
pub async fn message_chart(
    pool: &PgPool,
    cache: &StatsCache,
    window: Window,
) -> Result<Arc<MessageChart>> {
    let mut charts = cache.charts.lock().await;
    let kept = charts
        .iter()
        .find(|(w, _, _)| *w == window)
        .and_then(|(_, at, chart)| cache.fresh(*at, chart));
    if let Some(chart) = kept {
        return Ok(chart);
    }
    let until = Utc::now()
        .duration_trunc(Span::minutes(1))
        .expect("a minute divides any time")
        + Span::minutes(1);
    let since = until - window.span();
    let mut conn = pool.acquire().await?;
    let read = stored::sends_per_minute(&mut conn, since, MESSAGES_READ).await?;
    let mut minutes: Vec<(DateTime<Utc>, BTreeMap<MessageState, i64>)> = Vec::new();
    let mut minute = since;
    while minute < until {
        minutes.push((minute, SEND_STATES.iter().map(|s| (*s, 0)).collect()));
        minute += Span::minutes(1);
    }
    for row in read.counts {
        let index = (row.minute - since).num_minutes();
        if let Some((_, states)) = usize::try_from(index).ok().and_then(|i| minutes.get_mut(i)) {
            *states.entry(row.state).or_default() += row.count;
        }
    }
    let chart = Arc::new(MessageChart {
        window,
        since,
        until,
        minutes,
        cut_at: read.cut_at,
    });
    charts.retain(|(w, _, _)| *w != window);
    charts.push((window, Instant::now(), chart.clone()));
    Ok(chart)
}

/// Where a model's instances stand on its current version's diagram.
#[derive(Debug, Clone)]
pub struct ModelElementCounts {
    pub process_model_identifier: ModelId,
    pub version_sha: String,
    pub counts: stored::ElementCounts,
}

/// The element counts of a model's current version (not cached: one model's live instances).
pub async fn element_counts(pool: &PgPool, model: &ModelId) -> Result<ModelElementCounts> {
    let mut conn = pool.acquire().await?;
    let Some(row) = store::models::find(&mut conn, model).await? else {
        return Err(super::models::model_not_found(model));
    };
    let counts =
        stored::element_counts(&mut conn, model, &row.version_sha, ELEMENT_INSTANCES_READ).await?;
    Ok(ModelElementCounts {
        process_model_identifier: row.identifier,
        version_sha: row.version_sha,
        counts,
    })
}
