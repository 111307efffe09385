//! POST /v1.0/messages and the audit list: every rule of spec/messages-api.md and every code
//! of the reference, over HTTP against a fresh database.

use crate::domain::*;
use crate::helpers::{problem, spawn_app, spawn_app_with, spawn_app_without_workers, TestApp};
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const ORDERS: &str = "shop/orders";

/// The orders model: `placed` starts it (order_id), `paid` continues it.
/// Uploads `shop/orders`: message start `placed`, then waits for `paid` by `order_id`.
pub async fn orders(app: &TestApp) {
    upload_ok(
        app,
        ORDERS,
        "orders.bpmn",
        &models::order_process("orders", "placed", "paid"),
    )
    .await;
}

fn code(body: &Value) -> &str {
    body["error_code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn message_start_then_correlation_completes_the_instance() {
    let app = spawn_app().await;
    orders(&app).await;

    let (status, started) = send(&app, "placed", &json!({"order_id": 7, "amount": 3}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    assert_eq!(started["process_instance"]["status"], "waiting");
    assert_eq!(
        started["process_instance"]["process_model_identifier"],
        ORDERS
    );
    assert_eq!(
        started["task_data"]["order"],
        json!({"order_id": 7, "amount": 3})
    );

    let (status, done) = send(&app, "paid", &json!({"order_id": 7, "paid": true}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["id"], id);
    assert_eq!(done["process_instance"]["status"], "complete");
    assert_eq!(
        done["task_data"]["payment"],
        json!({"order_id": 7, "paid": true})
    );

    // the send and its receive point at each other
    let sent = messages(
        &app,
        &format!("process_instance_id={id}&message_type=receive"),
    )
    .await;
    let receive = sent
        .iter()
        .find(|m| m["name"] == "paid")
        .expect("receive row");
    assert_eq!(receive["status"], "completed");
    let send_row = messages(&app, "name=paid&message_type=send").await;
    assert_eq!(send_row.len(), 1);
    assert_eq!(send_row[0]["counterpart_id"], receive["id"]);
    assert_eq!(receive["counterpart_id"], send_row[0]["id"]);
    // lists are summaries: the values are on the message itself
    assert!(receive.get("correlation_keys").is_none(), "{receive}");
    let (_, receive) = get(&app, &format!("/v1.0/messages/{}", receive["id"])).await;
    assert_eq!(receive["correlation_keys"], json!({"order_id": 7}));
}

#[tokio::test]
async fn no_receiver_and_no_start_event_is_not_accepted_and_kept_for_audit() {
    let app = spawn_app().await;
    orders(&app).await;

    let (status, body) = send(&app, "paid", &json!({"order_id": 1}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "message_not_accepted");
    assert_eq!(body["reason"], "no_receiver", "{body}");
    assert!(body.get("correlation_values").is_none(), "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("no process instance waits"),
        "{body}"
    );

    let kept = messages(&app, "name=paid&status=not_accepted").await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["failure_reason"], "no_receiver");
    assert!(kept[0]["failure_cause"]
        .as_str()
        .unwrap()
        .contains("no process instance waits"));
    assert!(kept[0].get("payload").is_none(), "lists are summaries");
    let (_, shown) = get(&app, &format!("/v1.0/messages/{}", kept[0]["id"])).await;
    assert_eq!(shown["payload"], json!({"order_id": 1}));
}

#[tokio::test]
async fn correlation_values_that_match_nothing_are_named_in_the_refusal() {
    let app = spawn_app().await;
    orders(&app).await;
    let (status, _) = send(&app, "placed", &json!({"order_id": 1}), &[]).await;
    assert_eq!(status, StatusCode::OK);

    let (status, body) = send(&app, "paid", &json!({"order_id": 2}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), "message_not_accepted");
    // the code, and the values of this message compared (not the waiting instance's)
    assert_eq!(body["reason"], "correlation_mismatch", "{body}");
    assert_eq!(body["correlation_values"], json!({"order_id": 2}), "{body}");
    let kept = messages(&app, "name=paid&status=not_accepted").await;
    assert_eq!(kept[0]["failure_reason"], "correlation_mismatch");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("none with the correlation values") && detail.contains(r#""order_id":2"#),
        "{detail}"
    );
    // the waiting instance was not touched
    let waiting = messages(&app, "name=paid&message_type=receive&status=ready").await;
    assert_eq!(waiting.len(), 1);
}

#[tokio::test]
async fn query_and_body_validation_answers_with_the_reference_codes() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("time_to_live_in_seconds", "-1")],
            "invalid_time_to_live",
        ),
        (
            vec![
                ("time_to_live_in_seconds", "301"),
                ("message_instance_uuid", &uuid),
            ],
            "invalid_time_to_live",
        ),
        (
            vec![("time_to_live_in_seconds", "soon")],
            "invalid_time_to_live",
        ),
        (
            vec![("time_to_live_in_seconds", "30")],
            "message_instance_uuid_required",
        ),
        (
            vec![
                ("time_to_live_in_seconds", "30"),
                ("message_instance_uuid", "not-a-uuid"),
            ],
            "invalid_message_instance_uuid",
        ),
        (
            vec![("message_instance_uuid", "0b5bd9b03d4a4f4b9d0f6a2b3c4d5e6f")],
            "invalid_message_instance_uuid",
        ),
    ];
    for (query, expected) in cases {
        let (status, body) = send(&app, "paid", &json!({"order_id": 1}), &query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query:?}: {body}");
        assert_eq!(code(&body), expected, "{query:?}: {body}");
        assert_eq!(body["message"], body["detail"]);
    }
    for payload in [json!([1, 2]), json!("text"), json!(3), Value::Null] {
        let (status, body) = send(&app, "paid", &payload, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{payload}: {body}");
        assert_eq!(code(&body), "invalid_payload", "{payload}: {body}");
    }
    // nothing was stored for a refused request
    assert!(messages(&app, "name=paid").await.is_empty());
}

#[tokio::test]
async fn a_group_prefix_and_url_encoding_name_the_message() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "misc/spaces",
        "s.bpmn",
        &models::one_step("spaces", "Request Approval"),
    )
    .await;
    let (status, body) = send(
        &app,
        "finance:invoices:Request Approval",
        &json!({"a": 1}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete");
    assert_eq!(body["task_data"]["payload"], json!({"a": 1}));
}

#[tokio::test]
async fn buffered_message_is_delivered_when_its_receiver_appears() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];

    let (status, buffered) = send(&app, "paid", &json!({"order_id": 9}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{buffered}");
    let message = &buffered["message_instance"];
    assert_eq!(message["status"], "ready");
    assert_eq!(message["message_type"], "send");
    assert_eq!(message["name"], "paid");
    assert_eq!(message["message_instance_uuid"], uuid.as_str());
    assert!(
        message["expires_at_in_seconds"].as_i64().unwrap() > chrono::Utc::now().timestamp() + 50
    );

    // the receiver appears: the buffered message is delivered in the same transaction
    let (status, started) = send(&app, "placed", &json!({"order_id": 9}), &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        started["process_instance"]["status"], "complete",
        "{started}"
    );
    assert_eq!(started["task_data"]["payment"], json!({"order_id": 9}));

    // a replay now answers with the instance it went to, and delivers nothing again
    let (status, replay) = send(&app, "paid", &json!({"order_id": 9}), &query).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(
        replay["process_instance"]["id"],
        started["process_instance"]["id"]
    );
    assert_eq!(messages(&app, "name=paid&message_type=send").await.len(), 1);
}

#[tokio::test]
async fn a_buffered_message_that_does_not_match_stays_buffered() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, _) = send(&app, "paid", &json!({"order_id": 1}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (_, started) = send(&app, "placed", &json!({"order_id": 2}), &[]).await;
    assert_eq!(started["process_instance"]["status"], "waiting");
    let buffered = messages(&app, "name=paid&message_type=send").await;
    assert_eq!(buffered[0]["status"], "ready");
}

#[tokio::test]
async fn an_expired_message_is_never_delivered_and_replays_as_cancelled() {
    use workflow_backend::workers::message_expiry::expire_due_once;
    // no sweeper in the background: the test moves the expiry into the past and sweeps itself
    let app = spawn_app_without_workers().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4();
    let uuid_text = uuid.to_string();
    let query = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid_text.as_str()),
    ];
    let (status, _) = send(&app, "paid", &json!({"order_id": 5}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    // its time to live runs out: expires_at moves just behind the database's clock, which is
    // the clock delivery compares it with (`expires_at > clock_timestamp()`)
    let expires_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar(
        "UPDATE message_instances SET expires_at = clock_timestamp() - interval '1 second' \
         WHERE message_instance_uuid = $1 RETURNING expires_at",
    )
    .bind(uuid)
    .fetch_one(&app.pool)
    .await
    .unwrap();

    // past expires_at: a matching receiver must not get it, sweeper or not
    let (_, started) = send(&app, "placed", &json!({"order_id": 5}), &[]).await;
    assert_eq!(
        started["process_instance"]["status"], "waiting",
        "{started}"
    );
    // nothing swept it yet: the delivery itself refused the expired message
    let sent = messages(&app, "name=paid&message_type=send").await;
    assert_eq!(sent[0]["status"], "ready", "{sent:?}");

    // the sweep as of its expiry marks it, and nothing else is buffered
    let sweep = expire_due_once(&app.pool, expires_at).await.unwrap();
    assert_eq!((sweep.expired, sweep.next_expiry), (1, None));
    let sent = messages(&app, "name=paid&message_type=send").await;
    assert_eq!(sent[0]["status"], "cancelled", "{sent:?}");
    assert_eq!(sent[0]["failure_reason"], "expired", "{sent:?}");

    let (status, replay) = send(&app, "paid", &json!({"order_id": 5}), &query).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{replay}");
    assert_eq!(replay["message_instance"]["status"], "cancelled");
    assert_eq!(replay["message_instance"]["failure_reason"], "expired");
    let shown = show(&app, started["process_instance"]["id"].as_i64().unwrap()).await;
    assert_eq!(shown["status"], "waiting");
}

#[tokio::test]
async fn replays_answer_from_the_stored_message() {
    let app = spawn_app().await;
    orders(&app).await;

    // buffered, then replayed: same message, 202
    let buffered_uuid = uuid::Uuid::new_v4().to_string();
    let q = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", buffered_uuid.as_str()),
    ];
    let (s1, b1) = send(&app, "paid", &json!({"order_id": 1}), &q).await;
    let (s2, b2) = send(&app, "paid", &json!({"order_id": 1}), &q).await;
    assert_eq!((s1, s2), (StatusCode::ACCEPTED, StatusCode::ACCEPTED));
    assert_eq!(b1["message_instance"]["id"], b2["message_instance"]["id"]);

    // started an instance, then replayed: same instance, no second start
    let start_uuid = uuid::Uuid::new_v4().to_string();
    let q = [("message_instance_uuid", start_uuid.as_str())];
    let (s1, b1) = send(&app, "placed", &json!({"order_id": 2}), &q).await;
    let (s2, b2) = send(&app, "placed", &json!({"order_id": 2}), &q).await;
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{b1} {b2}");
    assert_eq!(b1["process_instance"]["id"], b2["process_instance"]["id"]);
    let (_, list) = get(&app, "/v1.0/process-instances").await;
    assert_eq!(list["pagination"]["total"], 1);

    // rejected, then replayed: the same 400 again, one row
    let rejected_uuid = uuid::Uuid::new_v4().to_string();
    let q = [("message_instance_uuid", rejected_uuid.as_str())];
    let (s1, b1) = send(&app, "paid", &json!({"order_id": 404}), &q).await;
    let (s2, b2) = send(&app, "paid", &json!({"order_id": 404}), &q).await;
    assert_eq!((s1, s2), (StatusCode::BAD_REQUEST, StatusCode::BAD_REQUEST));
    assert_eq!(
        (code(&b1), code(&b2)),
        ("message_not_accepted", "message_not_accepted")
    );
    assert_eq!(messages(&app, "status=not_accepted").await.len(), 1);
}

#[tokio::test]
async fn a_reused_uuid_with_another_name_or_payload_is_a_conflict() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let q = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, _) = send(&app, "paid", &json!({"order_id": 1}), &q).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, body) = send(&app, "paid", &json!({"order_id": 2}), &q).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "message_instance_uuid_conflict");
    let (status, body) = send(&app, "placed", &json!({"order_id": 1}), &q).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "message_instance_uuid_conflict");
    // the uuid is stored lower-case: the upper-case spelling is the same key
    let upper = uuid.to_uppercase();
    let q = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", upper.as_str()),
    ];
    let (status, body) = send(&app, "paid", &json!({"order_id": 1}), &q).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        body["message_instance"]["message_instance_uuid"],
        uuid.as_str()
    );
}

#[tokio::test]
async fn concurrent_requests_with_one_uuid_deliver_once_and_answer_alike() {
    let app = spawn_app().await;
    orders(&app).await;
    let (_, started) = send(&app, "placed", &json!({"order_id": 3}), &[]).await;
    let id = started["process_instance"]["id"].clone();
    let uuid = uuid::Uuid::new_v4().to_string();

    let requests = (0..12).map(|_| {
        let uuid = uuid.clone();
        let app = &app;
        async move {
            let q = [
                ("time_to_live_in_seconds", "30"),
                ("message_instance_uuid", uuid.as_str()),
            ];
            send(app, "paid", &json!({"order_id": 3}), &q).await
        }
    });
    let answers = futures_util::future::join_all(requests).await;
    for (status, body) in &answers {
        assert_eq!(*status, StatusCode::OK, "{body}");
        assert_eq!(body["process_instance"]["id"], id);
        assert_eq!(body["process_instance"]["status"], "complete");
    }
    assert_eq!(messages(&app, "name=paid&message_type=send").await.len(), 1);
}

/// Returns once a backend of the test's database waits for a lock that the backend `holder`
/// holds. A condition poll with a deadline (not a sleep standing in for the wait): it fails if
/// `pending` finishes first (it did not wait) or if nothing waits within 10 s.
async fn wait_until_blocked_by<T>(
    app: &TestApp,
    holder: i32,
    pending: &tokio::task::JoinHandle<T>,
) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let blocked: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity \
                            WHERE datname = current_database() \
                              AND $1 = ANY (pg_blocking_pids(pid)))",
        )
        .bind(holder)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if blocked {
            return;
        }
        assert!(
            !pending.is_finished(),
            "the message did not wait for the locked receiver"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "nothing waited for the lock of backend {holder} within 10 s"
        );
        // poll interval of the condition above (bounded by the deadline)
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_message_for_a_locked_instance_waits_for_the_lock_and_is_delivered() {
    let app = spawn_app().await;
    orders(&app).await;
    let (_, started) = send(&app, "placed", &json!({"order_id": 4}), &[]).await;
    let id = started["process_instance"]["id"].as_i64().unwrap();

    // another transaction holds the instance's row lock
    let mut blocker = app.pool.begin().await.unwrap();
    sqlx::query("SELECT id FROM process_instances WHERE id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut *blocker)
        .await
        .unwrap();
    let holder: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *blocker)
        .await
        .unwrap();

    let pending = tokio::spawn({
        let address = app.address.clone();
        let client = app.client.clone();
        let token = app.token(ADMIN);
        async move {
            let response = client
                .post(format!("{address}/v1.0/messages/paid"))
                .bearer_auth(token)
                .json(&json!({"order_id": 4}))
                .send()
                .await
                .unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    });
    // the request is seen waiting on the blocker's lock, not just assumed to have reached it
    wait_until_blocked_by(&app, holder, &pending).await;
    assert!(
        !pending.is_finished(),
        "the message did not wait for the locked receiver"
    );
    blocker.commit().await.unwrap();

    let (status, body) = pending.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["id"], id);
    assert_eq!(body["process_instance"]["status"], "complete");
}

#[tokio::test]
async fn a_two_process_conversation_correlates_on_two_properties() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "trade/conversation",
        "conversation.bpmn",
        &models::conversation("request", "reply"),
    )
    .await;

    // two buyers with the same customer and different orders, and the reverse
    let a = start_ok(
        &app,
        "trade/conversation",
        &json!({"customer_id": "acme", "po_number": 1, "amount": 10}),
    )
    .await;
    let b = start_ok(
        &app,
        "trade/conversation",
        &json!({"customer_id": "acme", "po_number": 2, "amount": 5000}),
    )
    .await;
    let c = start_ok(
        &app,
        "trade/conversation",
        &json!({"customer_id": "zeta", "po_number": 1, "amount": 20}),
    )
    .await;
    for id in [a, b, c] {
        let guid = waiting_task(&app, id, "prepare").await;
        let (status, body) = complete_task(&app, id, &guid, &json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // the seller started, answered, and the answer came back within the same request
        assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    }
    let reply_of = |shown: &Value| shown["data"]["reply"].clone();
    assert_eq!(
        reply_of(&show(&app, a).await),
        json!({"customer_id": "acme", "po_number": 1, "approved": true})
    );
    assert_eq!(
        reply_of(&show(&app, b).await),
        json!({"customer_id": "acme", "po_number": 2, "approved": false})
    );
    assert_eq!(
        reply_of(&show(&app, c).await),
        json!({"customer_id": "zeta", "po_number": 1, "approved": true})
    );
    // a stray reply with one matching property only is refused
    let (status, _) = send(
        &app,
        "reply",
        &json!({"customer_id": "acme", "po_number": 3}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_engine_thrown_message_waits_for_its_receiver() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "ping/thrower",
        "t.bpmn",
        &models::thrower("thrower", "ping"),
    )
    .await;
    upload_ok(
        &app,
        "ping/waiter",
        "w.bpmn",
        &models::keyed_waiter("waiter", "ping"),
    )
    .await;

    let thrower = start_ok(&app, "ping/thrower", &json!({"key": "k1"})).await;
    assert_eq!(show(&app, thrower).await["status"], "complete");
    let kept = messages(&app, "name=ping&message_type=send").await;
    assert_eq!(
        kept[0]["status"], "ready",
        "kept for a later receiver: {kept:?}"
    );

    // another key does not take it; the right one does, at once
    let other = start_ok(&app, "ping/waiter", &json!({"key": "k2"})).await;
    assert_eq!(show(&app, other).await["status"], "waiting");
    let (_, answer) = start(&app, "ping/waiter", &json!({"key": "k1"})).await;
    assert_eq!(answer["process_instance"]["status"], "complete", "{answer}");
    assert_eq!(answer["task_data"]["received"], json!({"key": "k1"}));
}

/// Issue 35: a message of the API that a receive or a new instance takes is stored by the
/// statement that writes its instance back (one statement fewer per message), with the receive
/// it completed: in its transaction, its row and the receive's completion come after the
/// instance's row (before, the send was stored by a statement of its own, ahead of it).
#[tokio::test]
async fn a_taken_message_is_stored_with_its_instance_write_back() {
    let app = spawn_app().await;
    orders(&app).await;
    let order = json!({"order_id": 8, "amount": 1});
    let (status, started) = send(&app, "placed", &order, &[]).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let id = started["process_instance"]["id"].as_i64().unwrap();
    let payment = json!({"order_id": 8, "paid": true});
    let (status, done) = send(&app, "paid", &payment, &[]).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    // (transaction, command within it) of each row as its last write left it
    let written = |sql: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, (String, i32)>(sql)
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let instance =
        written("SELECT xmin::text, cmin::text::int FROM process_instances WHERE id = $1").await;
    for (row, sql) in [
        (
            "the payment",
            "SELECT xmin::text, cmin::text::int FROM message_instances \
             WHERE process_instance_id = $1 AND name = 'paid' AND message_type = 'send'",
        ),
        (
            "its receive",
            "SELECT xmin::text, cmin::text::int FROM message_instances \
             WHERE process_instance_id = $1 AND name = 'paid' AND message_type = 'receive'",
        ),
    ] {
        let message = written(sql).await;
        assert_eq!(
            message.0, instance.0,
            "{row}: the correlation's transaction"
        );
        assert!(
            message.1 > instance.1,
            "{row} written (command {}) before the instance (command {})",
            message.1,
            instance.1
        );
    }
}

/// Two messages thrown in one step must not both take the one waiting receive.
#[tokio::test]
async fn one_receive_takes_one_of_two_messages_thrown_in_one_step() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "ping/thrower",
        "t.bpmn",
        &models::double_thrower("thrower", "ping"),
    )
    .await;
    upload_ok(
        &app,
        "ping/waiter",
        "w.bpmn",
        &models::keyed_waiter("waiter", "ping"),
    )
    .await;

    let first = start_ok(&app, "ping/waiter", &json!({"key": "k"})).await;
    start_ok(&app, "ping/thrower", &json!({"key": "k"})).await;
    let shown = show(&app, first).await;
    assert_eq!(shown["status"], "complete");
    assert_eq!(shown["data"]["received"]["n"], 1);
    let sent = messages(&app, "name=ping&message_type=send").await;
    let statuses: Vec<&str> = sent.iter().map(|m| m["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ready", "completed"], "newest first: {sent:?}");

    // the second one is the next waiter's, at once
    let (_, second) = start(&app, "ping/waiter", &json!({"key": "k"})).await;
    assert_eq!(second["process_instance"]["status"], "complete", "{second}");
    assert_eq!(second["task_data"]["received"]["n"], 2);
}

#[tokio::test]
async fn the_audit_list_filters_pages_and_shows_one_message() {
    let app = spawn_app().await;
    orders(&app).await;
    for order in 0..3 {
        send(&app, "placed", &json!({"order_id": order}), &[]).await;
    }
    send(&app, "paid", &json!({"order_id": 99}), &[]).await;

    let (status, page) = get(&app, "/v1.0/messages?per_page=2&page=1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["results"].as_array().unwrap().len(), 2);
    assert_eq!(page["pagination"]["total"], 7); // 3 sends + 3 receives + 1 refused
    assert_eq!(page["pagination"]["pages"], 4);
    let ids: Vec<i64> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert!(ids[0] > ids[1], "newest first");

    let refused = messages(&app, "status=not_accepted").await;
    assert_eq!(refused.len(), 1);
    let (status, one) = get(&app, &format!("/v1.0/messages/{}", refused[0]["id"])).await;
    assert_eq!(status, StatusCode::OK);
    for column in [
        "payload",
        "correlation_keys",
        "failure_cause",
        "counterpart_id",
        "message_instance_uuid",
        "expires_at",
        "process_model_identifier",
    ] {
        assert!(one.get(column).is_some(), "missing {column}: {one}");
    }
    let (status, body) = get(&app, "/v1.0/messages/999999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "message_instance_not_found");
}

/// A message name with a space is written percent-encoded in a scope (scopes are separated
/// by spaces in the claim).
#[tokio::test]
async fn a_message_name_with_a_space_has_a_percent_encoded_scope() {
    let app = spawn_app().await;
    let post = |scope: &str| {
        app.client
            .post(format!("{}/v1.0/messages/order%20paid", app.address))
            .bearer_auth(app.token(scope))
            .json(&json!({"order_id": 1}))
            .send()
    };
    // allowed: refused only because nothing waits for it
    let (status, body) = problem(post("messages:send:order%20paid").await.unwrap()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "message_not_accepted")
    );
    let (status, _) = problem(post("messages:send:order%20*").await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = problem(post("messages:send:order paid").await.unwrap()).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the claim holds two scopes, 'messages:send:order' and 'paid'"
    );
    assert_eq!(body["required_scope"], "messages:send:order%20paid");
}

#[tokio::test]
async fn sending_and_reading_messages_need_their_scopes() {
    let app = spawn_app().await;
    orders(&app).await;
    let post = |scope: &str| {
        app.client
            .post(format!("{}/v1.0/messages/placed", app.address))
            .bearer_auth(app.token(scope))
            .json(&json!({"order_id": 1}))
            .send()
    };
    assert_eq!(
        post("instances:read:*").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post("messages:send:paid").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post("messages:send:placed").await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        post("messages:send:pla*").await.unwrap().status(),
        StatusCode::OK
    );
    let anonymous = app
        .client
        .post(format!("{}/v1.0/messages/placed", app.address))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let list = app
        .client
        .get(format!("{}/v1.0/messages", app.address))
        .bearer_auth(app.token("messages:send"))
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), StatusCode::FORBIDDEN);
}

/// N instances wait; their N messages come from many concurrent clients in random order,
/// some before their instance exists (buffered), against two servers on one database.
/// Every instance must receive exactly its own message, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_message_is_lost_or_doubled_under_concurrency() {
    const N: usize = 60;
    let first = spawn_app().await;
    let database_url = first.settings.database_url.clone();
    let second = spawn_app_with(|settings| settings.database_url = database_url).await;
    upload_ok(
        &first,
        "load/waiter",
        "w.bpmn",
        &models::keyed_waiter("waiter", "work"),
    )
    .await;

    // a third of the instances exist before any message; the rest start concurrently
    let mut early = Vec::new();
    for i in 0..N / 3 {
        early.push((
            i,
            start_ok(&first, "load/waiter", &json!({"key": format!("k{i}")})).await,
        ));
    }
    let mut order: Vec<usize> = (0..N).collect();
    shuffle(&mut order);
    let servers = [first.address.clone(), second.address.clone()];
    let sends = order.iter().enumerate().map(|(n, &i)| {
        let address = servers[n % 2].clone();
        let app = &first;
        async move {
            let uuid = uuid::Uuid::new_v4().to_string();
            let q = [
                ("time_to_live_in_seconds", "120"),
                ("message_instance_uuid", uuid.as_str()),
            ];
            let (status, body) = send_to(
                &address,
                app,
                "work",
                &json!({"key": format!("k{i}"), "n": i}),
                &q,
            )
            .await;
            assert!(
                status == StatusCode::OK || status == StatusCode::ACCEPTED,
                "{status} {body}"
            );
        }
    });
    let starts = (N / 3..N).map(|i| {
        let app = if i % 2 == 0 { &first } else { &second };
        async move {
            (
                i,
                start_ok(app, "load/waiter", &json!({"key": format!("k{i}")})).await,
            )
        }
    });
    let (_, late) = futures_util::future::join(
        futures_util::future::join_all(sends),
        futures_util::future::join_all(starts),
    )
    .await;

    let instances: HashMap<usize, i64> = early.into_iter().chain(late).collect();
    let mut delivered = HashSet::new();
    for (i, id) in &instances {
        let shown = show(&first, *id).await;
        assert_eq!(
            shown["status"], "complete",
            "instance {id} (k{i}) did not get its message: {shown}"
        );
        assert_eq!(
            shown["data"]["received"]["n"],
            json!(i),
            "instance {id} got another's message"
        );
        assert!(delivered.insert(*i));
    }
    let sent = messages(&first, "name=work&message_type=send").await;
    assert_eq!(sent.len(), N);
    assert!(sent.iter().all(|m| m["status"] == "completed"), "{sent:?}");
    let receives = messages(&first, "name=work&message_type=receive").await;
    assert_eq!(receives.len(), N, "one receive per instance");
    assert!(receives.iter().all(|m| m["status"] == "completed"));
}

fn shuffle(items: &mut [usize]) {
    use rand::Rng;
    let mut rng = rand::rng();
    for i in (1..items.len()).rev() {
        items.swap(i, rng.random_range(0..=i));
    }
}

#[tokio::test]
async fn every_message_carries_a_state_label_and_lists_filter_by_it() {
    let app = spawn_app().await;
    orders(&app).await;
    let uuid = uuid::Uuid::new_v4().to_string();
    let buffer = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    // completed (started an instance, which now waits: a waiting receive), buffered, rejected
    let (status, _) = send(&app, "placed", &json!({"order_id": 1}), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(&app, "paid", &json!({"order_id": 2}), &buffer).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = send(&app, "nobody waits", &json!({}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let all = messages(&app, "").await;
    let labels: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["message_type"].as_str().unwrap(),
                m["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("nobody waits", "send", "rejected"),
            ("paid", "send", "buffered"),
            // the send is recorded once what it started has run (and waits)
            ("placed", "send", "completed"),
            ("paid", "receive", "waiting"),
        ]
    );
    for (state, expected) in [
        ("rejected", vec!["nobody waits"]),
        ("buffered", vec!["paid"]),
        ("waiting", vec!["paid"]),
        ("completed", vec!["placed"]),
        ("cancelled", vec![]),
        ("accepted", vec![]),
    ] {
        let names: Vec<String> = messages(&app, &format!("state={state}"))
            .await
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, expected, "state={state}");
    }
    let shown = get(&app, &format!("/v1.0/message-instances/{}", all[1]["id"]))
        .await
        .1;
    assert_eq!(shown["state"], "buffered");
    let (status, body) = get(&app, "/v1.0/messages?state=lost").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "invalid_query");
}
