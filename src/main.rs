use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

use workflow_backend::api::openapi_document;
use workflow_backend::config::{ConfigError, Settings};
use workflow_backend::startup::{self, Application};
use workflow_backend::telemetry;
use workflow_backend::tokens::JwtKeys;

/// workflow-backend: the engine side of a BPMN workflow system. Configuration comes from
/// WORKFLOW_BACKEND_* environment variables (and a .env file, if present); see README.md.
#[derive(Parser)]
#[command(name = "workflow-backend", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server and the background workers (the default).
    Serve,
    /// Create the database if it is missing, apply the migrations, and exit.
    Migrate,
    /// Print the OpenAPI document (JSON) to stdout.
    Openapi,
    /// Print a JWT signed with WORKFLOW_BACKEND_JWT_SECRET (HS256), for development and tests.
    Token {
        /// The `sub` claim (who the caller is).
        #[arg(long)]
        sub: String,
        /// Space-separated scopes, e.g. "admin" or "messages:send instances:read:*".
        #[arg(long)]
        scope: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command.unwrap_or(Command::Serve)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Openapi => {
            print!("{}", openapi_document());
            Ok(())
        }
        Command::Token { sub, scope, ttl } => {
            let settings = Settings::from_env()?;
            if settings.jwt.secret.is_none() {
                return Err(ConfigError::invalid(
                    "JWT_SECRET",
                    "not set; the token command signs with this HS256 secret",
                )
                .into());
            }
            let keys = JwtKeys::from_settings(&settings.jwt)?;
            println!("{}", keys.mint(&sub, &scope, Duration::from_secs(ttl))?);
            Ok(())
        }
        Command::Migrate => {
            let settings = Settings::from_env()?;
            telemetry::init(settings.log_format)?;
            runtime()?.block_on(async {
                startup::prepare_database(&settings).await?;
                tracing::info!("migrations applied");
                Ok(())
            })
        }
        Command::Serve => {
            let settings = Settings::from_env()?;
            telemetry::init(settings.log_format)?;
            tracing::info!(settings = ?settings, "starting");
            runtime()?.block_on(async {
                let app = Application::build(settings).await?;
                tracing::info!(port = app.port(), "listening");
                app.run_until_stopped().await
            })
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
