//! Group commit of message sends: sends that queue while the runners are busy are routed,
//! stepped and stored in one transaction, and answered after its commit; a batch in which
//! one send fails runs each of its sends alone.

use crate::domain::*;
use crate::helpers::{spawn_app, TestApp};
use crate::messages::orders;
use futures_util::stream::{FuturesOrdered, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Sends `payloads` of `name` as one batch ([`sent_in_order_as_one_batch`]).
async fn sent_as_one_batch(
    app: &TestApp,
    name: &str,
    payloads: Vec<Value>,
) -> Vec<(StatusCode, Value)> {
    let sends: Vec<(&str, Value)> = payloads.into_iter().map(|p| (name, p)).collect();
    sent_in_order_as_one_batch(app, &sends).await
}

/// Sends each (name, payload) while every runner is held, the next once the one before has
/// queued, so that they queue in this order; once all are queued, lets the runners go (the
/// batch is made of them, in order). Returns each send's answer, in order.
async fn sent_in_order_as_one_batch(
    app: &TestApp,
    sends: &[(&str, Value)],
) -> Vec<(StatusCode, Value)> {
    let batches = app.state.sends.clone();
    let held = batches.hold().await;
    let mut answers = FuturesOrdered::new();
    for (before, (name, payload)) in sends.iter().enumerate() {
        answers.push_back(send(app, name, payload, &[]));
        let deadline = Instant::now() + Duration::from_secs(10);
        while batches.queued() <= before {
            assert!(Instant::now() < deadline, "the sends never queued");
            tokio::select! {
                answer = answers.next() => panic!("answered while the runners were held: {answer:?}"),
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
    }
    drop(held);
    answers.collect().await
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

/// Each answer is 200 and says that its instance (`ids`, in order) completed.
fn each_completed(answers: &[(StatusCode, Value)], ids: &[i64]) {
    assert_eq!(answers.len(), ids.len(), "{answers:?}");
    for ((status, body), id) in answers.iter().zip(ids) {
        assert_eq!(*status, StatusCode::OK, "{body}");
        assert_eq!(body["process_instance"]["id"], *id, "{body}");
        assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    }
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
    // each payment reached its own order, and only it
    each_completed(&paid, &started);
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

/// A batch's correlation lookups are made together, before its first send is routed: two sends
/// of it with the same values still go to the two instances waiting for them, oldest first,
/// each once (the second looks again once the first has taken the receive both found).
#[tokio::test]
async fn two_sends_of_a_batch_with_the_same_values_reach_the_two_waiting_instances_in_order() {
    let app = spawn_app().await;
    orders(&app).await;
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let (status, body) = send(&app, "placed", &json!({"order_id": 1}), &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        waiting.push(body["process_instance"]["id"].as_i64().unwrap());
    }
    let paid = sent_as_one_batch(
        &app,
        "paid",
        vec![
            json!({"order_id": 1, "paid": 1}),
            json!({"order_id": 1, "paid": 2}),
        ],
    )
    .await;
    each_completed(&paid, &waiting);
    assert_eq!(writers_of_sends(&app, "paid").await.len(), 1);
    let completed = messages(&app, "name=paid&message_type=receive&status=completed").await;
    assert_eq!(completed.len(), 2, "{completed:?}");
}

/// A send of a batch reaches the instance that a send before it in the same batch started:
/// its lookup, made with the batch's before that instance waited, found no receive, so it
/// looks again.
#[tokio::test]
async fn a_send_of_a_batch_reaches_the_instance_a_send_before_it_started() {
    let app = spawn_app().await;
    orders(&app).await;
    let answers = sent_in_order_as_one_batch(
        &app,
        &[
            ("placed", json!({"order_id": 9})),
            ("paid", json!({"order_id": 9, "paid": true})),
        ],
    )
    .await;
    let [(placed_status, placed), (paid_status, paid)] = &answers[..] else {
        panic!("two answers: {answers:?}");
    };
    assert_eq!(*placed_status, StatusCode::OK, "{placed}");
    assert_eq!(*paid_status, StatusCode::OK, "{paid}");
    assert_eq!(
        paid["process_instance"]["id"], placed["process_instance"]["id"],
        "{paid}"
    );
    assert_eq!(paid["process_instance"]["status"], "complete", "{paid}");
    // one transaction for both
    let placed_by = writers_of_sends(&app, "placed").await;
    assert_eq!(placed_by, writers_of_sends(&app, "paid").await);
    assert_eq!(placed_by.len(), 1, "{placed_by:?}");
}
