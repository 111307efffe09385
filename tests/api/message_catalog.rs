//! The message catalog a replica keeps (each message name's retrieval expressions and start
//! trigger) never serves what another replica's upload changed.

use crate::domain::*;
use crate::helpers::{spawn_app, spawn_app_with, TestApp};
use crate::models;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Two servers of one database with the orders model (version 1) uploaded through the first.
async fn two_replicas() -> (TestApp, TestApp, String) {
    let first = spawn_app().await;
    let database_url = first.settings.database_url.clone();
    let second = spawn_app_with(|settings| settings.database_url = database_url).await;
    let v1 = models::order_process("orders", "placed", "paid");
    upload_ok(&first, "shop/orders", "orders.bpmn", &v1).await;
    (first, second, v1)
}

/// Sends through `replica` (of `app`'s database); asserts 200 and answers the body.
async fn sent_ok(replica: &TestApp, app: &TestApp, name: &str, payload: Value) -> Value {
    let (status, body) = send_to(&replica.address, app, name, &payload, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// Version 2 of the orders model: `paid` gives its order id as `ref`.
fn paid_by_ref(v1: &str) -> String {
    let v2 = v1.replace(
        "<bpmn:messagePath>order_id</bpmn:messagePath>",
        "<bpmn:messagePath>ref</bpmn:messagePath>",
    );
    assert_ne!(v1, v2);
    v2
}

#[tokio::test]
async fn a_replica_reads_the_catalog_afresh_once_another_replica_changed_it() {
    let (first, second, v1) = two_replicas().await;
    // the second replica reads (and keeps) the retrievals of `placed` and `paid`
    for order_id in [1, 7] {
        sent_ok(&second, &first, "placed", json!({"order_id": order_id})).await;
    }
    sent_ok(&second, &first, "paid", json!({"order_id": 1})).await;

    // the first replica changes how `paid` gives its order id
    upload_ok(&first, "shop/orders", "orders.bpmn", &paid_by_ref(&v1)).await;

    // with the kept expression (`order_id`) this payload gives no value and is refused
    let body = sent_ok(&second, &first, "paid", json!({"ref": 7})).await;
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    assert_eq!(body["task_data"]["payment"], json!({"ref": 7}), "{body}");
}

/// The kept expressions still give a value, the wrong one: the correlation lookup's check of
/// the catalog's version catches it, and the message runs again with the current expressions.
#[tokio::test]
async fn a_stale_expression_that_still_gives_a_value_is_caught_by_the_lookup() {
    let (first, second, v1) = two_replicas().await;
    let mut instances = Vec::new();
    for order_id in [1, 7, 8] {
        let body = sent_ok(&second, &first, "placed", json!({"order_id": order_id})).await;
        instances.push(body["process_instance"]["id"].clone());
    }
    sent_ok(&second, &first, "paid", json!({"order_id": 1})).await;

    upload_ok(&first, "shop/orders", "orders.bpmn", &paid_by_ref(&v1)).await;

    // the kept expression would take order 8; the current one says order 7
    let body = sent_ok(&second, &first, "paid", json!({"order_id": 8, "ref": 7})).await;
    assert_eq!(body["process_instance"]["id"], instances[1], "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
}

/// A model deleted through one replica no longer starts instances through another that kept
/// its start trigger: the message is refused as one no model starts with.
#[tokio::test]
async fn a_model_deleted_through_another_replica_no_longer_starts_instances() {
    let (first, second, _) = two_replicas().await;
    // the second replica keeps the start trigger of `placed`; the instance ends, so the model
    // can be deleted
    sent_ok(&second, &first, "placed", json!({"order_id": 1})).await;
    sent_ok(&second, &first, "paid", json!({"order_id": 1})).await;

    let deleted = first
        .request(reqwest::Method::DELETE, "/v1.0/process-models/shop:orders")
        .bearer_auth(first.token("models:write"))
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());

    let (status, body) = send_to(
        &second.address,
        &first,
        "placed",
        &json!({"order_id": 2}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "message_not_accepted", "{body}");
}

/// Issue 35: a message start whose model the catalog knows writes its instance's row once,
/// with its first step's state (its first write-back inserts it), where it was inserted empty
/// and then updated: the row of the second instance is the tuple right after the first's,
/// where an insert and its update would have left two. (The first start reads the catalog and
/// inserts its row up front; its update leaves its row the second tuple of the page.)
#[tokio::test]
async fn a_message_start_writes_its_instances_row_once() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "shop/orders",
        "orders.bpmn",
        &models::order_process("orders", "placed", "paid"),
    )
    .await;
    let first = sent_ok(&app, &app, "placed", json!({"order_id": 1, "amount": 1})).await;
    let second = sent_ok(&app, &app, "placed", json!({"order_id": 2, "amount": 1})).await;
    assert_eq!(second["process_instance"]["status"], "waiting", "{second}");

    let tuple = |body: &Value| {
        let id = body["process_instance"]["id"].as_i64().unwrap();
        sqlx::query_scalar::<_, String>("SELECT ctid::text FROM process_instances WHERE id = $1")
            .bind(id)
            .fetch_one(&app.pool)
    };
    assert_eq!(tuple(&first).await.unwrap(), "(0,2)");
    assert_eq!(tuple(&second).await.unwrap(), "(0,3)");
    // and as it was stepped: waiting for `paid`, its answer's times those of its row
    let id = second["process_instance"]["id"].as_i64().unwrap();
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    for time in ["created_at", "updated_at"] {
        assert!(shown[time].is_string(), "{shown}");
        assert_eq!(
            shown[time], second["process_instance"][time],
            "{shown} {second}"
        );
    }
    sent_ok(&app, &app, "paid", json!({"order_id": 2})).await;
    assert_eq!(show(&app, id).await["status"], "complete");
}

/// Issue 35: such a start writes its instance at the model's version the catalog gave, and its
/// row's insert checks that version is still the model's: a model whose version moved without
/// the catalog moving (as an upload that commits after the start's lookup leaves it; here
/// moved back to version 1 by hand) is started at its current version, the start run again.
#[tokio::test]
async fn a_message_start_is_written_at_its_models_current_version() {
    let app = spawn_app().await;
    let v1 = models::order_process("orders", "placed", "paid");
    upload_ok(&app, "shop/orders", "orders.bpmn", &v1).await;
    let first = sent_ok(&app, &app, "placed", json!({"order_id": 1})).await;
    let version_1 = show(&app, first["process_instance"]["id"].as_i64().unwrap()).await
        ["process_model_version"]
        .clone();
    upload_ok(&app, "shop/orders", "orders.bpmn", &paid_by_ref(&v1)).await;
    // reads the catalog afresh (the upload moved it): it now says version 2
    let second = sent_ok(&app, &app, "placed", json!({"order_id": 2})).await;
    let version_2 = show(&app, second["process_instance"]["id"].as_i64().unwrap()).await
        ["process_model_version"]
        .clone();
    assert_ne!(version_1, version_2);

    sqlx::query("UPDATE process_models SET version_sha = $1 WHERE identifier = 'shop/orders'")
        .bind(version_1.as_str().unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    let third = sent_ok(&app, &app, "placed", json!({"order_id": 3})).await;
    let id = third["process_instance"]["id"].as_i64().unwrap();
    let shown = show(&app, id).await;
    assert_eq!(shown["process_model_version"], version_1, "{shown}");
    assert_eq!(shown["status"], "waiting", "{shown}");
}

/// Issue 35: an instance started through the catalog, whose row is not written yet, is found
/// by a later lookup of its unit for the message its receive waits for: the buyer's request
/// starts the seller, whose answer resumes the buyer, whose close (the same unit's lookup of
/// `close`) must find the seller's receive, which it finds through the seller's row (written
/// for it then). Both end within the one request.
#[tokio::test]
async fn a_new_instance_is_found_by_its_units_lookup_for_its_receive() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "trade/closing",
        "closing.bpmn",
        &models::closing_conversation(),
    )
    .await;
    // the first conversation reads the catalog (the seller's start trigger); the second uses it
    for po_number in [1, 2] {
        let buyer = start_ok(&app, "trade/closing", &json!({"po_number": po_number})).await;
        let guid = waiting_task(&app, buyer, "prepare").await;
        let (status, body) = complete_task(&app, buyer, &guid, &json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    }
    let sellers: Vec<String> = sqlx::query_scalar(
        "SELECT status FROM process_instances WHERE process_id = 'seller' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(sellers, ["complete", "complete"]);
}
