//! Settings from `WORKFLOW_BACKEND_*` environment variables.
//!
//! [`Settings::from_vars`] is pure (it reads only what it is given), so tests can build settings
//! without touching the process environment. An empty value counts as unset. Every error names
//! the variable, on one line.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use reqwest::Url;

pub const PREFIX: &str = "WORKFLOW_BACKEND_";

/// Every variable the settings read (without [`PREFIX`]), with its default, for `--help` (a
/// test holds it to what `from_vars` reads).
pub const VARIABLES: &[(&str, &str)] = &[
    ("DATABASE_URL", DEFAULT_DATABASE_URL),
    ("DATABASE_POOL_SIZE", "10"),
    ("CITUS", "false"),
    ("BIND", DEFAULT_BIND),
    ("URL", "http://<BIND>"),
    ("JWT_SECRET", "none"),
    ("JWT_PUBLIC_KEY_FILE", "none"),
    ("JWT_ISSUER", "none"),
    ("JWT_AUDIENCE", "none"),
    ("JWT_LEEWAY_SECONDS", "5"),
    ("JWT_JWKS_URL", "none"),
    ("OIDC_ISSUER", "none"),
    ("JWT_SCOPE_CLAIM", "scope"),
    ("JWT_SCOPE_MAP_FILE", "none"),
    ("CONNECTOR_PROXY_URL", "none"),
    ("CONNECTOR_PROXY_API_KEY", "none"),
    ("CONNECTOR_CONNECT_TIMEOUT_MS", "5000"),
    ("CONNECTOR_TIMEOUT_MS", "45000"),
    ("CALLBACK_TOKEN_TTL_SECONDS", "86400"),
    ("PROCESS_MODELS_DIR", "none"),
    ("MAX_BODY_BYTES", "1048576"),
    ("BODY_READ_TIMEOUT_MS", "30000"),
    ("STATS_CACHE_MS", "2000"),
    ("LOG_FORMAT", "text"),
    ("PYTHON", "python3"),
    ("PYTHON_PACKAGES", "python-packages beside the executable"),
    ("SCRIPT_WORKERS", "number of cores"),
    ("SCRIPT_TIME_LIMIT_MS", "1000"),
    ("SCRIPT_MEMORY_LIMIT_MB", "64"),
    ("SCRIPT_QUEUE_TIMEOUT_MS", "5000"),
    ("SCRIPT_OS_WALL", "required"),
    ("MAX_TASK_DATA_BYTES", "4194304"),
    ("ENV_IDENTIFIER", "local"),
];

/// The environment section of `--help`: every variable with its default.
pub fn variables_help() -> String {
    let mut help = String::from(
        "Environment (also read from a .env file; empty counts as unset; an invalid value \
         stops the command, naming it):\n",
    );
    for (name, default) in VARIABLES {
        help.push_str(&format!("  {PREFIX}{name:<30} default: {default}\n"));
    }
    help.push_str(&format!(
        "  {:<47} default: info,sqlx=warn,actix_web_prom=error\n",
        "RUST_LOG"
    ));
    for (name, default) in OTEL_VARIABLES {
        help.push_str(&format!("  {name:<47} default: {default}\n"));
    }
    help
}

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/workflow_backend";
const DEFAULT_BIND: &str = "127.0.0.1:7000";
const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
const DEFAULT_CALLBACK_TOKEN_TTL_SECONDS: u64 = 86_400;
const DEFAULT_CONNECTOR_CONNECT_TIMEOUT_MS: u64 = 5_000;
const DEFAULT_CONNECTOR_TIMEOUT_MS: u64 = 45_000;
/// Clock skew tolerated on `exp` and `nbf`.
pub const DEFAULT_JWT_LEEWAY_SECONDS: u64 = 5;
pub const DEFAULT_SCOPE_CLAIM: &str = "scope";
const MAX_JWT_LEEWAY_SECONDS: u64 = 300;
const DEFAULT_BODY_READ_TIMEOUT_MS: u64 = 30_000;
const DEFAULT_STATS_CACHE_MS: u64 = 2_000;
const MAX_STATS_CACHE_MS: u64 = 3_600_000;
/// A script (or expression) runs at most this long before it is stopped.
const DEFAULT_SCRIPT_TIME_LIMIT_MS: u64 = 1_000;
/// Address space a script may add to its worker.
const DEFAULT_SCRIPT_MEMORY_LIMIT_MB: u64 = 64;
/// A step waits this long for a free script worker, then its request gets 503.
const DEFAULT_SCRIPT_QUEUE_TIMEOUT_MS: u64 = 5_000;
/// Task data a script or expression may leave (as compact JSON): 4 MiB.
const DEFAULT_MAX_TASK_DATA_BYTES: u64 = crate::python::DEFAULT_MAX_DATA_BYTES as u64;

/// A configuration problem. `Display` is one line that names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{var}: {problem}")]
    Invalid { var: String, problem: String },
    #[error(
        "no JWT key configured: set WORKFLOW_BACKEND_JWT_SECRET (an HS256 shared secret), \
         WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE (a PEM public key, RS256 or ES256), \
         WORKFLOW_BACKEND_JWT_JWKS_URL or WORKFLOW_BACKEND_OIDC_ISSUER (an identity \
         provider's keys); the server never starts open to anonymous callers"
    )]
    NoJwtKey,
}

impl ConfigError {
    /// `name` without the prefix, e.g. `invalid("BIND", ...)`.
    pub fn invalid(name: &str, problem: impl Into<String>) -> Self {
        ConfigError::Invalid {
            var: format!("{PREFIX}{name}"),
            problem: problem.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// How bearer tokens are verified (and, with a secret, minted). Secrets are redacted from `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct JwtSettings {
    /// HS256 shared secret (`WORKFLOW_BACKEND_JWT_SECRET`).
    pub secret: Option<String>,
    /// PEM public key, RS256 or ES256 (`WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE`).
    pub public_key_file: Option<PathBuf>,
    /// Required `iss` when set (`WORKFLOW_BACKEND_JWT_ISSUER`).
    pub issuer: Option<String>,
    /// Required `aud` when set (`WORKFLOW_BACKEND_JWT_AUDIENCE`).
    pub audience: Option<String>,
    /// Clock skew tolerated on `exp` and `nbf` (`WORKFLOW_BACKEND_JWT_LEEWAY_SECONDS`).
    pub leeway_seconds: u64,
    /// An identity provider's key set (`WORKFLOW_BACKEND_JWT_JWKS_URL`).
    pub jwks_url: Option<String>,
    /// An OpenID issuer whose discovery document names the key set, and the `iss` its tokens
    /// carry unless `issuer` says otherwise (`WORKFLOW_BACKEND_OIDC_ISSUER`).
    pub oidc_issuer: Option<String>,
    /// Dotted path of the claim holding scopes or roles (`WORKFLOW_BACKEND_JWT_SCOPE_CLAIM`).
    pub scope_claim: String,
    /// JSON: provider role or group -> scopes (`WORKFLOW_BACKEND_JWT_SCOPE_MAP_FILE`).
    pub scope_map_file: Option<PathBuf>,
}

impl Default for JwtSettings {
    fn default() -> Self {
        JwtSettings {
            secret: None,
            public_key_file: None,
            issuer: None,
            audience: None,
            leeway_seconds: DEFAULT_JWT_LEEWAY_SECONDS,
            jwks_url: None,
            oidc_issuer: None,
            scope_claim: DEFAULT_SCOPE_CLAIM.into(),
            scope_map_file: None,
        }
    }
}

impl fmt::Debug for JwtSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtSettings")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("public_key_file", &self.public_key_file)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway_seconds", &self.leeway_seconds)
            .field("jwks_url", &self.jwks_url)
            .field("oidc_issuer", &self.oidc_issuer)
            .field("scope_claim", &self.scope_claim)
            .field("scope_map_file", &self.scope_map_file)
            .finish()
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// The database URL with one host: the first of a multi-host URL, without
    /// `target_session_attrs` (everything that reads the URL sees an ordinary one).
    pub database_url: String,
    /// The hosts of a multi-host URL in order (or one host with `target_session_attrs=read-write`):
    /// the pool follows whichever takes writes (see `store::primary`). `None`: one host, used as is.
    pub database_failover: Option<DatabaseHosts>,
    /// Socket address to listen on (validated; port 0 picks a free port).
    pub bind: String,
    /// Public base URL without a trailing slash, used to build callback URLs.
    pub public_url: String,
    pub connector_proxy_url: Option<String>,
    pub connector_proxy_api_key: Option<String>,
    pub process_models_dir: Option<PathBuf>,
    pub jwt: JwtSettings,
    pub max_body_bytes: usize,
    pub log_format: LogFormat,
    pub callback_token_ttl_seconds: u64,
    pub connector_connect_timeout_ms: u64,
    pub connector_timeout_ms: u64,
    /// Connections in the database pool (`DATABASE_POOL_SIZE`).
    pub database_pool_size: u32,
    /// The database is a Citus cluster's coordinator (`CITUS`): checked at start, and the
    /// model tables made reference tables there (ADR 0014).
    pub citus: bool,
    /// A request body must have arrived this long after its headers (`BODY_READ_TIMEOUT_MS`).
    pub body_read_timeout_ms: u64,
    /// Start the background workers with the server (always, outside tests: tests that drive
    /// the workers' one-shot functions turn them off).
    pub run_workers: bool,
    /// How long a replica reuses the overview's aggregates (`GET /v1.0/stats/...`) before it
    /// computes them again: every open console polls them (`STATS_CACHE_MS`, 0: never).
    pub stats_cache_ms: u64,
    /// How scripts run (`PYTHON`, `PYTHON_PACKAGES`, `SCRIPT_*`).
    pub scripts: ScriptSettings,
    /// Where spans go (OpenTelemetry's standard `OTEL_*` variables); `None`: no traces.
    pub traces: Option<TraceSettings>,
}

/// OTLP export of traces, from OpenTelemetry's standard variables (not ours, so that a
/// deployment's existing settings apply): the endpoint, the service name. The exporter and the
/// SDK read the others themselves (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
/// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_RESOURCE_ATTRIBUTES`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSettings {
    /// The URL spans are posted to (`.../v1/traces`).
    pub endpoint: String,
    pub service_name: String,
}

/// The OpenTelemetry variables this service reads itself, for `--help`.
pub const OTEL_VARIABLES: &[(&str, &str)] = &[
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "none (no traces)"),
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "<ENDPOINT>/v1/traces"),
    (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "http/protobuf (the only one)",
    ),
    ("OTEL_SERVICE_NAME", "workflow-backend"),
    ("OTEL_TRACES_EXPORTER", "otlp (none: no traces)"),
    ("OTEL_SDK_DISABLED", "false"),
];

/// Traces are on when an OTLP endpoint is given and neither `OTEL_SDK_DISABLED=true` nor
/// `OTEL_TRACES_EXPORTER=none` turns them off. The traces endpoint is used as given; the
/// general one gets `/v1/traces` appended (the OTLP exporter rule). Only OTLP over HTTP with
/// protobuf is built in: another protocol is refused at start rather than exporting nothing.
fn trace_settings(otel: &HashMap<String, String>) -> Result<Option<TraceSettings>, ConfigError> {
    let var = |name: &str| otel.get(name).map(String::as_str);
    let invalid = |name: &str, problem: String| ConfigError::Invalid {
        var: name.into(),
        problem,
    };
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    match var("OTEL_TRACES_EXPORTER") {
        None | Some("otlp") => {}
        Some("none") => return Ok(None),
        Some(other) => {
            return Err(invalid(
                "OTEL_TRACES_EXPORTER",
                format!("unsupported exporter {other:?} (expected \"otlp\" or \"none\")"),
            ))
        }
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = var(name).filter(|p| *p != "http/protobuf") {
            return Err(invalid(
                name,
                format!("unsupported protocol {protocol:?} (only \"http/protobuf\" is built in)"),
            ));
        }
    }
    let endpoint = match (
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        var("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(traces), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.to_string()),
        (None, Some(base)) => (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("{}/v1/traces", base.trim_end_matches('/')),
        ),
        (None, None) => return Ok(None),
    };
    match Url::parse(&endpoint.1) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
        _ => {
            return Err(invalid(
                endpoint.0,
                format!(
                    "invalid URL {:?} (expected http:// or https:// with a host)",
                    endpoint.1
                ),
            ))
        }
    }
    Ok(Some(TraceSettings {
        endpoint: endpoint.1,
        service_name: var("OTEL_SERVICE_NAME")
            .unwrap_or("workflow-backend")
            .to_string(),
    }))
}

/// The script worker pool: interpreter, packages and limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptSettings {
    pub python: String,
    pub packages: String,
    /// Worker processes (`SCRIPT_WORKERS`, default: the number of cores).
    pub workers: usize,
    pub time_limit_ms: u64,
    pub memory_limit_mb: u64,
    /// How long a step waits for a free worker before the request gets 503.
    pub queue_timeout_ms: u64,
    /// Landlock and seccomp around each worker (`SCRIPT_OS_WALL`: `required` or `off`).
    pub os_wall: crate::python::OsWallMode,
    /// The most task data (compact JSON bytes) a script or expression may leave
    /// (`MAX_TASK_DATA_BYTES`): beyond it the instance errs with `script_data_limit`.
    pub max_task_data_bytes: usize,
    /// What `get_env()` answers in scripts (`ENV_IDENTIFIER`).
    pub env_identifier: String,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("database_url", &redact_url(&self.database_url))
            .field("database_failover", &self.database_failover)
            .field("bind", &self.bind)
            .field("public_url", &self.public_url)
            .field("connector_proxy_url", &self.connector_proxy_url)
            .field(
                "connector_proxy_api_key",
                &self.connector_proxy_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("process_models_dir", &self.process_models_dir)
            .field("jwt", &self.jwt)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("database_pool_size", &self.database_pool_size)
            .field("citus", &self.citus)
            .field("log_format", &self.log_format)
            .field(
                "callback_token_ttl_seconds",
                &self.callback_token_ttl_seconds,
            )
            .field(
                "connector_connect_timeout_ms",
                &self.connector_connect_timeout_ms,
            )
            .field("connector_timeout_ms", &self.connector_timeout_ms)
            .field("body_read_timeout_ms", &self.body_read_timeout_ms)
            .field("stats_cache_ms", &self.stats_cache_ms)
            .field("scripts", &self.scripts)
            .field("traces", &self.traces)
            .finish()
    }
}

/// The URL with its password replaced, for logs.
pub fn redact_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("redacted"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "<unparsable>".to_string(),
    }
}

impl Settings {
    /// Reads the process environment (after loading `.env`, if present).
    pub fn from_env() -> Result<Settings, ConfigError> {
        // A missing .env is normal; a malformed one is reported.
        match dotenvy::dotenv() {
            Ok(_) => {}
            Err(e) if e.not_found() => {}
            Err(e) => {
                return Err(ConfigError::Invalid {
                    var: ".env".into(),
                    problem: e.to_string(),
                })
            }
        }
        Settings::from_vars(std::env::vars())
    }

    /// Builds settings from the given variables only. Variables without the
    /// `WORKFLOW_BACKEND_` prefix are ignored; empty values count as unset.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, ConfigError> {
        // ours without the prefix; OpenTelemetry's standard variables as they are
        let (mut ours, mut otel) = (HashMap::new(), HashMap::new());
        for (name, value) in vars {
            let value = value.trim().to_string();
            if value.is_empty() {
                continue;
            }
            if let Some(short) = name.strip_prefix(PREFIX) {
                ours.insert(short.to_string(), value);
            } else if name.starts_with("OTEL_") {
                otel.insert(name, value);
            }
        }
        let vars: HashMap<String, String> = ours;
        let get = |name: &str| vars.get(name).cloned();

        let given_url = get("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        let (database_url, database_failover) = split_database_hosts(&given_url)?;
        validate_database_url(&database_url)?;

        let bind = get("BIND").unwrap_or_else(|| DEFAULT_BIND.into());
        if bind.parse::<SocketAddr>().is_err() {
            return Err(ConfigError::invalid(
                "BIND",
                format!(
                    "invalid socket address {bind:?} (expected host:port, e.g. 127.0.0.1:7000)"
                ),
            ));
        }

        let public_url = match get("URL") {
            Some(url) => http_url("URL", &url)?,
            None => format!("http://{bind}"),
        };

        let connector_proxy_url = get("CONNECTOR_PROXY_URL")
            .map(|url| http_url("CONNECTOR_PROXY_URL", &url))
            .transpose()?;

        let jwt = JwtSettings {
            secret: get("JWT_SECRET"),
            public_key_file: get("JWT_PUBLIC_KEY_FILE").map(PathBuf::from),
            issuer: get("JWT_ISSUER"),
            audience: get("JWT_AUDIENCE"),
            leeway_seconds: at_most(
                "JWT_LEEWAY_SECONDS",
                get("JWT_LEEWAY_SECONDS"),
                DEFAULT_JWT_LEEWAY_SECONDS,
                MAX_JWT_LEEWAY_SECONDS,
            )?,
            jwks_url: get("JWT_JWKS_URL")
                .map(|url| http_url("JWT_JWKS_URL", &url))
                .transpose()?,
            // kept exactly as given: it is compared with `iss` (Auth0's ends with a slash)
            oidc_issuer: get("OIDC_ISSUER")
                .map(|url| http_url("OIDC_ISSUER", &url).map(|_| url))
                .transpose()?,
            scope_claim: scope_claim(get("JWT_SCOPE_CLAIM"))?,
            scope_map_file: get("JWT_SCOPE_MAP_FILE").map(PathBuf::from),
        };

        let max_body_bytes = positive(
            "MAX_BODY_BYTES",
            get("MAX_BODY_BYTES"),
            DEFAULT_MAX_BODY_BYTES as u64,
        )?;
        let max_body_bytes = usize::try_from(max_body_bytes)
            .map_err(|_| ConfigError::invalid("MAX_BODY_BYTES", "too large"))?;

        let log_format = match get("LOG_FORMAT").as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "LOG_FORMAT",
                    format!("invalid value {other:?} (expected \"text\" or \"json\")"),
                ))
            }
        };

        let citus = match get("CITUS").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "CITUS",
                    format!("invalid value {other:?} (expected \"true\" or \"false\")"),
                ))
            }
        };

        Ok(Settings {
            database_url,
            database_failover,
            citus,
            bind,
            public_url,
            connector_proxy_url,
            connector_proxy_api_key: get("CONNECTOR_PROXY_API_KEY"),
            process_models_dir: get("PROCESS_MODELS_DIR").map(PathBuf::from),
            jwt,
            max_body_bytes,
            log_format,
            callback_token_ttl_seconds: positive(
                "CALLBACK_TOKEN_TTL_SECONDS",
                get("CALLBACK_TOKEN_TTL_SECONDS"),
                DEFAULT_CALLBACK_TOKEN_TTL_SECONDS,
            )?,
            connector_connect_timeout_ms: positive(
                "CONNECTOR_CONNECT_TIMEOUT_MS",
                get("CONNECTOR_CONNECT_TIMEOUT_MS"),
                DEFAULT_CONNECTOR_CONNECT_TIMEOUT_MS,
            )?,
            database_pool_size: u32::try_from(positive(
                "DATABASE_POOL_SIZE",
                get("DATABASE_POOL_SIZE"),
                DEFAULT_DATABASE_POOL_SIZE,
            )?)
            .map_err(|_| ConfigError::invalid("DATABASE_POOL_SIZE", "too large"))?,
            connector_timeout_ms: positive(
                "CONNECTOR_TIMEOUT_MS",
                get("CONNECTOR_TIMEOUT_MS"),
                DEFAULT_CONNECTOR_TIMEOUT_MS,
            )?,
            body_read_timeout_ms: positive(
                "BODY_READ_TIMEOUT_MS",
                get("BODY_READ_TIMEOUT_MS"),
                DEFAULT_BODY_READ_TIMEOUT_MS,
            )?,
            run_workers: true,
            stats_cache_ms: at_most(
                "STATS_CACHE_MS",
                get("STATS_CACHE_MS"),
                DEFAULT_STATS_CACHE_MS,
                MAX_STATS_CACHE_MS,
            )?,
            traces: trace_settings(&otel)?,
            scripts: ScriptSettings {
                python: get("PYTHON").unwrap_or_else(|| "python3".into()),
                packages: get("PYTHON_PACKAGES").unwrap_or_else(crate::python::default_packages),
                workers: usize::try_from(positive(
                    "SCRIPT_WORKERS",
                    get("SCRIPT_WORKERS"),
                    std::thread::available_parallelism().map_or(2, |n| n.get()) as u64,
                )?)
                .map_err(|_| ConfigError::invalid("SCRIPT_WORKERS", "too large"))?,
                time_limit_ms: positive(
                    "SCRIPT_TIME_LIMIT_MS",
                    get("SCRIPT_TIME_LIMIT_MS"),
                    DEFAULT_SCRIPT_TIME_LIMIT_MS,
                )?,
                memory_limit_mb: positive(
                    "SCRIPT_MEMORY_LIMIT_MB",
                    get("SCRIPT_MEMORY_LIMIT_MB"),
                    DEFAULT_SCRIPT_MEMORY_LIMIT_MB,
                )?,
                queue_timeout_ms: positive(
                    "SCRIPT_QUEUE_TIMEOUT_MS",
                    get("SCRIPT_QUEUE_TIMEOUT_MS"),
                    DEFAULT_SCRIPT_QUEUE_TIMEOUT_MS,
                )?,
                os_wall: match get("SCRIPT_OS_WALL") {
                    None => crate::python::OsWallMode::Required,
                    Some(value) => crate::python::OsWallMode::parse(&value).ok_or_else(|| {
                        ConfigError::invalid(
                            "SCRIPT_OS_WALL",
                            format!("one of {}", crate::python::OsWallMode::SETTING_VALUES),
                        )
                    })?,
                },
                max_task_data_bytes: usize::try_from(positive(
                    "MAX_TASK_DATA_BYTES",
                    get("MAX_TASK_DATA_BYTES"),
                    DEFAULT_MAX_TASK_DATA_BYTES,
                )?)
                .map_err(|_| ConfigError::invalid("MAX_TASK_DATA_BYTES", "too large"))?,
                env_identifier: get("ENV_IDENTIFIER").unwrap_or_else(|| "local".into()),
            },
        })
    }

    /// `database_url` with its database name replaced by `name` (test databases, the
    /// `postgres` maintenance database).
    pub fn with_database_name(&self, name: &str) -> String {
        let mut url = Url::parse(&self.database_url).expect("database_url is validated");
        url.set_path(&format!("/{name}"));
        url.to_string()
    }

    /// The database name in `database_url`.
    pub fn database_name(&self) -> String {
        database_name(&self.database_url).expect("database_url is validated")
    }
}

fn database_name(url: &str) -> Option<String> {
    let url = Url::parse(url).ok()?;
    let name = url.path().trim_start_matches('/');
    (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
}

/// The hosts of a database URL that names several (libpq's form, as pg_auto_failover prints
/// it: `postgres://u@h1:p1,h2:p2/db?target_session_attrs=read-write`), in the order they are
/// tried; the service needs the one that takes writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseHosts {
    pub hosts: Vec<(String, u16)>,
}

const DEFAULT_DATABASE_PORT: u16 = 5432;

/// Splits a database URL at its host list: the URL with its first host only (and without
/// `target_session_attrs`), and the hosts when there are several or when writes were asked
/// for. `target_session_attrs` may be `any`, `read-write` or `primary`; with several hosts the
/// service always looks for the writable one (it writes on every request).
fn split_database_hosts(url: &str) -> Result<(String, Option<DatabaseHosts>), ConfigError> {
    let invalid = |problem: String| ConfigError::invalid("DATABASE_URL", problem);
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok((url.to_string(), None)); // reported by validate_database_url
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (userinfo, host_list) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let hosts = host_list
        .split(',')
        .map(|host| {
            parse_host_port(host).ok_or_else(|| {
                invalid(format!(
                    "invalid host {host:?} in the host list (expected host:port)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let mut read_write = false;
    let mut kept = Vec::new();
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        match pair.split_once('=') {
            Some(("target_session_attrs", "any")) => {}
            Some(("target_session_attrs", "read-write" | "primary")) => read_write = true,
            Some(("target_session_attrs", other)) => {
                return Err(invalid(format!(
                    "target_session_attrs={other} is not supported (the service writes: use \
                     read-write, primary or any)"
                )))
            }
            _ => kept.push(pair),
        }
    }
    let (first_host, first_port) = &hosts[0];
    let host = if first_host.contains(':') {
        format!("[{first_host}]")
    } else {
        first_host.clone()
    };
    let mut single = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        single.push_str(userinfo);
        single.push('@');
    }
    single.push_str(&format!("{host}:{first_port}{path}"));
    if !kept.is_empty() {
        single.push('?');
        single.push_str(&kept.join("&"));
    }
    let failover = (hosts.len() > 1 || read_write).then_some(DatabaseHosts { hosts });
    Ok((single, failover))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` (5432 when no port is given).
fn parse_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => DEFAULT_DATABASE_PORT,
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

fn validate_database_url(url: &str) -> Result<(), ConfigError> {
    let parsed = Url::parse(url).map_err(|e| {
        ConfigError::invalid(
            "DATABASE_URL",
            format!("not a URL ({e}); expected postgres://user@host:port/database"),
        )
    })?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(ConfigError::invalid(
            "DATABASE_URL",
            format!(
                "unsupported scheme {:?} (expected postgres://)",
                parsed.scheme()
            ),
        ));
    }
    if database_name(url).is_none() {
        return Err(ConfigError::invalid(
            "DATABASE_URL",
            "no database name in the path (expected postgres://user@host:port/database)",
        ));
    }
    Ok(())
}

/// An absolute http(s) URL, returned without a trailing slash.
fn http_url(name: &str, value: &str) -> Result<String, ConfigError> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(value.trim_end_matches('/').to_string())
        }
        _ => Err(ConfigError::invalid(
            name,
            format!("invalid URL {value:?} (expected http:// or https:// with a host)"),
        )),
    }
}

/// A dotted claim path: non-empty parts (`scope`, `realm_access.roles`).
fn scope_claim(value: Option<String>) -> Result<String, ConfigError> {
    let Some(value) = value else {
        return Ok(DEFAULT_SCOPE_CLAIM.into());
    };
    if value.split('.').any(|part| part.trim().is_empty()) {
        return Err(ConfigError::invalid(
            "JWT_SCOPE_CLAIM",
            format!("invalid claim path {value:?} (expected e.g. scope or realm_access.roles)"),
        ));
    }
    Ok(value)
}

/// Measured best on 2 cores: more backends than cores mostly add context switches.
const DEFAULT_DATABASE_POOL_SIZE: u64 = 10;

fn positive(name: &str, value: Option<String>, default: u64) -> Result<u64, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ConfigError::invalid(
            name,
            format!("invalid value {value:?} (expected a positive integer)"),
        )),
    }
}

/// An integer from 0 to `max`.
fn at_most(name: &str, value: Option<String>, default: u64, max: u64) -> Result<u64, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    match value.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(ConfigError::invalid(
            name,
            format!("invalid value {value:?} (expected an integer from 0 to {max})"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string()))
            .collect()
    }

    fn traces(pairs: &[(&str, &str)]) -> Result<Option<TraceSettings>, ConfigError> {
        let vars = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Settings::from_vars(vars).map(|s| s.traces)
    }

    #[test]
    fn traces_follow_the_standard_otel_variables() {
        assert_eq!(traces(&[]), Ok(None));
        let on = traces(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(on.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(on.service_name, "workflow-backend");
        let own = traces(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://t.example/otlp/spans",
            ),
            ("OTEL_SERVICE_NAME", "orders-engine"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(own.endpoint, "https://t.example/otlp/spans");
        assert_eq!(own.service_name, "orders-engine");
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            let given = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), off];
            assert_eq!(traces(&given), Ok(None), "{off:?}");
        }
    }

    #[test]
    fn trace_settings_that_would_export_nothing_are_refused() {
        for (given, var) in [
            (
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            ),
            (("OTEL_TRACES_EXPORTER", "zipkin"), "OTEL_TRACES_EXPORTER"),
            (
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318"),
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            ),
        ] {
            let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), given];
            match traces(&vars) {
                Err(ConfigError::Invalid { var: named, .. }) => assert_eq!(named, var),
                other => panic!("{given:?}: {other:?}"),
            }
        }
    }

    fn database(url: &str) -> Result<(String, Option<DatabaseHosts>), ConfigError> {
        Settings::from_vars(vars(&[("DATABASE_URL", url)]))
            .map(|s| (s.database_url, s.database_failover))
    }

    #[test]
    fn a_multi_host_database_url_is_split_into_its_hosts() {
        let (url, failover) = database(
            "postgres://u:p@10.0.0.1:6001,db2.example:6002,[::1]/orders?target_session_attrs=read-write&sslmode=prefer",
        )
        .unwrap();
        assert_eq!(url, "postgres://u:p@10.0.0.1:6001/orders?sslmode=prefer");
        let hosts = failover.unwrap().hosts;
        let expected = [("10.0.0.1", 6001), ("db2.example", 6002), ("::1", 5432)];
        let expected: Vec<(String, u16)> =
            expected.iter().map(|(h, p)| (h.to_string(), *p)).collect();
        assert_eq!(hosts, expected);
        // one host asking for writes is watched too; one host alone is used as is
        let (url, failover) =
            database("postgres://h:5433/db?target_session_attrs=primary").unwrap();
        assert_eq!(url, "postgres://h:5433/db");
        assert!(failover.is_some());
        let (url, failover) = database("postgres://postgres@127.0.0.1:5432/wf").unwrap();
        assert_eq!(
            (url.as_str(), failover),
            ("postgres://postgres@127.0.0.1:5432/wf", None)
        );
    }

    #[test]
    fn database_urls_the_service_cannot_write_through_are_refused() {
        for url in [
            "postgres://h1:1,h2:2/db?target_session_attrs=read-only",
            "postgres://h1:1,h2:2/db?target_session_attrs=standby",
            "postgres://h1:1,:2/db",
            "postgres://h1:1,h2:port/db",
        ] {
            match database(url) {
                Err(ConfigError::Invalid { var, .. }) => {
                    assert_eq!(var, "WORKFLOW_BACKEND_DATABASE_URL", "{url}")
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn defaults_work_on_this_machine() {
        let s = Settings::from_vars(Vec::new()).unwrap();
        assert_eq!(s.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(s.bind, "127.0.0.1:7000");
        assert_eq!(s.public_url, "http://127.0.0.1:7000");
        assert_eq!(s.max_body_bytes, 1024 * 1024);
        assert_eq!(s.database_pool_size, 10);
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!(s.callback_token_ttl_seconds, 86_400);
        assert_eq!(s.connector_connect_timeout_ms, 5_000);
        assert_eq!(s.connector_timeout_ms, 45_000);
        assert_eq!(s.jwt, JwtSettings::default());
    }

    #[test]
    fn reads_every_variable() {
        let s = Settings::from_vars(vars(&[
            ("DATABASE_URL", "postgres://u:p@db:5433/wf"),
            ("BIND", "0.0.0.0:8080"),
            ("URL", "https://wf.example.com/"),
            ("CONNECTOR_PROXY_URL", "http://proxy:7004"),
            ("CONNECTOR_PROXY_API_KEY", "k"),
            ("PROCESS_MODELS_DIR", "/models"),
            ("JWT_SECRET", "s"),
            ("JWT_PUBLIC_KEY_FILE", "/key.pem"),
            ("JWT_ISSUER", "iss"),
            ("JWT_AUDIENCE", "aud"),
            ("MAX_BODY_BYTES", "10"),
            ("LOG_FORMAT", "json"),
            ("CALLBACK_TOKEN_TTL_SECONDS", "60"),
            ("CONNECTOR_CONNECT_TIMEOUT_MS", "1"),
            ("CONNECTOR_TIMEOUT_MS", "2"),
            ("DATABASE_POOL_SIZE", "3"),
        ]))
        .unwrap();
        assert_eq!(s.bind, "0.0.0.0:8080");
        assert_eq!(s.public_url, "https://wf.example.com");
        assert_eq!(s.connector_proxy_url.as_deref(), Some("http://proxy:7004"));
        assert_eq!(s.connector_proxy_api_key.as_deref(), Some("k"));
        assert_eq!(s.process_models_dir, Some(PathBuf::from("/models")));
        assert_eq!(s.jwt.secret.as_deref(), Some("s"));
        assert_eq!(s.jwt.public_key_file, Some(PathBuf::from("/key.pem")));
        assert_eq!(s.jwt.issuer.as_deref(), Some("iss"));
        assert_eq!(s.jwt.audience.as_deref(), Some("aud"));
        assert_eq!(s.max_body_bytes, 10);
        assert_eq!(s.log_format, LogFormat::Json);
        assert_eq!(s.callback_token_ttl_seconds, 60);
        assert_eq!(s.connector_connect_timeout_ms, 1);
        assert_eq!(s.connector_timeout_ms, 2);
        assert_eq!(s.database_pool_size, 3);
        assert_eq!(s.database_name(), "wf");
    }

    #[test]
    fn empty_values_count_as_unset_and_other_prefixes_are_ignored() {
        let mut v = vars(&[("BIND", ""), ("JWT_SECRET", "  ")]);
        v.push(("BIND".into(), "nonsense".into()));
        let s = Settings::from_vars(v).unwrap();
        assert_eq!(s.bind, DEFAULT_BIND);
        assert_eq!(s.jwt.secret, None);
    }

    #[test]
    fn errors_are_one_line_naming_the_variable() {
        let cases = [
            (
                "BIND",
                "x",
                "WORKFLOW_BACKEND_BIND: invalid socket address \"x\"",
            ),
            (
                "DATABASE_URL",
                "mysql://h/db",
                "WORKFLOW_BACKEND_DATABASE_URL: unsupported scheme",
            ),
            (
                "DATABASE_URL",
                "postgres://h",
                "WORKFLOW_BACKEND_DATABASE_URL: no database name",
            ),
            (
                "DATABASE_URL",
                "nope",
                "WORKFLOW_BACKEND_DATABASE_URL: not a URL",
            ),
            ("URL", "ftp://x", "WORKFLOW_BACKEND_URL: invalid URL"),
            (
                "CONNECTOR_PROXY_URL",
                "proxy",
                "WORKFLOW_BACKEND_CONNECTOR_PROXY_URL: invalid URL",
            ),
            (
                "MAX_BODY_BYTES",
                "0",
                "WORKFLOW_BACKEND_MAX_BODY_BYTES: invalid value \"0\"",
            ),
            (
                "MAX_BODY_BYTES",
                "1k",
                "WORKFLOW_BACKEND_MAX_BODY_BYTES: invalid value \"1k\"",
            ),
            (
                "LOG_FORMAT",
                "xml",
                "WORKFLOW_BACKEND_LOG_FORMAT: invalid value \"xml\"",
            ),
            (
                "CALLBACK_TOKEN_TTL_SECONDS",
                "-1",
                "WORKFLOW_BACKEND_CALLBACK_TOKEN_TTL_SECONDS: invalid value",
            ),
            (
                "CONNECTOR_TIMEOUT_MS",
                "fast",
                "WORKFLOW_BACKEND_CONNECTOR_TIMEOUT_MS: invalid value",
            ),
        ];
        for (name, value, expected) in cases {
            let err = Settings::from_vars(vars(&[(name, value)]))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(expected), "{name}={value}: got {err:?}");
            assert!(!err.contains('\n'), "{err:?} is not one line");
        }
    }

    #[test]
    fn database_name_is_replaced_in_the_url() {
        let s = Settings::from_vars(vars(&[(
            "DATABASE_URL",
            "postgres://u:p@h:5432/wf?sslmode=disable",
        )]))
        .unwrap();
        assert_eq!(
            s.with_database_name("other"),
            "postgres://u:p@h:5432/other?sslmode=disable"
        );
        assert_eq!(
            s.with_database_name("postgres"),
            "postgres://u:p@h:5432/postgres?sslmode=disable"
        );
    }

    #[test]
    fn debug_output_redacts_secrets() {
        let s = Settings::from_vars(vars(&[
            ("DATABASE_URL", "postgres://u:hunter2@h/wf"),
            ("JWT_SECRET", "topsecret"),
            ("CONNECTOR_PROXY_API_KEY", "apikey123"),
        ]))
        .unwrap();
        let debug = format!("{s:?}");
        for secret in ["hunter2", "topsecret", "apikey123"] {
            assert!(!debug.contains(secret), "{secret} leaked in {debug}");
        }
        assert!(debug.contains("<redacted>"));
    }

    /// `--help` lists every variable `from_vars` reads, and nothing else.
    #[test]
    fn the_help_lists_every_variable_the_settings_read() {
        let source = include_str!("config.rs");
        let body = &source[source.find("pub fn from_vars").unwrap()..];
        let body = &body[..body.find("\n    }\n").unwrap()];
        let mut read: Vec<&str> = body
            .split("get(\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        read.sort();
        read.dedup();
        let mut listed: Vec<&str> = VARIABLES.iter().map(|(name, _)| *name).collect();
        listed.sort();
        assert_eq!(read, listed);
    }
}
