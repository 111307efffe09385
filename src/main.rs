use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use workflow_backend::api::openapi_document;
use workflow_backend::config::{ConfigError, Settings};
use workflow_backend::services::{api_keys, secrets};
use workflow_backend::startup::{self, Application};
use workflow_backend::telemetry;
use workflow_backend::tokens::JwtKeys;

/// workflow-backend: the engine side of a BPMN workflow system. Configuration comes from
/// WORKFLOW_BACKEND_* environment variables (and a .env file, if present); see
/// docs/configuration.md.
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
    /// Manage the secrets scripts read with get_secret(name), in the configured database (created
    /// and migrated first, as `migrate` does). No command prints a value.
    Secret {
        #[command(subcommand)]
        command: SecretCommand,
    },
    /// Manage API keys for machine clients, in the configured database (created and migrated
    /// first). `create` prints the new key once; only its hash is stored
    ApiKey {
        #[command(subcommand)]
        command: ApiKeyCommand,
    },
}

#[derive(Subcommand)]
enum ApiKeyCommand {
    /// Create a key and print it (once)
    Create {
        /// A name to list and revoke it by (letters, digits, `_`, `.`, `-`)
        #[arg(long)]
        name: String,
        /// Space-separated scopes, as a token's (e.g. "messages:send instances:read:*")
        #[arg(long)]
        scope: String,
        /// Days until it stops working (default: never)
        #[arg(long)]
        expires_in: Option<u32>,
    },
    /// List keys (name, prefix, scopes, created, expires, last used, revoked)
    List,
    /// Revoke the active key of this name, at once, on every replica
    Revoke {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum SecretCommand {
    /// Create or replace a secret. The value is read from stdin (one trailing newline is
    /// dropped), never from the command line: `printf %s "$VALUE" | workflow-backend secret set NAME`.
    Set {
        /// A letter or `_`, then letters, digits, `_`, `.` and `-` (at most 128).
        name: String,
    },
    /// Print each secret's name and when it was last set (tab-separated), never its value.
    List,
    /// Delete a secret.
    Delete { name: String },
}

fn main() -> ExitCode {
    let cli = parse_cli();
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
        Command::Secret { command } => {
            // the name and the value are refused before the database is touched
            let value = match &command {
                SecretCommand::Set { name } => {
                    secrets::check_name(name)?;
                    read_secret_value()?
                }
                SecretCommand::Delete { name } => {
                    secrets::check_name(name)?;
                    String::new()
                }
                SecretCommand::List => String::new(),
            };
            let settings = Settings::from_env()?;
            telemetry::init(settings.log_format)?;
            runtime()?.block_on(async {
                let pool = startup::prepare_database(&settings).await?;
                match command {
                    SecretCommand::Set { name } => {
                        let (created, _) = secrets::set(&pool, &name, &value).await?;
                        let done = if created { "created" } else { "replaced" };
                        println!("secret {name} {done}");
                    }
                    SecretCommand::List => {
                        for secret in secrets::list_all(&pool).await? {
                            println!("{}\t{}", secret.name, secret.updated_at.to_rfc3339());
                        }
                    }
                    SecretCommand::Delete { name } => {
                        secrets::delete(&pool, &name).await?;
                        println!("secret {name} deleted");
                    }
                }
                pool.close().await;
                Ok(())
            })
        }
        Command::ApiKey { command } => {
            match &command {
                ApiKeyCommand::Create {
                    name,
                    scope,
                    expires_in,
                } => {
                    api_keys::check_name(name)?;
                    api_keys::parse_scopes(scope)?;
                    api_keys::check_expiry(*expires_in)?;
                }
                ApiKeyCommand::Revoke { name } => api_keys::check_name(name)?,
                ApiKeyCommand::List => {}
            }
            let settings = Settings::from_env()?;
            telemetry::init(settings.log_format)?;
            runtime()?.block_on(async {
                let pool = startup::prepare_database(&settings).await?;
                match command {
                    ApiKeyCommand::Create {
                        name,
                        scope,
                        expires_in,
                    } => {
                        let scopes = api_keys::parse_scopes(&scope)?;
                        let created =
                            api_keys::create(&pool, &name, &scopes, expires_in, Some("cli"))
                                .await?;
                        eprintln!(
                            "API key {name} created; it is shown this once. Send it as \
                             `Authorization: Bearer <key>` or `SpiffWorkflow-Api-Key: <key>`."
                        );
                        println!("{}", created.token);
                    }
                    ApiKeyCommand::List => {
                        let when = |t: Option<chrono::DateTime<chrono::Utc>>| {
                            t.map(|t| t.to_rfc3339()).unwrap_or_else(|| "-".into())
                        };
                        for key in api_keys::list(&pool).await? {
                            println!(
                                "{}\t{}\t{}\tcreated {}\texpires {}\tlast used {}\trevoked {}",
                                key.name,
                                key.prefix,
                                key.scopes.join(" "),
                                key.created_at.to_rfc3339(),
                                when(key.expires_at),
                                when(key.last_used_at),
                                when(key.revoked_at),
                            );
                        }
                    }
                    ApiKeyCommand::Revoke { name } => {
                        api_keys::revoke(&pool, &name).await?;
                        println!("API key {name} revoked");
                    }
                }
                pool.close().await;
                Ok(())
            })
        }
        Command::Serve => {
            let settings = Settings::from_env()?;
            telemetry::init(settings.log_format)?;
            // each setting a field of its own (JSON logs index them); secrets redacted
            tracing::info!(
                database_url = %workflow_backend::config::redact_url(&settings.database_url),
                bind = %settings.bind,
                public_url = %settings.public_url,
                connector_proxy_url = settings.connector_proxy_url.as_deref().unwrap_or(""),
                process_models_dir = ?settings.process_models_dir,
                database_pool_size = settings.database_pool_size,
                citus = settings.citus,
                max_body_bytes = settings.max_body_bytes,
                jwt_secret = settings.jwt.secret.is_some(),
                jwt_public_key_file = ?settings.jwt.public_key_file,
                jwt_issuer = settings.jwt.issuer.as_deref().unwrap_or(""),
                jwt_audience = settings.jwt.audience.as_deref().unwrap_or(""),
                jwt_jwks_url = settings.jwt.jwks_url.as_deref().unwrap_or(""),
                oidc_issuer = settings.jwt.oidc_issuer.as_deref().unwrap_or(""),
                jwt_scope_claim = %settings.jwt.scope_claim,
                script_workers = settings.scripts.workers,
                script_time_limit_ms = settings.scripts.time_limit_ms,
                "starting"
            );
            let host = settings
                .bind
                .rsplit_once(':')
                .map(|(host, _)| host.to_string())
                .unwrap_or_else(|| "127.0.0.1".into());
            runtime()?.block_on(async {
                let app = Application::build(settings).await?;
                let url = format!("http://{host}:{}", app.port());
                tracing::info!(url = %url, ui = %format!("{url}/v1.0/ui/"), "listening");
                app.run_until_stopped().await
            })
        }
    }
}

/// The command line, with every command's `--help` listing the environment variables it
/// reads (all but `openapi` read every setting: an invalid one stops them).
fn parse_cli() -> Cli {
    let environment = workflow_backend::config::variables_help();
    let mut command = Cli::command().after_help(environment.clone());
    for name in ["serve", "migrate", "token", "secret", "api-key"] {
        command = command.mut_subcommand(name, |sub| sub.after_help(environment.clone()));
    }
    command = command.mut_subcommand("openapi", |sub| {
        sub.after_help("Reads no environment variable.")
    });
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// A secret's value from stdin: UTF-8, without one trailing newline (`\n` or `\r\n`), checked
/// as the API checks it. At most one byte past the limit is read.
fn read_secret_value() -> anyhow::Result<String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("Reading the value from stdin; end it with Ctrl-D (it is echoed as you type).");
    }
    // the limit, a trailing "\r\n", and one byte more to tell a value that is too long
    let limit = secrets::MAX_VALUE_BYTES as u64 + 3;
    let mut bytes = Vec::new();
    stdin
        .by_ref()
        .take(limit)
        .read_to_end(&mut bytes)
        .context("reading the value from stdin")?;
    if bytes.ends_with(b"\n") {
        bytes.pop();
        if bytes.ends_with(b"\r") {
            bytes.pop();
        }
    }
    let value = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("the value on stdin is not UTF-8 text"))?;
    secrets::check_value(&value)?;
    Ok(value)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
