//! The models in `examples/` load as the service loads a models folder, and run as their
//! READMEs say (the connector example's proxy is exercised by `service_tasks`).

use crate::domain::{send, show, start_ok, ADMIN};
use crate::helpers::{spawn_app_with, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;

async fn examples_app() -> TestApp {
    spawn_app_with(|settings| {
        settings.process_models_dir = Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples"
        )));
    })
    .await
}

#[tokio::test]
async fn every_example_loads_and_runs_as_its_readme_says() {
    let app = examples_app().await;
    let response = app.get_as("/v1.0/process-models?per_page=50", ADMIN).await;
    let body: Value = response.json().await.unwrap();
    let mut loaded: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["identifier"].as_str().unwrap())
        .collect();
    loaded.sort();
    assert_eq!(
        loaded,
        [
            "async-connector",
            "data-store/look-up-price",
            "data-store/record-price",
            "decision",
            "order-flow",
        ]
    );

    // order-flow: the order waits for its payment, matched on order_id
    let (status, started) = send(
        &app,
        "order placed",
        &json!({"order_id": "A1", "amount": 12}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(started["process_instance"]["status"], "waiting");
    let (status, refused) = send(
        &app,
        "payment received",
        &json!({"order_id": "ZZ", "amount": 12}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["reason"], "correlation_mismatch");
    let payment = json!({"order_id": "A1", "amount": 12, "method": "card"});
    let (status, paid) = send(&app, "payment received", &payment, &[]).await;
    assert_eq!(status, StatusCode::OK, "{paid}");
    assert_eq!(paid["process_instance"]["status"], "complete", "{paid}");

    // decision: the table prices the shipping
    let id = start_ok(
        &app,
        "decision",
        &json!({"country": "DE", "order_total": 30}),
    )
    .await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"]["shipping"],
        json!({"carrier": "DHL", "fee": 4.9})
    );

    // data-store: create the store, record a price, look it up
    let created = app
        .request(Method::PUT, "/v1.0/data-stores/json/price_list")
        .bearer_auth(app.token(ADMIN))
        .json(&json!({"location": "data-store", "name": "Price list", "data": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = start_ok(
        &app,
        "data-store/record-price",
        &json!({"product": "apple", "price": 3}),
    )
    .await;
    assert_eq!(show(&app, id).await["status"], "complete");
    let id = start_ok(
        &app,
        "data-store/look-up-price",
        &json!({"product": "apple"}),
    )
    .await;
    let instance = show(&app, id).await;
    assert_eq!(instance["data"]["price"], 3, "{instance}");
}
