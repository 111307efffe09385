//! Logging: a `tracing` subscriber writing to stderr, as text or JSON lines, filtered by `RUST_LOG`.
//! Stdout stays free for command output (`openapi`, `token`). Traces: [`traces`].

pub mod traces;

use tracing_subscriber::EnvFilter;

use crate::config::{ConfigError, LogFormat};

// actix_web_prom warns on every request to a route with a regex segment (the UI's `{_:.*}`)
// that it cannot substitute the parameter; it then uses the pattern itself, which is fine.
const DEFAULT_FILTER: &str = "info,sqlx=warn,actix_web_prom=error";

/// The filter from `RUST_LOG`, or the default when it is unset or empty.
pub fn env_filter() -> Result<EnvFilter, ConfigError> {
    match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => {
            EnvFilter::try_new(&value).map_err(|e| ConfigError::Invalid {
                var: "RUST_LOG".into(),
                problem: format!("invalid filter {value:?} ({e})"),
            })
        }
        _ => Ok(EnvFilter::new(DEFAULT_FILTER)),
    }
}

/// Installs the global subscriber. Call once, at the start of `main`.
pub fn init(format: LogFormat) -> Result<(), ConfigError> {
    use std::io::IsTerminal;
    // colours only for a person at a terminal, not in files or log collectors
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter()?)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
    Ok(())
}
