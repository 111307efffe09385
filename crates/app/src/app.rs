//! The application handle ([`App`]): what the use cases and workers share, free of HTTP.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use crate::config::Settings;
use crate::connector::ConnectorClient;
use crate::services::group_commit::GroupCommit;
use crate::services::messages::SendRequest;
use crate::services::service_tasks::ServiceTaskContext;
use crate::services::service_tasks::{Callback, JobOutcome};
use crate::services::ModelCache;
use crate::store::primary::Primary;
use crate::telemetry::traces::Traces;
use crate::tokens::JwtKeys;

/// What every use case, worker and handler works with: the database, the settings, the keys,
/// the compiled models, the connector proxy's client, and what the workers signal each other.
/// Built once by the composition root (the binary's `startup`); handlers receive it from the
/// HTTP layer, workers as an `Arc`.
pub struct App {
    pub pool: PgPool,
    pub settings: Arc<Settings>,
    /// Token verification, and minting of per-task callback tokens.
    pub keys: Arc<JwtKeys>,
    /// Compiled process models, keyed by version.
    pub models: Arc<ModelCache>,
    /// Message sends committed together when they arrive together (group commit).
    pub sends: Arc<GroupCommit<SendRequest>>,
    /// Connectors' callbacks committed together when they arrive together.
    pub callbacks: Arc<GroupCommit<Callback>>,
    /// Connector proxies' answers committed together when they arrive together.
    pub job_outcomes: Arc<GroupCommit<JobOutcome>>,
    /// The connector proxy, when `WORKFLOW_BACKEND_CONNECTOR_PROXY_URL` is set.
    pub connector: Option<ConnectorClient>,
    /// Woken when a message is buffered: the expiry sweeper then knows its next deadline.
    pub message_buffered: Arc<tokio::sync::Notify>,
    /// The connector dispatcher's backlog, as `/metrics` and readiness show it.
    pub connector_jobs: ConnectorJobGauges,
    /// The span exporter, when traces are configured (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub traces: Option<Arc<Traces>>,
    /// The watch that keeps the pool on the writable host, when the database URL names several.
    pub database_primary: Option<Arc<Primary>>,
    /// The overview's aggregates this replica computed last (`GET /v1.0/stats/...`).
    pub stats: Arc<crate::services::stats::StatsCache>,
}

/// Gauges the connector dispatcher keeps: calls due and waiting for a slot (its backlog), and
/// calls under way (free slots are `MAX_IN_FLIGHT` minus these); and the calls handed to it.
#[derive(Clone)]
pub struct ConnectorJobGauges {
    pub waiting: prometheus::IntGauge,
    pub in_flight: prometheus::IntGauge,
    /// Calls handed from the step that scheduled them to this replica's dispatcher (no claim).
    pub handed_over: prometheus::IntCounter,
}

impl ConnectorJobGauges {
    pub fn registered_in(registry: &prometheus::Registry) -> anyhow::Result<ConnectorJobGauges> {
        let gauge = |name: &str, help: &str| -> anyhow::Result<prometheus::IntGauge> {
            let gauge = prometheus::IntGauge::new(name, help)?;
            registry.register(Box::new(gauge.clone()))?;
            Ok(gauge)
        };
        Ok(ConnectorJobGauges {
            waiting: gauge(
                "workflow_backend_connector_jobs_waiting",
                "Connector calls that are due and wait for a dispatcher slot (the backlog)",
            )?,
            in_flight: gauge(
                "workflow_backend_connector_jobs_in_flight",
                "Connector calls this replica is making",
            )?,
            handed_over: {
                let counter = prometheus::IntCounter::new(
                    "workflow_backend_connector_calls_handed_over_total",
                    "Connector calls handed from the step that scheduled them to this replica's \
                     dispatcher, without a claim",
                )?;
                registry.register(Box::new(counter.clone()))?;
                counter
            },
        })
    }
}

impl App {
    /// What the connector dispatcher and the callback endpoint work with.
    pub fn service_tasks(&self) -> ServiceTaskContext<'_> {
        ServiceTaskContext {
            pool: &self.pool,
            cache: &self.models,
            client: self.connector.as_ref(),
            public_url: &self.settings.public_url,
            signer: &self.keys,
            callback_token_ttl: Duration::from_secs(self.settings.callback_token_ttl_seconds),
            traces: self.traces.as_deref(),
            job_outcomes: &self.job_outcomes,
        }
    }
}
