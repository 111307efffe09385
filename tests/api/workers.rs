//! The workers' shared LISTEN wake-up, on a real database.

use crate::helpers::spawn_app_with;
use std::time::Duration;
use workflow_backend::workers::{listen, wake};

/// A wake-up takes the notifications that have arrived and returns: it must not wait for the
/// next one (a worker's `select!` drops that wait when another branch fires, and the
/// notification it then takes is lost: the worker sleeps on while work is due).
#[tokio::test]
async fn a_wake_up_takes_what_has_arrived_and_does_not_wait_for_more() {
    let app = spawn_app_with(|s| s.run_workers = false).await;
    let mut listener = listen(&app.state, "workers_test", "test").await;
    assert!(listener.is_some(), "LISTEN works on the test database");
    sqlx::query("SELECT pg_notify('workers_test', 'a'), pg_notify('workers_test', 'b')")
        .execute(&app.pool)
        .await
        .unwrap();
    let woken = tokio::time::timeout(Duration::from_secs(5), wake(&mut listener, "test")).await;
    assert_eq!(
        woken,
        Ok(true),
        "the wake-up returned with what had arrived"
    );
}
