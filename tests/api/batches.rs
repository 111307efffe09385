//! Group commit of message sends: sends that queue while the runners are busy are routed,
//! stepped and stored in one transaction, and answered after its commit; a batch in which
//! one send fails runs each of its sends alone.

use crate::domain::*;
use crate::helpers::{spawn_app, TestApp};
use crate::messages::orders;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Sends `payloads` of `name` while every runner is held, so that they queue; once all are
/// queued, lets the runners go. Returns each send's answer, in order.
async fn sent_as_one_batch(
    app: &TestApp,
    name: &str,
    payloads: Vec<Value>,
) -> Vec<(StatusCode, Value)> {
    let batches = app.state.sends.clone();
    let held = batches.hold().await;
    let count = payloads.len();
    let sends = futures_util::future::join_all(
        payloads.iter().map(|payload| send(app, name, payload, &[])),
    );
    let release = async {
        let deadline = Instant::now() + Duration::from_secs(10);
        while batches.queued() < count {
            assert!(Instant::now() < deadline, "the sends never queued");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
    };
    tokio::join!(sends, release).0
}

/// The transactions that wrote the sends of `name`: their `xmin`s.
async fn writers_of_sends(app: &TestApp, name: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM message_instances \
         WHERE name = $1 AND message_type = 'send'",
    )
    .bind(name)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn sends_that_queue_together_are_committed_in_one_transaction_and_each_answered() {
    let app = spawn_app().await;
    orders(&app).await;
    let placed = sent_as_one_batch(
        &app,
        "placed",
        (1..=6).map(|n| json!({"order_id": n})).collect(),
    )
    .await;
    let mut started = Vec::new();
    for (n, (status, body)) in (1..=6).zip(&placed) {
        assert_eq!(*status, StatusCode::OK, "{body}");
        assert_eq!(body["process_instance"]["status"], "waiting", "{body}");
        assert_eq!(body["task_data"]["order"], json!({"order_id": n}), "{body}");
        started.push(body["process_instance"]["id"].as_i64().unwrap());
    }
    assert_eq!(writers_of_sends(&app, "placed").await.len(), 1);

    let paid = sent_as_one_batch(
        &app,
        "paid",
        (1..=6)
            .map(|n| json!({"order_id": n, "paid": true}))
            .collect(),
    )
    .await;
    for ((status, body), id) in paid.iter().zip(&started) {
        assert_eq!(*status, StatusCode::OK, "{body}");
        // each payment reached its own order, and only it
        assert_eq!(body["process_instance"]["id"], *id, "{body}");
        assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    }
    assert_eq!(writers_of_sends(&app, "paid").await.len(), 1);
}

#[tokio::test]
async fn a_send_that_fails_in_a_batch_fails_alone_and_the_others_are_delivered_once() {
    let app = spawn_app().await;
    orders(&app).await;
    for n in 1..=2 {
        let (status, body) = send(&app, "placed", &json!({"order_id": n}), &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let answers = sent_as_one_batch(
        &app,
        "paid",
        vec![
            json!({"order_id": 1}),
            // no value for the correlation property: refused
            json!({"amount": 3}),
            json!({"order_id": 2}),
        ],
    )
    .await;
    assert_eq!(answers[0].0, StatusCode::OK, "{}", answers[0].1);
    assert_eq!(answers[0].1["process_instance"]["status"], "complete");
    assert_eq!(answers[1].0, StatusCode::BAD_REQUEST, "{}", answers[1].1);
    assert_eq!(
        answers[1].1["error_code"], "correlation_value_not_computable",
        "{}",
        answers[1].1
    );
    assert_eq!(answers[2].0, StatusCode::OK, "{}", answers[2].1);
    assert_eq!(answers[2].1["process_instance"]["status"], "complete");
    // each delivered once, each in its own transaction (the batch was rolled back)
    let sends = messages(&app, "name=paid&message_type=send").await;
    assert_eq!(sends.len(), 2, "{sends:?}");
    assert_eq!(writers_of_sends(&app, "paid").await.len(), 2);
}
