//! Pool, migrations, HTTP server, workers and graceful shutdown.

use std::net::TcpListener;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::services::group_commit::GroupCommit;
use crate::services::stats::StatsCache;
use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceRequest, ServiceResponse};
use actix_web::middleware::{from_fn, ErrorHandlers, Next};
use actix_web::{web, HttpServer};
use actix_web_prom::PrometheusMetricsBuilder;
use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use tokio::sync::watch;

use crate::api;
use crate::api::error::{
    json_config, not_found, path_config, payload_config, problem_fallback, query_config,
};
use crate::config::Settings;
use crate::connector::{ConnectorClient, ProxyConfig};
use crate::services::{ModelCache, ScriptSite};
use crate::store::primary::Primary;
use crate::telemetry::traces::{KeyValue, SpanKind, SpanScope, Traces};
use crate::tokens::JwtKeys;
use crate::workers;
use crate::{App, ConnectorJobGauges};

/// A bound, not yet running server.
pub struct Application {
    port: u16,
    server: Server,
    state: Arc<App>,
}

impl Application {
    /// Checks the JWT keys, creates the database if it is missing, migrates it and binds
    /// (`bind` with port 0 picks a free port; see [`Application::port`]).
    pub async fn build(settings: Settings) -> anyhow::Result<Application> {
        Self::build_with(settings, |_| {}).await
    }

    /// [`Application::build`], with `extra_routes` registered before the API's (tests mount
    /// probe handlers this way).
    pub async fn build_with(
        settings: Settings,
        extra_routes: fn(&mut web::ServiceConfig),
    ) -> anyhow::Result<Application> {
        let keys = JwtKeys::from_settings(&settings.jwt)?;
        if let Some(jwks) = keys.jwks() {
            // a provider that is down does not keep the service from starting: tokens it
            // would verify are answered 503 until its keys arrive
            if let Err(e) = jwks.refresh().await {
                tracing::warn!(error = %e, "the identity provider's keys could not be fetched at start");
            }
        }
        let (pool, primary) = connect_database(&settings).await?;
        let app = Self::start(settings, (pool, primary), keys, extra_routes)?;
        crate::services::models::index_process_definitions(&app.state.pool, &app.state.models)
            .await
            .context("indexing the processes of the stored models")?;
        if let Some(dir) = &app.state.settings.process_models_dir {
            let loaded =
                crate::services::models::load_directory(&app.state.pool, &app.state.models, dir)
                    .await
                    .with_context(|| {
                        format!(
                            "WORKFLOW_BACKEND_PROCESS_MODELS_DIR: cannot read {}",
                            dir.display()
                        )
                    })?;
            tracing::info!(loaded, dir = %dir.display(), "process models loaded");
        }
        Ok(app)
    }

    /// With a pool made by the caller, not migrated here (tests: a lazy pool to an unreachable
    /// database).
    pub async fn build_with_pool(settings: Settings, pool: PgPool) -> anyhow::Result<Application> {
        let keys = JwtKeys::from_settings(&settings.jwt)?;
        Self::start(settings, (pool, None), keys, |_| {})
    }

    fn start(
        mut settings: Settings,
        (pool, database_primary): (PgPool, Option<Arc<Primary>>),
        keys: JwtKeys,
        extra_routes: fn(&mut web::ServiceConfig),
    ) -> anyhow::Result<Application> {
        let listener = TcpListener::bind(&settings.bind).with_context(|| {
            format!("WORKFLOW_BACKEND_BIND: cannot listen on {}", settings.bind)
        })?;
        let local_addr = listener.local_addr()?;
        let port = local_addr.port();
        // The default public URL is `http://<BIND>`: with port 0, use the port actually bound.
        if settings.public_url == format!("http://{}", settings.bind) {
            settings.public_url = format!("http://{local_addr}");
        }
        let max_body_bytes = settings.max_body_bytes;
        let body_read_timeout =
            api::guard::BodyReadTimeout(Duration::from_millis(settings.body_read_timeout_ms));
        let connector = settings.connector_proxy_url.as_ref().map(|url| {
            ConnectorClient::new(ProxyConfig {
                base_url: url.clone(),
                api_key: settings.connector_proxy_api_key.clone(),
                connect_timeout: Duration::from_millis(settings.connector_connect_timeout_ms),
                timeout: Duration::from_millis(settings.connector_timeout_ms),
                max_redirects: 5,
            })
        });
        let keys = Arc::new(keys);
        let scripts = start_script_workers(&settings.scripts)?;
        let site = ScriptSite {
            frontend_url: settings.public_url.clone(),
            env_identifier: settings.scripts.env_identifier.clone(),
        };
        let traces = match &settings.traces {
            Some(traces) => Some(Arc::new(Traces::start(traces)?)),
            None => None,
        };
        let registry = prometheus::Registry::new();
        let stats_cache_ms = settings.stats_cache_ms;
        let models = Arc::new(ModelCache::new(scripts).with_site(site));
        let state = Arc::new(App {
            sends: GroupCommit::new(pool.clone(), models.clone()),
            callbacks: GroupCommit::new(pool.clone(), models.clone()),
            job_outcomes: GroupCommit::new(pool.clone(), models.clone()),
            pool,
            settings: Arc::new(settings),
            keys: keys.clone(),
            models,
            connector,
            message_buffered: Arc::new(tokio::sync::Notify::new()),
            connector_jobs: ConnectorJobGauges::registered_in(&registry)?,
            traces,
            database_primary,
            stats: Arc::new(StatsCache::new(Duration::from_millis(stats_cache_ms))),
        });
        // Labels are route patterns (`/v1.0/tasks/{id}`), and every unmatched path counts as one
        // label value, so the number of series stays bounded.
        let metrics = PrometheusMetricsBuilder::new("workflow_backend")
            .registry(registry)
            .endpoint("/metrics")
            .mask_unmatched_patterns("UNMATCHED")
            .build()
            .map_err(|e| anyhow::anyhow!("building the metrics middleware: {e}"))?;

        let app_state = state.clone();
        let server = HttpServer::new(move || {
            actix_web::App::new()
                .wrap(from_fn(api::guard::guard_requests))
                .wrap(from_fn(api::etag::conditional_get))
                .wrap(ErrorHandlers::new().default_handler(problem_fallback))
                .wrap(from_fn(log_request))
                .wrap(from_fn(trace_request))
                .wrap(metrics.clone())
                .app_data(web::Data::from(app_state.clone()))
                .app_data(web::Data::from(keys.clone()))
                .app_data(body_read_timeout)
                .app_data(json_config(max_body_bytes))
                .app_data(payload_config(max_body_bytes))
                .app_data(query_config())
                .app_data(path_config())
                .configure(extra_routes)
                .configure(api::configure)
                .default_service(web::to(not_found))
        })
        .listen(listener)?
        // Signals are handled in `run_until_stopped`, which also stops the workers.
        .disable_signals()
        .shutdown_timeout(30)
        .run();
        Ok(Application {
            port,
            server,
            state,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What handlers and workers share (tests drive the workers' one-shot functions with it).
    pub fn state(&self) -> Arc<App> {
        self.state.clone()
    }

    /// The settings in effect (`public_url` carries the bound port when it was defaulted).
    pub fn settings(&self) -> Arc<Settings> {
        self.state.settings.clone()
    }

    /// Starts the workers and serves until SIGTERM or SIGINT; then finishes in-flight requests
    /// (up to 30 s), stops the workers and returns.
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let (stop_workers, shutdown) = watch::channel(false);
        let worker_handles = if self.state.settings.run_workers {
            workers::spawn_all(self.state.clone(), shutdown)
        } else {
            Vec::new()
        };
        let handle = self.server.handle();
        // The server future must keep being polled while it stops, hence its own task.
        let mut server = tokio::spawn(self.server);
        let result = tokio::select! {
            result = &mut server => result,
            signal = shutdown_signal() => {
                tracing::info!(signal, "shutting down: finishing in-flight requests");
                handle.stop(true).await;
                server.await
            }
        };
        let _ = stop_workers.send(true);
        for worker in worker_handles {
            if let Err(e) = worker.await {
                tracing::error!(error = %e, "a worker ended abnormally");
            }
        }
        if let Some(traces) = self.state.traces.clone() {
            // the exporter's last batch: blocking, so off the async threads
            let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
        }
        tracing::info!("stopped");
        result.context("HTTP server task")?.context("HTTP server")
    }
}

async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the server");
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}

/// One log line per request: method, path (no query string: it may carry tokens), status, time.
async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.path().to_owned();
    let res = next.call(req).await?;
    tracing::info!(
        method = %method,
        path,
        status = res.status().as_u16(),
        elapsed_ms = tenth_of_a_millisecond(started.elapsed()),
        "request"
    );
    Ok(res)
}

/// One span per request, named by method and route (`POST /v1.0/messages/{modified_message_name}`),
/// continuing the caller's `traceparent`; the handler runs with it current, so the engine steps
/// and the commit it causes are its children. Without traces configured: straight through.
async fn trace_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let traces = req
        .app_data::<web::Data<App>>()
        .and_then(|state| state.traces.clone());
    let Some(traces) = traces else {
        return next.call(req).await;
    };
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let parent = traces.continue_trace(header("traceparent"), header("tracestate"));
    let route = req.match_pattern();
    let method = req.method().as_str().to_owned();
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.clone(),
    };
    let span = SpanScope::under(&parent, name, SpanKind::Server, || {
        let mut attributes = vec![
            KeyValue::new("http.request.method", method),
            KeyValue::new("url.path", req.path().to_owned()),
        ];
        attributes.extend(route.map(|route| KeyValue::new("http.route", route)));
        attributes
    });
    let res = span.around(next.call(req)).await;
    if let Ok(res) = &res {
        let status = res.status();
        span.set(|| {
            vec![KeyValue::new(
                "http.response.status_code",
                i64::from(status.as_u16()),
            )]
        });
        if status.is_server_error() {
            span.fail(|| status.to_string());
        }
    }
    span.record(res)
}

/// Milliseconds to one decimal (`2.4`), as a log reads them: more digits only add noise.
fn tenth_of_a_millisecond(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 10_000.0).round() / 10.0
}

/// Creates the database if it does not exist, connects a pool and runs the migrations.
pub async fn prepare_database(settings: &Settings) -> anyhow::Result<PgPool> {
    Ok(connect_database(settings).await?.0)
}

/// [`prepare_database`], with the watch that keeps the pool on the writable host when the URL
/// names several (see [`Primary`]); `None` for one host.
pub async fn connect_database(
    settings: &Settings,
) -> anyhow::Result<(PgPool, Option<Arc<Primary>>)> {
    // Every query is a short indexed lookup or write: generic plans are as good as custom
    // ones, and re-planning each execution was a measured 15% of Postgres' CPU under load.
    // No statement timeout, whatever the role's: a COMMIT whose wait for the synchronous
    // standby is cancelled commits locally and reports success, so a timeout would let an
    // answer acknowledge what a failover can lose.
    // (Set here, so that the options of every host a failover may move the pool to carry them.)
    // On Citus, Postgres decides: a generic plan leaves Citus parameters it cannot route or plan
    // (an `INSERT ... SELECT` of parameters into a reference table: "could not create
    // distributed plan"), and Citus caches the plans of its single-shard statements itself.
    let plan_cache_mode = if settings.citus {
        "auto"
    } else {
        "force_generic_plan"
    };
    let given = PgConnectOptions::from_str(&settings.database_url)
        .context("WORKFLOW_BACKEND_DATABASE_URL")?
        .options([
            ("plan_cache_mode", plan_cache_mode),
            ("statement_timeout", "0"),
        ]);
    let name = settings.database_name();
    let (options, primary) = match &settings.database_failover {
        None => {
            ensure_database(&given, &name).await?;
            (given.clone(), None)
        }
        Some(failover) => {
            // the writable host is first found on the maintenance database: ours may not exist
            let maintenance = Primary::new(&given.clone().database("postgres"), &failover.hosts);
            let (index, _) = maintenance.find_writable().await.map_err(|why| {
                anyhow::anyhow!("WORKFLOW_BACKEND_DATABASE_URL: no host takes writes ({why})")
            })?;
            let (host, port) = &failover.hosts[index];
            ensure_database(&given.clone().host(host).port(*port), &name).await?;
            let primary = Primary::new(&given, &failover.hosts);
            let (index, probe) = primary.find_writable().await.map_err(|why| {
                anyhow::anyhow!("WORKFLOW_BACKEND_DATABASE_URL: no host takes writes ({why})")
            })?;
            primary.start_on(index, probe);
            let options = primary.current_options();
            let host = format!("{}:{}", options.get_host(), options.get_port());
            tracing::info!(host, "the database primary");
            (options, Some(primary))
        }
    };
    let mut pool_options = PgPoolOptions::new()
        .max_connections(settings.database_pool_size)
        .acquire_timeout(Duration::from_secs(5));
    if let Some(primary) = &primary {
        pool_options = primary.guard(pool_options);
    }
    let pool = pool_options
        .connect_with(options)
        .await
        .with_context(|| format!("cannot connect to the database at {}", describe(&given)))?;
    if settings.citus {
        check_citus(&pool).await?;
    }
    migrate(&pool).await?;
    if settings.citus {
        place_on_citus(&pool).await?;
    }
    crate::services::health::warn_about_upkeep(&pool).await;
    Ok((pool, primary))
}

/// With `WORKFLOW_BACKEND_CITUS=true`, the database must be a Citus coordinator's with a worker
/// (`citus_not_ready` otherwise: the service would run, unsharded, on a plain database).
async fn check_citus(pool: &PgPool) -> anyhow::Result<()> {
    use crate::store::citus::NotReady;
    let missing = match crate::store::citus::readiness(pool).await? {
        Ok(()) => return Ok(()),
        Err(NotReady::NoExtension) => {
            "the database has no citus extension (CREATE EXTENSION citus, on the coordinator \
             and on every worker, in this database)"
        }
        Err(NotReady::NoWorkers) => {
            "the coordinator has no active worker (citus_add_node for each worker)"
        }
    };
    Err(anyhow::anyhow!(
        "citus_not_ready: WORKFLOW_BACKEND_CITUS is true but {missing}"
    ))
}

/// Makes the model tables reference tables and distributes the instance tables (once: later
/// starts find them placed), then keys rows by Citus buckets; refuses to start when the schema
/// has a table this build does not place, or instances stored before.
async fn place_on_citus(pool: &PgPool) -> anyhow::Result<()> {
    let placement = crate::store::citus::place_tables(pool)
        .await
        .context("placing the tables on Citus")?;
    if !placement.made_reference.is_empty() {
        tracing::info!(tables = ?placement.made_reference, "made reference tables on Citus");
    }
    if !placement.distributed.is_empty() {
        tracing::info!(tables = ?placement.distributed, "distributed tables on Citus");
    }
    if placement.undistributable > 0 {
        return Err(anyhow::anyhow!(
            "citus_not_ready: the database holds {} instances stored without Citus; the Citus \
             mode starts on a new database",
            placement.undistributable
        ));
    }
    if !placement.misplaced_buckets.is_empty() {
        return Err(anyhow::anyhow!(
            "citus_not_ready: the instance tables are not distributed over {} shards as this \
             build expects (buckets sharing a shard: {:?})",
            crate::store::shards::BUCKETS,
            placement.misplaced_buckets
        ));
    }
    if !placement.unplaced.is_empty() {
        return Err(anyhow::anyhow!(
            "citus_not_ready: tables that are neither reference nor instance tables: {}",
            placement.unplaced.join(", ")
        ));
    }
    // every key from now on is a bucket's
    crate::store::shards::distribute();
    Ok(())
}

/// `host:port/database`, for errors (never the password).
fn describe(options: &PgConnectOptions) -> String {
    format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or_default()
    )
}

/// Creates the database `name` on `options`' host unless it exists (another replica may create
/// it at the same moment: that is not an error).
async fn ensure_database(options: &PgConnectOptions, name: &str) -> anyhow::Result<()> {
    match PgConnection::connect_with(options).await {
        Ok(conn) => {
            let _ = conn.close().await;
            return Ok(());
        }
        // 3D000: invalid_catalog_name, the database does not exist.
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("3D000") => {}
        Err(e) => {
            return Err(e).with_context(|| {
                format!("cannot connect to the database at {}", describe(options))
            })
        }
    }
    let maintenance = options.clone().database("postgres");
    let mut conn = PgConnection::connect_with(&maintenance)
        .await
        .with_context(|| {
            format!(
                "cannot connect to {} to create the database",
                describe(&maintenance)
            )
        })?;
    let sql = format!(r#"CREATE DATABASE "{}""#, name.replace('"', "\"\""));
    match conn.execute(sqlx::AssertSqlSafe(sql)).await {
        Ok(_) => tracing::info!(database = %name, "created the database"),
        // 42P04 duplicate_database, 23505 unique_violation: another instance created it first.
        Err(sqlx::Error::Database(e)) if matches!(e.code().as_deref(), Some("42P04" | "23505")) => {
        }
        Err(e) => return Err(e).with_context(|| format!("cannot create the database {name:?}")),
    }
    let _ = conn.close().await;
    Ok(())
}

/// Migrations whose comments were reworded after they were released, with the checksum
/// (SHA-384) of their released text: sqlx refuses to start on a database that applied a
/// migration whose file changed since, so the stored checksum is moved to the new text.
/// Only comments may ever change this way; the SQL of a released migration never does.
pub const REWORDED_MIGRATIONS: &[(i64, &str)] = &[(
    20261125000100,
    "ab10a6d7f9d3b7a154591f4808ed70ff3e3589ddc36cf48c771119094637fc18997fcd425e08bd0b34e0871539d72597",
)];

/// Applies the migrations in `migrations/` (concurrent runs are serialised by sqlx's lock).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    let migrator = sqlx::migrate!("./migrations");
    accept_reworded_migrations(pool, &migrator)
        .await
        .context("accepting reworded migrations")?;
    migrator
        .run(pool)
        .await
        .context("running the database migrations")
}

/// Moves the stored checksum of each of [`REWORDED_MIGRATIONS`] from its released text to
/// its current one, where a database applied the released text.
async fn accept_reworded_migrations(
    pool: &PgPool,
    migrator: &sqlx::migrate::Migrator,
) -> sqlx::Result<()> {
    for (version, released) in REWORDED_MIGRATIONS {
        let released = hex::decode(released).expect("a hex checksum");
        let current = migrator
            .iter()
            .find(|migration| migration.version == *version)
            .map(|migration| migration.checksum.to_vec())
            .expect("a reworded migration is one of the migrations");
        crate::store::migrations::move_checksum(pool, *version, &released, &current).await?;
    }
    Ok(())
}

/// The script worker pool; one worker starts now, so a missing interpreter or package stops
/// the service at start-up with the reason rather than failing the first script.
fn start_script_workers(
    settings: &crate::config::ScriptSettings,
) -> anyhow::Result<Arc<dyn crate::expr::ScriptHost>> {
    let workers = crate::python::WorkerPool::start(crate::python::PoolSettings {
        python: settings.python.clone(),
        packages: settings.packages.clone(),
        workers: settings.workers,
        time_limit: Duration::from_millis(settings.time_limit_ms),
        memory_limit_mb: settings.memory_limit_mb,
        queue_timeout: Duration::from_millis(settings.queue_timeout_ms),
        os_wall: settings.os_wall,
        unguarded_for_tests: false,
    })
    .map_err(|e| anyhow::anyhow!("cannot start the script workers: {e:?}"))?;
    let host =
        crate::python::PythonHost::new(workers).with_max_data_bytes(settings.max_task_data_bytes);
    Ok(Arc::new(host))
}

#[cfg(test)]
mod tests {
    #[test]
    fn request_times_are_logged_to_a_tenth_of_a_millisecond() {
        let logged = super::tenth_of_a_millisecond(std::time::Duration::from_micros(2_437));
        assert_eq!(logged, 2.4);
    }
}
