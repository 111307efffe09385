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
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::startup::AppState;

/// Starts every worker. `run_until_stopped` sends `true` on shutdown and awaits the handles.
pub fn spawn_all(
    state: web::Data<AppState>,
    shutdown: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(message_expiry::run(
            state.pool.clone(),
            state.message_buffered.clone(),
            shutdown.clone(),
        )),
        tokio::spawn(timer_firer::run(state.clone(), shutdown.clone())),
        tokio::spawn(connector_dispatcher::run(state, shutdown)),
    ]
}
