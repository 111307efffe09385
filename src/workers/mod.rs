//! Background loops (connector dispatcher, which also runs retries when they come due,
//! buffered-message expiry, and the timer firer), one module each.
//!
//! Each worker repeats a public one-shot round
//! ([`connector_dispatcher::dispatch_due_once`], [`message_expiry::expire_due_once`],
//! [`timer_firer::fire_due_once`]) that
//! tests call directly, with the server's workers off, instead of waiting for the loop. Each
//! is a tokio task that stops when `shutdown` turns `true`, e.g.
//!
//! ```ignore
//! loop {
//!     tokio::select! {
//!         _ = shutdown.changed() => break,
//!         _ = tokio::time::sleep(interval) => do_one_round(&state).await,
//!     }
//! }
//! ```

pub mod connector_dispatcher;
pub mod message_expiry;
pub mod timer_firer;

use actix_web::web;
use sqlx::postgres::{PgListener, PgPoolOptions};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::startup::AppState;

/// Starts every worker. `run_until_stopped` sends `true` on shutdown and awaits the handles.
pub fn spawn_all(
    state: web::Data<AppState>,
    shutdown: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let mut workers = vec![
        tokio::spawn(message_expiry::run(
            state.pool.clone(),
            state.message_buffered.clone(),
            shutdown.clone(),
        )),
        tokio::spawn(timer_firer::run(state.clone(), shutdown.clone())),
    ];
    if let Some(jwks) = state.keys.jwks() {
        let mut stop = shutdown.clone();
        workers.push(tokio::spawn(async move {
            tokio::select! {
                _ = crate::tokens::jwks::run(jwks) => {}
                _ = stop.wait_for(|stopped| *stopped) => {}
            }
        }));
    }
    if let Some(primary) = state.database_primary.clone() {
        workers.push(tokio::spawn(
            primary.run(state.pool.clone(), shutdown.clone()),
        ));
    }
    workers.push(tokio::spawn(connector_dispatcher::run(state, shutdown)));
    workers
}

/// A `LISTEN` on `channel`, on a connection of its own: `PgListener` keeps the connection it
/// listens on for its whole life, and taking it from the request pool would leave requests one
/// short. `None` (the worker then polls) when it cannot be set up.
pub async fn listen(state: &AppState, channel: &str, worker: &str) -> Option<PgListener> {
    let options = state.pool.connect_options().as_ref().clone();
    let own = PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy_with(options);
    let mut listener = match PgListener::connect_with(&own).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(error = %e, "{worker}: no LISTEN connection; polling instead");
            return None;
        }
    };
    match listener.listen(channel).await {
        Ok(()) => Some(listener),
        Err(e) => {
            tracing::warn!(error = %e, "{worker}: LISTEN failed; polling instead");
            None
        }
    }
}

/// How often a worker whose notifications broke tries to listen again.
pub const RELISTEN_EVERY: Duration = Duration::from_secs(5);

/// Sets up a broken (or never made) `LISTEN` again, at most every [`RELISTEN_EVERY`], on the
/// pool's current host: after a database failover, the new primary (the old one, now a
/// standby, refuses `LISTEN`). Meanwhile the worker polls.
pub async fn relisten(
    state: &AppState,
    listener: &mut Option<PgListener>,
    last_try: &mut Instant,
    channel: &str,
    worker: &str,
) {
    if listener.is_some() || last_try.elapsed() < RELISTEN_EVERY {
        return;
    }
    *last_try = Instant::now();
    *listener = listen(state, channel, worker).await;
    if listener.is_some() {
        tracing::info!("{worker}: notifications back");
    }
}

/// Waits for a notification (several at once wake once); false when the listener broke (the
/// worker then polls until [`relisten`] sets it up again). Without a listener it never returns.
pub async fn wake(listener: &mut Option<PgListener>, worker: &str) -> bool {
    match listener {
        Some(l) => match l.recv().await {
            Ok(_) => {
                // only what has arrived already: `try_recv` would wait for the next one, and
                // a notification taken by a wait that `select!` then drops is lost
                while l.next_buffered().is_some() {}
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "{worker}: notifications stopped; polling instead");
                false
            }
        },
        None => std::future::pending().await,
    }
}
