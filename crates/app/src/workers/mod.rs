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

use sqlx::postgres::{PgListener, PgPoolOptions};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::App;
use std::sync::Arc;

/// Starts every worker, each under [`supervise`]. `run_until_stopped` sends `true` on shutdown
/// and awaits the handles.
pub fn spawn_all(state: Arc<App>, shutdown: watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
    let mut workers = Vec::new();
    {
        let (pool, buffered, stop) = (
            state.pool.clone(),
            state.message_buffered.clone(),
            shutdown.clone(),
        );
        workers.push(spawn_supervised("message expiry", &shutdown, move || {
            message_expiry::run(pool.clone(), buffered.clone(), stop.clone())
        }));
    }
    {
        let (state, stop) = (state.clone(), shutdown.clone());
        workers.push(spawn_supervised("timer worker", &shutdown, move || {
            timer_firer::run(state.clone(), stop.clone())
        }));
    }
    if let Some(jwks) = state.keys.jwks() {
        let stop = shutdown.clone();
        workers.push(spawn_supervised("JWKS refresh", &shutdown, move || {
            let (jwks, mut stop) = (jwks.clone(), stop.clone());
            async move {
                tokio::select! {
                    _ = crate::tokens::jwks::run(jwks) => {}
                    _ = stop.wait_for(|stopped| *stopped) => {}
                }
            }
        }));
    }
    if let Some(primary) = state.database_primary.clone() {
        let (pool, stop) = (state.pool.clone(), shutdown.clone());
        workers.push(spawn_supervised(
            "database primary watch",
            &shutdown,
            move || primary.clone().run(pool.clone(), stop.clone()),
        ));
    }
    {
        let stop = shutdown.clone();
        let handed = connector_dispatcher::HandedCalls::install(&state);
        workers.push(spawn_supervised(
            "connector dispatcher",
            &shutdown,
            move || connector_dispatcher::run(state.clone(), handed.clone(), stop.clone()),
        ));
    }
    workers
}

/// How long a worker that panicked waits before it starts again (a defect that panics at once
/// would otherwise spin).
pub const RESTART_AFTER: Duration = Duration::from_secs(1);

fn spawn_supervised<F, Fut>(
    worker: &'static str,
    shutdown: &watch::Receiver<bool>,
    start: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(supervise(worker, shutdown.clone(), RESTART_AFTER, start))
}

/// Runs a worker loop made by `start`, and starts it again, after `restart_after`, when it
/// panics (a defect: logged at ERROR): a worker must not end silently while the service goes
/// on answering. Returns when the loop returns (it does on shutdown) or on shutdown.
pub async fn supervise<F, Fut>(
    worker: &str,
    mut shutdown: watch::Receiver<bool>,
    restart_after: Duration,
    start: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        match tokio::spawn(start()).await {
            Ok(()) => return,
            Err(ended) if ended.is_panic() => {
                tracing::error!(worker, error = %ended, "worker panicked; starting it again");
            }
            Err(_) => return,
        }
        if *shutdown.borrow() {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(restart_after) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// A `LISTEN` on `channel`, on a connection of its own: `PgListener` keeps the connection it
/// listens on for its whole life, and taking it from the request pool would leave requests one
/// short. `None` (the worker then polls) when it cannot be set up.
pub async fn listen(state: &App, channel: &str, worker: &str) -> Option<PgListener> {
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
    state: &App,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_worker_that_panics_is_started_again_until_it_returns() {
        let (_stop, shutdown) = watch::channel(false);
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        supervise("test worker", shutdown, Duration::ZERO, move || {
            let run = counted.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if run < 3 {
                    panic!("injected panic in run {run}");
                }
            }
        })
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_panicked_worker_is_not_started_again_once_the_service_stops() {
        let (stop, shutdown) = watch::channel(false);
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let stop = Arc::new(stop);
        supervise(
            "test worker",
            shutdown,
            Duration::from_secs(3600),
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let stop = stop.clone();
                async move {
                    stop.send(true).unwrap();
                    panic!("injected panic while stopping");
                }
            },
        )
        .await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
