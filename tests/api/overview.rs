//! The console's overview over HTTP on a real database (issue 37): counts per model and
//! status, errors grouped by element, messages per minute, element counts on a model's
//! diagram, search of instances and messages, bulk commands; each seen through a token scoped
//! to one model as well as an admin's.

use crate::domain::*;
use crate::helpers::{spawn_app_with, TestApp};
use crate::models::{order_process, scripted};
use reqwest::StatusCode;
use serde_json::{json, Value};

const ORDERS: &str = "shop/orders";
const FIXME: &str = "ops/fixme";

const BROKEN: &str = "total = amount * rate";
const FIXED: &str = "total = amount * 2";

/// A server that computes the aggregates on every request (no replica cache), with two
/// models: orders started by messages (two waiting, one completed by its payment, one
/// payment buffered, one refused), and three instances of a model whose script fails.
async fn world() -> TestApp {
    let app = spawn_app_with(|s| {
        s.run_workers = false;
        s.stats_cache_ms = 0;
    })
    .await;
    upload_ok(
        &app,
        ORDERS,
        "orders.bpmn",
        &order_process("orders", "order placed", "payment received"),
    )
    .await;
    for order in ["A-17", "A-18", "B-1"] {
        let placed = json!({"order_id": order, "customer": {"id": format!("C-{order}")}});
        let (status, body) = send(&app, "order placed", &placed, &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let paid = json!({"order_id": "B-1", "paid": true});
    let (status, body) = send(&app, "payment received", &paid, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let early = json!({"order_id": "Z-9", "paid": true});
    let uuid = uuid::Uuid::new_v4().to_string();
    let ttl = [
        ("time_to_live_in_seconds", "300"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, body) = send(&app, "payment received", &early, &ttl).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body) = send(&app, "payment received", &json!({"order_id": "Q"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    upload_ok(&app, FIXME, "fixme.bpmn", &scripted("price", BROKEN)).await;
    for amount in [1, 2, 3] {
        let (status, started) = start(&app, FIXME, &json!({"amount": amount})).await;
        assert_eq!(status, StatusCode::CREATED, "{started}");
        assert_eq!(started["process_instance"]["status"], "error", "{started}");
    }
    app
}

async fn get_as(app: &TestApp, path: &str, scope: &str) -> (StatusCode, Value) {
    let response = app.get_as(path, scope).await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn model<'a>(overview: &'a Value, identifier: &str) -> &'a Value {
    overview["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["process_model_identifier"] == identifier)
        .unwrap_or_else(|| panic!("{identifier} in {overview}"))
}

#[tokio::test]
async fn the_overview_counts_instances_per_model_and_status_and_groups_errors() {
    let app = world().await;
    let (status, overview) = get(&app, "/v1.0/stats/overview").await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    let orders = &model(&overview, ORDERS)["counts"];
    assert_eq!(
        (orders["waiting"].as_i64(), orders["complete"].as_i64()),
        (Some(2), Some(1)),
        "{overview}"
    );
    assert_eq!(orders["error"], 0, "{overview}");
    let fixme = &model(&overview, FIXME)["counts"];
    assert_eq!(fixme["error"], 3, "{overview}");
    assert_eq!(overview["count_cap"], 10_000);
    assert_eq!(model(&overview, ORDERS)["capped"], json!([]));

    let errors = overview["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "one element, one message: {overview}");
    assert_eq!(errors[0]["process_model_identifier"], FIXME);
    assert_eq!(errors[0]["element_id"], "price");
    assert_eq!(errors[0]["count"], 3);
    assert!(
        errors[0]["message"].as_str().unwrap().contains("rate"),
        "{overview}"
    );

    let messages = &overview["messages"];
    assert_eq!(messages["buffered_now"], 1, "{overview}");
    let hour = &messages["last_hour"];
    // three starts and one payment completed, one buffered, one refused
    assert_eq!(
        (
            hour["completed"].as_i64(),
            hour["buffered"].as_i64(),
            hour["rejected"].as_i64()
        ),
        (Some(4), Some(1), Some(1)),
        "{overview}"
    );
}

#[tokio::test]
async fn a_token_scoped_to_one_model_sees_only_its_counts() {
    let app = world().await;
    let (status, overview) =
        get_as(&app, "/v1.0/stats/overview", "instances:read:shop/orders").await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    let models: Vec<&str> = overview["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["process_model_identifier"].as_str().unwrap())
        .collect();
    assert_eq!(models, [ORDERS]);
    assert_eq!(overview["errors"], json!([]), "another model's errors");
    assert!(
        overview["messages"].is_null(),
        "messages need instances:read:*"
    );

    let (status, refused) = get_as(&app, "/v1.0/stats/overview", "models:read").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["error_code"], "not_authorized");
    let (status, _) = get_as(&app, "/v1.0/stats/messages", "instances:read:shop/orders").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = get_as(
        &app,
        "/v1.0/process-models/ops:fixme/element-counts",
        "instances:read:shop/orders",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_message_chart_counts_sends_per_minute_by_state() {
    let app = world().await;
    let (status, chart) = get(&app, "/v1.0/stats/messages").await;
    assert_eq!(status, StatusCode::OK, "{chart}");
    let buckets = chart["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 60, "every minute of the hour");
    assert_eq!(chart["complete"], true);
    let total = |state: &str| -> i64 {
        buckets
            .iter()
            .map(|b| b["counts"][state].as_i64().unwrap())
            .sum()
    };
    assert_eq!(
        (
            total("completed"),
            total("buffered"),
            total("rejected"),
            total("accepted")
        ),
        (4, 1, 1, 0)
    );
    let last = buckets.last().unwrap();
    assert_eq!(
        last["counts"]["completed"].as_i64().unwrap()
            + buckets[buckets.len() - 2]["counts"]["completed"]
                .as_i64()
                .unwrap(),
        4,
        "the sends of the last minute or two: {chart}"
    );
    let (status, day) = get(&app, "/v1.0/stats/messages?window=day").await;
    assert_eq!(status, StatusCode::OK, "{day}");
    assert_eq!(day["buckets"].as_array().unwrap().len(), 24 * 60);
    let (status, refused) = get(&app, "/v1.0/stats/messages?window=week").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error_code"], "invalid_query");
}

#[tokio::test]
async fn a_replica_reuses_its_overview_while_it_is_fresh() {
    let app = spawn_app_with(|s| {
        s.run_workers = false;
        s.stats_cache_ms = 3_600_000;
    })
    .await;
    upload_ok(&app, FIXME, "fixme.bpmn", &scripted("price", BROKEN)).await;
    let (_, first) = get(&app, "/v1.0/stats/overview").await;
    assert_eq!(model(&first, FIXME)["counts"]["error"], 0, "{first}");
    start(&app, FIXME, &json!({"amount": 1})).await;
    let (_, again) = get(&app, "/v1.0/stats/overview").await;
    assert_eq!(
        again["generated_at"], first["generated_at"],
        "the kept answer"
    );
    assert_eq!(model(&again, FIXME)["counts"]["error"], 0);
}

#[tokio::test]
async fn element_counts_place_live_and_failed_instances_on_the_current_version() {
    let app = world().await;
    let (status, counts) = get(&app, "/v1.0/process-models/shop:orders/element-counts").await;
    assert_eq!(status, StatusCode::OK, "{counts}");
    assert_eq!(
        counts["elements"],
        json!([{"element_id": "paid", "waiting": 2, "error": 0}]),
        "{counts}"
    );
    let (_, counts) = get(&app, "/v1.0/process-models/ops:fixme/element-counts").await;
    assert_eq!(
        counts["elements"],
        json!([{"element_id": "price", "waiting": 0, "error": 3}]),
        "{counts}"
    );
    // a new version: the failed instances stay on theirs, counted apart
    upload_ok(&app, FIXME, "fixme.bpmn", &scripted("price", FIXED)).await;
    let (_, counts) = get(&app, "/v1.0/process-models/ops:fixme/element-counts").await;
    assert_eq!(counts["elements"], json!([]), "{counts}");
    assert_eq!(counts["other_versions"], json!({"waiting": 0, "error": 3}));
    let (status, missing) = get(&app, "/v1.0/process-models/ops:nothing/element-counts").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    assert_eq!(missing["error_code"], "process_model_not_found");
}

async fn listed(app: &TestApp, query: &str) -> Vec<i64> {
    let (status, page) = get(app, &format!("/v1.0/process-instances?{query}")).await;
    assert_eq!(status, StatusCode::OK, "{query}: {page}");
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn instances_are_found_by_correlation_value_data_and_start_time() {
    let app = world().await;
    let a17 = listed(&app, "correlation=order_id%3DA-17").await;
    assert_eq!(a17.len(), 1, "{a17:?}");
    let shown = show(&app, a17[0]).await;
    assert_eq!(shown["data"]["order"]["order_id"], "A-17", "{shown}");
    // a completed instance is found too
    assert_eq!(listed(&app, "correlation=order_id%3DB-1").await.len(), 1);
    assert_eq!(listed(&app, "correlation=order_id%3DA-404").await.len(), 0);

    let data = urlencode(r#"{"amount": 2}"#);
    let two = listed(&app, &format!("data={data}")).await;
    assert_eq!(two.len(), 1, "{two:?}");
    let nested = urlencode(r#"{"order": {"customer": {"id": "C-A-18"}}}"#);
    assert_eq!(listed(&app, &format!("data={nested}")).await.len(), 1);

    let now = chrono::Utc::now();
    let after = urlencode(&(now - chrono::Duration::hours(1)).to_rfc3339());
    let before = urlencode(&(now + chrono::Duration::minutes(5)).to_rfc3339());
    let all = listed(
        &app,
        &format!("created_after={after}&created_before={before}&per_page=50"),
    )
    .await;
    assert_eq!(all.len(), 6, "three orders, three failed: {all:?}");
    assert_eq!(
        listed(&app, &format!("created_before={after}")).await.len(),
        0
    );
    let filtered = listed(&app, &format!("status=error&data={data}")).await;
    assert_eq!(filtered, two);

    for (query, why) in [
        ("correlation=order_id", "no ="),
        ("correlation=%3DA-17", "no property"),
        ("data=%5B1%5D", "not an object"),
        ("data=%7B", "not JSON"),
        ("created_after=yesterday", "not a time"),
        (
            format!(
                "data={}",
                urlencode(&format!("{{\"a\": \"{}\"}}", "x".repeat(4000)))
            )
            .as_str(),
            "too long",
        ),
        (
            format!("correlation=a%3D{}", "x".repeat(1000)).as_str(),
            "too long",
        ),
    ] {
        let (status, body) = get(&app, &format!("/v1.0/process-instances?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{why}: {body}");
        assert_eq!(body["error_code"], "invalid_query", "{why}: {body}");
    }
}

#[tokio::test]
async fn messages_are_found_by_correlation_value_and_payload() {
    let app = world().await;
    let (status, page) = get(&app, "/v1.0/messages?correlation=order_id%3DZ-9").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let found = page["results"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{page}");
    assert_eq!(found[0]["state"], "buffered");
    let payload = urlencode(r#"{"paid": true}"#);
    let (_, page) = get(
        &app,
        &format!("/v1.0/messages?message_type=send&payload={payload}"),
    )
    .await;
    assert_eq!(
        page["results"].as_array().unwrap().len(),
        2,
        "B-1 and Z-9: {page}"
    );
    let (status, body) = get(&app, "/v1.0/messages?payload=1").await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_query"))
    );
}

async fn bulk(app: &TestApp, body: &Value, scope: &str) -> (StatusCode, Value) {
    let response = app
        .post_json("/v1.0/bulk/process-instances", body, scope)
        .await;
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn failed_instances_are_retried_in_bulk_each_answered_apart() {
    let app = world().await;
    let failed = listed(&app, "status=error").await;
    assert_eq!(failed.len(), 3);
    let orders = listed(&app, "process_model_identifier=shop/orders&status=waiting").await;

    // on the broken version: each fails again, and says so
    let mut ids = failed.clone();
    ids.push(orders[0]);
    ids.push(failed[0]);
    let (status, answer) = bulk(
        &app,
        &json!({"action": "retry", "process_instance_ids": ids}),
        ADMIN,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["results"].as_array().unwrap().len(),
        4,
        "a repeated id once: {answer}"
    );
    assert_eq!(
        (answer["done"].as_i64(), answer["refused"].as_i64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        answer["results"][0]["status"], "error",
        "ran again and failed again"
    );
    assert_eq!(answer["results"][3]["process_instance_id"], orders[0]);
    assert_eq!(answer["results"][3]["outcome"], "refused");
    assert_eq!(
        answer["results"][3]["error_code"],
        "process_instance_not_in_error"
    );

    // the fix uploaded, all three retried on it in one call: each runs on to its user task
    upload_ok(&app, FIXME, "fixme.bpmn", &scripted("price", FIXED)).await;
    let (_, model) = get(&app, "/v1.0/process-models/ops:fixme").await;
    let fixed = model["current_version"].clone();
    let body = json!({"action": "retry", "process_instance_ids": failed, "target_version": fixed});
    let (status, answer) = bulk(&app, &body, ADMIN).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["done"], 3, "{answer}");
    for result in answer["results"].as_array().unwrap() {
        assert_eq!(result["status"], "user_input_required", "{answer}");
    }
    // again: nothing more happens, each refused as not in error
    let (_, again) = bulk(&app, &body, ADMIN).await;
    assert_eq!(
        (again["done"].as_i64(), again["refused"].as_i64()),
        (Some(0), Some(3)),
        "{again}"
    );
    assert_eq!(listed(&app, "status=error").await.len(), 0);

    // suspend twice: the second changes nothing and is done too
    let suspend = json!({"action": "suspend", "process_instance_ids": orders});
    for _ in 0..2 {
        let (_, answer) = bulk(&app, &suspend, ADMIN).await;
        assert_eq!(answer["done"], 2, "{answer}");
        assert_eq!(answer["results"][0]["status"], "suspended");
    }
}

#[tokio::test]
async fn a_bulk_command_checks_each_instance_against_the_callers_scopes() {
    let app = world().await;
    let failed = listed(&app, "status=error").await;
    let orders = listed(&app, "process_model_identifier=shop/orders&status=waiting").await;
    let ids = json!([orders[0], failed[0]]);
    let body = json!({"action": "terminate", "process_instance_ids": ids});
    let (status, answer) = bulk(&app, &body, "instances:update:shop/orders").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["results"][0]["status"], "terminated", "{answer}");
    assert_eq!(
        answer["results"][1]["error_code"], "process_instance_not_found",
        "an instance the caller cannot see is not found: {answer}"
    );
    assert_eq!(show(&app, failed[0]).await["status"], "error", "untouched");

    for (body, why) in [
        (
            json!({"action": "retry", "process_instance_ids": []}),
            "no ids",
        ),
        (
            json!({"action": "explode", "process_instance_ids": [1]}),
            "unknown action",
        ),
        (
            json!({"action": "suspend", "process_instance_ids": [1], "target_version": "ab"}),
            "version with suspend",
        ),
        (
            json!({"action": "retry", "process_instance_ids": (1..=501).collect::<Vec<i64>>()}),
            "too many",
        ),
    ] {
        let (status, refused) = bulk(&app, &body, ADMIN).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{why}: {refused}");
    }
}

/// The console polls with the tag of what it shows: 304 while the answer is the same, 200
/// with a new tag once it changed.
#[tokio::test]
async fn a_poll_with_the_shown_tag_gets_304_until_the_answer_changes() {
    let app = world().await;
    let poll = |tag: Option<String>| {
        let mut request = app
            .client
            .get(app.url("/v1.0/process-instances?status=error"))
            .bearer_auth(app.token(ADMIN));
        if let Some(tag) = tag {
            request = request.header("If-None-Match", tag);
        }
        request.send()
    };
    let first = poll(None).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let tag = first.headers()["etag"].to_str().unwrap().to_string();
    let again = poll(Some(tag.clone())).await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), tag);
    assert_eq!(again.text().await.unwrap(), "", "no body");
    let weak = poll(Some(format!("\"x\", W/{tag}"))).await.unwrap();
    assert_eq!(weak.status(), StatusCode::NOT_MODIFIED);

    let failed = listed(&app, "status=error").await;
    let body = json!({"action": "terminate", "process_instance_ids": [failed[0]]});
    bulk(&app, &body, ADMIN).await;
    let changed = poll(Some(tag.clone())).await.unwrap();
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(changed.headers()["etag"].to_str().unwrap(), tag);
    // writes are never answered 304
    let response = app
        .client
        .post(app.url("/v1.0/bulk/process-instances"))
        .bearer_auth(app.token(ADMIN))
        .header("If-None-Match", "*")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
