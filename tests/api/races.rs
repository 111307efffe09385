//! Races between requests on one instance or one model, driven deterministically: the test
//! holds a lock the first request needs, waits (by asking Postgres, not by sleeping) until each
//! request is queued behind it in the order the race needs, then lets them go (issue 31,
//! items 6 and 7).

use crate::domain::{send, show, start, upload_ok, waiting_task, ADMIN};
use crate::helpers::{lock_waiter, spawn_app_without_workers, TestApp};
use crate::messages::orders;
use crate::models::{keyed_waiter, user_task_process};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// A request sent on its own task, so the test can hold it back at a lock.
fn spawn_request(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> JoinHandle<(StatusCode, Value)> {
    let request = app
        .request(method, path)
        .bearer_auth(app.token(ADMIN))
        .json(&body.unwrap_or(Value::Null));
    tokio::spawn(async move {
        let response = request.send().await.expect("request");
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    })
}

/// Waits until `count` sessions of the test database wait for a lock (a request queued behind
/// the test's transaction, or behind another request), or `done` finished first (a request
/// that did not wait: the race did not happen as the test needs). Fails after 20 s.
async fn until_waiting_for_locks(
    app: &TestApp,
    count: i64,
    done: &JoinHandle<(StatusCode, Value)>,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting = sessions_waiting_for_locks(app).await;
        if waiting >= count || done.is_finished() {
            return;
        }
        if Instant::now() >= deadline {
            // what each session was doing, for the failure's message
            let sessions: Option<String> = sqlx::query_scalar(
                "SELECT string_agg(format('%s/%s %s: %s', wait_event_type, wait_event, state, \
                     left(query, 120)), E'\\n') \
                 FROM pg_stat_activity WHERE datname = current_database()",
            )
            .fetch_one(&app.pool)
            .await
            .unwrap();
            panic!(
                "{waiting} of {count} sessions wait:\n{}",
                sessions.unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sessions of the test's database waiting for a lock.
async fn sessions_waiting_for_locks(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// A transaction of the test holding the row lock of instance `id`.
async fn hold_instance(app: &TestApp, id: i64) -> Transaction<'static, Postgres> {
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM process_instances WHERE id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// A message that reads the instance's receive as waiting, then waits for the instance's lock
/// while a suspension holds it: what the send answers once the suspension has committed.
async fn send_while_suspending(
    app: &TestApp,
    model: &str,
    query: &str,
) -> (i64, StatusCode, Value) {
    upload_ok(app, model, "w.bpmn", &keyed_waiter("waiter", "ping")).await;
    let (status, body) = start(app, model, &json!({"key": "k1"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();

    let holder = hold_instance(app, id).await;
    let suspend = spawn_request(
        app,
        Method::POST,
        &format!("/v1.0/process-instances/{id}/suspend"),
        None,
    );
    until_waiting_for_locks(app, 1, &suspend).await;
    let sent = spawn_request(
        app,
        Method::POST,
        &format!("/v1.0/messages/ping{query}"),
        Some(json!({"key": "k1", "n": 1})),
    );
    until_waiting_for_locks(app, 2, &sent).await;
    holder.rollback().await.unwrap();

    let (status, suspended) = suspend.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{suspended}");
    assert_eq!(suspended["process_instance"]["status"], "suspended");
    let (status, body) = sent.await.unwrap();
    (id, status, body)
}

/// Buffering asked for: the message is buffered, and the resume delivers it.
#[tokio::test]
async fn a_message_racing_a_suspension_is_buffered_and_delivered_on_resume() {
    let app = spawn_app_without_workers().await;
    let uuid = uuid::Uuid::new_v4();
    let query = format!("?time_to_live_in_seconds=60&message_instance_uuid={uuid}");
    let (id, status, body) = send_while_suspending(&app, "races/buffered", &query).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["message_instance"]["state"], "buffered", "{body}");
    assert_eq!(show(&app, id).await["status"], "suspended");

    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/resume"),
            &Value::Null,
            ADMIN,
        )
        .await;
    let resumed: Value = response.json().await.unwrap();
    assert_eq!(
        resumed["process_instance"]["status"], "complete",
        "{resumed}"
    );
    assert_eq!(
        resumed["task_data"]["received"],
        json!({"key": "k1", "n": 1})
    );
}

/// No buffering: refused as if nothing waited (the rule for suspended instances).
#[tokio::test]
async fn a_message_racing_a_suspension_without_buffering_is_refused() {
    let app = spawn_app_without_workers().await;
    let (id, status, body) = send_while_suspending(&app, "races/refused", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "message_not_accepted", "{body}");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "suspended", "{shown}");
}

/// A start that has read its model waits (at the message name's lock, held by the test) while
/// the model is deleted: the delete waits for the start, then finds its live instance (409).
#[tokio::test]
async fn a_delete_racing_a_start_waits_for_it_and_is_refused() {
    let app = spawn_app_without_workers().await;
    upload_ok(
        &app,
        "races/deleted",
        "w.bpmn",
        &keyed_waiter("waiter", "late ping"),
    )
    .await;
    // a receive about to wait takes the name's lock shared (store::messages::lock_name)
    let holder = hold_message_name(&app, "late ping").await;
    let started = spawn_request(
        &app,
        Method::POST,
        "/v1.0/process-instances/races:deleted",
        Some(json!({"key": "k1"})),
    );
    until_waiting_for_locks(&app, 1, &started).await;
    let deleted = spawn_request(
        &app,
        Method::DELETE,
        "/v1.0/process-models/races:deleted",
        None,
    );
    until_waiting_for_locks(&app, 2, &deleted).await;
    holder.rollback().await.unwrap();

    let (status, body) = started.await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let (status, refused) = deleted.await.unwrap();
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error_code"], "process_model_in_use", "{refused}");
    // the instance runs on its version
    let response = app
        .post_json(
            &format!("/v1.0/process-instances/{id}/terminate"),
            &Value::Null,
            ADMIN,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

/// A transaction of the test holding the lock of message name `name` exclusively, as a send
/// about to be buffered does (`store::messages::lock_name`).
async fn hold_message_name(app: &TestApp, name: &str) -> Transaction<'static, Postgres> {
    hold_advisory_lock(app, "message:", name).await
}

/// A transaction of the test holding the advisory lock the service names `{kind}{name}`.
async fn hold_advisory_lock(
    app: &TestApp,
    kind: &str,
    name: &str,
) -> Transaction<'static, Postgres> {
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1 || $2, 0))")
        .bind(kind)
        .bind(name)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// A transaction of the test holding the instances lock of `model` exclusively, as a model's
/// deletion does (`store::models::lock_instances_of`).
async fn hold_model(app: &TestApp, model: &str) -> Transaction<'static, Postgres> {
    hold_advisory_lock(app, "model instances:", model).await
}

/// The order model, with its start message's trigger read into the message catalog by a
/// first start (order 1): the next starts take the model's lock in their receive lookup.
async fn orders_in_the_catalog(app: &TestApp) {
    orders(app).await;
    let (status, body) = send(app, "placed", &json!({"order_id": 1, "amount": 1}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The start of order `order`, sent on a task of its own.
fn place(app: &TestApp, order: i64) -> JoinHandle<(StatusCode, Value)> {
    spawn_request(
        app,
        Method::POST,
        "/v1.0/messages/placed",
        Some(json!({"order_id": order, "amount": 1})),
    )
}

/// Issue 35: a message that starts a model when no receive takes it has the model's
/// instances lock taken by its receive lookup (a statement fewer) once the message catalog
/// knows the model: with the lock held (as a deletion holds it), that lookup is the statement
/// that waits, and the start goes on once it is let go.
#[tokio::test]
async fn a_message_start_takes_its_models_lock_in_its_receive_lookup() {
    let app = spawn_app_without_workers().await;
    orders_in_the_catalog(&app).await;
    let holder = hold_model(&app, "shop/orders").await;
    let started = place(&app, 2);
    until_waiting_for_locks(&app, 1, &started).await;
    let waiting = lock_waiter(&app).await.map(|(_, _, statement)| statement);
    holder.rollback().await.unwrap();

    // (as much of it as pg_stat_activity keeps: its first 1,024 bytes; the lookup that also
    // draws the id of the instance the send may start)
    let lookup = workflow_backend::store::messages::LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID;
    assert!(
        waiting
            .as_deref()
            .is_some_and(|w| w.len() >= lookup.len().min(1023) && lookup.starts_with(w)),
        "{waiting:?}"
    );
    let (status, body) = started.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "waiting", "{body}");
}

/// A start waiting for its model's instances lock (held, as a deletion holds it) while the
/// model is deleted is answered as a start of a model that does not exist (404) and leaves no
/// instance: the statement that reads the model comes after the lock, so its snapshot has the
/// deletion. (Folding the lock into that statement would insert a live instance of a deleted
/// model: nothing else refuses it, as an instance has no foreign key to its model — finished
/// ones outlive it.)
#[tokio::test]
async fn a_start_whose_model_is_deleted_while_it_waits_for_the_models_lock_is_not_found() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "races/gone", "u.bpmn", &user_task_process("gone")).await;
    let mut holder = hold_model(&app, "races/gone").await;
    let started = spawn_request(
        &app,
        Method::POST,
        "/v1.0/process-instances/races:gone",
        Some(json!({})),
    );
    until_waiting_for_locks(&app, 1, &started).await;
    sqlx::query("DELETE FROM process_models WHERE identifier = 'races/gone'")
        .execute(&mut *holder)
        .await
        .unwrap();
    holder.commit().await.unwrap();

    let (status, body) = started.await.unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error_code"], "process_model_not_found", "{body}");
    let instances: i64 = sqlx::query_scalar("SELECT count(*) FROM process_instances")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(instances, 0);
}

/// Issue 35: a message start whose model is deleted while its lookup waits for the model's
/// instances lock leaves no instance, though its lookup checked the catalog before the wait and
/// its instance's row is written only by its write-back: that insert reads the model (gone) and
/// fails as a stale catalog does; run again, the send finds no model that starts with it.
#[tokio::test]
async fn a_message_start_whose_model_is_deleted_while_its_lookup_waits_starts_nothing() {
    let app = spawn_app_without_workers().await;
    orders_in_the_catalog(&app).await;
    let mut holder = hold_model(&app, "shop/orders").await;
    let started = place(&app, 2);
    until_waiting_for_locks(&app, 1, &started).await;
    // (as a deletion does, without moving the catalog: the lookup's check cannot see it)
    sqlx::query("DELETE FROM process_models WHERE identifier = 'shop/orders'")
        .execute(&mut *holder)
        .await
        .unwrap();
    holder.commit().await.unwrap();

    let (status, body) = started.await.unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "message_not_accepted", "{body}");
    let instances: i64 = sqlx::query_scalar("SELECT count(*) FROM process_instances")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(instances, 1);
}

/// Issue 35: at most two batches of sends commit at once (fewer runners, larger batches). Two
/// message starts wait for their model's lock, each in a runner of its own; a third send then
/// finds no runner free and waits in the queue, not in Postgres, until one is. With a runner
/// more it would run at once and wait for the lock beside them.
#[tokio::test]
async fn a_send_queues_while_two_batches_of_sends_wait() {
    let app = spawn_app_without_workers().await;
    orders_in_the_catalog(&app).await;
    let holder = hold_model(&app, "shop/orders").await;
    let first = place(&app, 2);
    until_waiting_for_locks(&app, 1, &first).await;
    let second = place(&app, 3);
    until_waiting_for_locks(&app, 2, &second).await;
    let third = place(&app, 4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.state.sends.queued() == 0 {
        assert!(
            !third.is_finished() && Instant::now() < deadline,
            "the third send was not queued"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        sessions_waiting_for_locks(&app).await,
        2,
        "only the two runners' starts wait for the lock"
    );
    holder.rollback().await.unwrap();

    for started in [first, second, third] {
        let (status, body) = started.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    assert_eq!(app.state.sends.queued(), 0);
}

/// An instance whose version is gone anyway (stored before the fix, or by hand) is refused
/// with a code on every endpoint that steps it, never a 500.
#[tokio::test]
async fn an_instance_whose_version_is_gone_is_refused_with_a_code() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "races/orphan", "u.bpmn", &user_task_process("orphan")).await;
    let (status, body) = start(&app, "races/orphan", &json!({"amount": 2})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let task = waiting_task(&app, id, "approve").await;
    sqlx::query("UPDATE process_instances SET model_version = 'gone' WHERE id = $1")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();

    let calls = [
        (Method::PUT, format!("/v1.0/tasks/{id}/{task}")),
        (
            Method::POST,
            format!("/v1.0/process-instances/{id}/suspend"),
        ),
        (
            Method::POST,
            format!("/v1.0/process-instances/{id}/terminate"),
        ),
    ];
    for (method, path) in calls {
        let (status, body) = spawn_request(&app, method, &path, Some(json!({})))
            .await
            .unwrap();
        assert!(status.is_client_error(), "{path}: {status} {body}");
        assert_eq!(
            body["error_code"], "process_model_version_not_found",
            "{path}: {body}"
        );
    }
    assert_eq!(show(&app, id).await["status"], "user_input_required");
}

/// A send buffered while a new receive of its name waits for the name's lock is delivered to
/// that receive once the lock is granted. The test holds the lock exclusively; a payment that
/// finds no receive waits for it (to buffer itself), then the order that waits for that payment
/// queues behind it (to write its receive). Let go, the payment is buffered and committed
/// first; the receive then looks in the buffer after its lock was granted, and finds it. (A
/// look in the snapshot taken before that wait would miss it, and neither would ever find the
/// other.)
#[tokio::test]
async fn a_send_buffered_while_a_receive_waits_for_the_names_lock_is_delivered_to_it() {
    let app = spawn_app_without_workers().await;
    orders(&app).await;
    let holder = hold_message_name(&app, "paid").await;
    let paid = spawn_request(
        &app,
        Method::POST,
        "/v1.0/messages/paid?time_to_live_in_seconds=300\
         &message_instance_uuid=6f1c2a9e-3b4d-4c5e-8f60-718293a4b5c6",
        Some(json!({"order_id": 5})),
    );
    until_waiting_for_locks(&app, 1, &paid).await;
    let placed = place(&app, 5);
    until_waiting_for_locks(&app, 2, &placed).await;
    holder.rollback().await.unwrap();

    let (status, buffered) = paid.await.unwrap();
    assert_eq!(status, StatusCode::ACCEPTED, "{buffered}");
    assert_eq!(
        buffered["message_instance"]["state"], "buffered",
        "{buffered}"
    );
    let (status, body) = placed.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
}
