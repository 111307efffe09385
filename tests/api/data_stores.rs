//! Data stores over HTTP: each kind written by one instance and read by another, stores found
//! by location as SpiffArena finds them, the admin endpoints, and what is refused.

use crate::domain::{show, start, start_ok, upload, upload_ok, ADMIN};
use crate::helpers::{problem, spawn_app, TestApp};
use crate::models::definitions;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

async fn put_store(app: &TestApp, kind: &str, identifier: &str, body: &Value) -> Response {
    app.request(
        Method::PUT,
        &format!("/v1.0/data-stores/{kind}/{identifier}"),
    )
    .bearer_auth(app.token("data-stores:write"))
    .json(body)
    .send()
    .await
    .expect("request")
}

async fn put_store_ok(app: &TestApp, kind: &str, identifier: &str, body: &Value) -> Value {
    let response = put_store(app, kind, identifier, body).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

async fn get_as(app: &TestApp, path: &str, scope: &str) -> (StatusCode, Value) {
    let response = app.get_as(path, scope).await;
    (
        response.status(),
        response.json().await.unwrap_or(Value::Null),
    )
}

/// `bpmn:dataStore` declarations: `(id, kind class name)`.
fn declarations(stores: &[(&str, &str)]) -> String {
    stores
        .iter()
        .map(|(id, kind)| format!(r#"<bpmn:dataStore id="{id}" name="{kind}"/>"#))
        .collect()
}

/// One script task that writes (`output`) or reads (input) the stores, then ends.
fn store_task(process_id: &str, stores: &[(&str, &str)], output: bool, script: &str) -> String {
    let associations: String = stores
        .iter()
        .map(|(id, _)| {
            if output {
                format!(r#"<bpmn:dataOutputAssociation id="o_{id}"><bpmn:targetRef>ref_{id}</bpmn:targetRef></bpmn:dataOutputAssociation>"#)
            } else {
                format!(r#"<bpmn:dataInputAssociation id="i_{id}"><bpmn:sourceRef>ref_{id}</bpmn:sourceRef></bpmn:dataInputAssociation>"#)
            }
        })
        .collect();
    let references: String = stores
        .iter()
        .map(|(id, _)| format!(r#"<bpmn:dataStoreReference id="ref_{id}" dataStoreRef="{id}"/>"#))
        .collect();
    definitions(&format!(
        r#"{}<bpmn:process id="{process_id}" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="task"/>
<bpmn:scriptTask id="task">{associations}<bpmn:script>{script}</bpmn:script></bpmn:scriptTask>
<bpmn:sequenceFlow id="f2" sourceRef="task" targetRef="e"/><bpmn:endEvent id="e"/>{references}</bpmn:process>"#,
        declarations(stores)
    ))
}

const STORES: &[(&str, &str)] = &[
    ("vendors", "JSONDataStore"),
    ("limits", "JSONFileDataStore"),
    ("prices", "KKVDataStore"),
];

#[tokio::test]
async fn each_kind_of_store_is_written_by_one_instance_and_read_by_another() {
    let app = spawn_app().await;
    put_store_ok(
        &app,
        "json",
        "vendors",
        &json!({"location": "finance", "name": "Vendors"}),
    )
    .await;
    put_store_ok(
        &app,
        "json_file",
        "limits",
        &json!({"location": "finance", "data": {"max": 100}}),
    )
    .await;
    put_store_ok(&app, "kkv", "prices", &json!({})).await;
    let mut writes = STORES.to_vec();
    writes.push(("cities", "TypeaheadDataStore"));
    let writer = store_task(
        "write_stores",
        &writes,
        true,
        r#"vendors = ["acme"]
limits = {"max": 200}
prices = {"apple": {"red": 3, "green": 4}, "pear": {"ripe": 1}}
cities = {"city": [{"search_term": "Paris", "result": {"country": "FR"}}, {"search_term": "Oslo", "result": {"country": "NO"}}]}"#,
    );
    upload_ok(&app, "finance/writer", "writer.bpmn", &writer).await;
    let reader = store_task(
        "read_stores",
        STORES,
        false,
        r#"names = vendors
most = limits["max"]
red = prices("apple", "red")
apples = prices("apple")
plum = prices("plum", "x")"#,
    );
    upload_ok(&app, "finance/reader", "reader.bpmn", &reader).await;

    // before anything is written, the reader sees what the stores were created with
    let id = start_ok(&app, "finance/reader", &json!({})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"],
        json!({"names": {}, "most": 100, "red": null, "apples": {}, "plum": null})
    );

    let id = start_ok(&app, "finance/writer", &json!({})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"],
        json!({}),
        "written values leave the task data"
    );

    let id = start_ok(&app, "finance/reader", &json!({})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"],
        json!({"names": ["acme"], "most": 200, "red": 3, "apples": {"green": 4, "red": 3}, "plum": null})
    );

    // what the stores hold, as operators see it
    let (status, body) = get_as(
        &app,
        "/v1.0/data-stores/json/vendors?location=finance",
        "data-stores:read",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["data"], json!(["acme"]));
    assert_eq!(body["name"], "Vendors");
    let (_, body) = get_as(
        &app,
        "/v1.0/data-stores/kkv/prices?per_page=2",
        "data-stores:read",
    )
    .await;
    assert_eq!(body["total"], 3, "{body}");
    assert_eq!(
        body["entries"],
        json!([
            {"top_level_key": "apple", "secondary_key": "green", "value": 4},
            {"top_level_key": "apple", "secondary_key": "red", "value": 3},
        ])
    );
    let (_, body) = get_as(
        &app,
        "/v1.0/data-stores/typeahead/city?prefix=Pa",
        "data-stores:read",
    )
    .await;
    assert_eq!(
        body["items"],
        json!([{"search_term": "Paris", "result": {"country": "FR"}}]),
        "{body}"
    );
    assert_eq!(body["total"], 1);
    let (_, body) = get_as(&app, "/v1.0/data-stores", "data-stores:read").await;
    let listed: Vec<(&str, &str, &str)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["kind"].as_str().unwrap(),
                s["identifier"].as_str().unwrap(),
                s["location"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("json", "vendors", "finance"),
            ("json_file", "limits", "finance"),
            ("kkv", "prices", ""),
            ("typeahead", "city", ""),
        ]
    );

    // a KKV write of None deletes; a second write of a category replaces it
    let deleter = store_task(
        "delete_prices",
        &[("prices", "KKVDataStore"), ("cities", "TypeaheadDataStore")],
        true,
        r#"prices = {"apple": None, "pear": {"ripe": None, "raw": 2}}
cities = {"city": [{"search_term": "Rome", "result": {}}]}"#,
    );
    upload_ok(&app, "finance/deleter", "deleter.bpmn", &deleter).await;
    start_ok(&app, "finance/deleter", &json!({})).await;
    let (_, body) = get_as(&app, "/v1.0/data-stores/kkv/prices", ADMIN).await;
    assert_eq!(
        body["entries"],
        json!([{"top_level_key": "pear", "secondary_key": "raw", "value": 2}])
    );
    let (_, body) = get_as(&app, "/v1.0/data-stores/typeahead/city", ADMIN).await;
    assert_eq!(
        body["items"],
        json!([{"search_term": "Rome", "result": {}}])
    );
}

/// A model uses the store of its identifier at the deepest location containing the model;
/// a model outside every location of the store fails the reading task with the reason.
#[tokio::test]
async fn a_model_uses_the_store_at_its_deepest_location() {
    let app = spawn_app().await;
    put_store_ok(&app, "json", "vendors", &json!({"data": "everyone's"})).await;
    put_store_ok(
        &app,
        "json",
        "vendors",
        &json!({"location": "finance", "data": "finance's"}),
    )
    .await;
    put_store_ok(
        &app,
        "json",
        "rates",
        &json!({"location": "finance:eu", "data": 1.1}),
    )
    .await;
    for (model, process_id) in [
        ("finance/eu/reader", "eu_reader"),
        ("sales/reader", "sales_reader"),
    ] {
        let reader = store_task(
            process_id,
            &[("vendors", "JSONDataStore")],
            false,
            "seen = vendors",
        );
        upload_ok(&app, model, "reader.bpmn", &reader).await;
    }
    let id = start_ok(&app, "finance/eu/reader", &json!({})).await;
    assert_eq!(show(&app, id).await["data"], json!({"seen": "finance's"}));
    let id = start_ok(&app, "sales/reader", &json!({})).await;
    assert_eq!(show(&app, id).await["data"], json!({"seen": "everyone's"}));

    let rates = store_task(
        "read_rates",
        &[("rates", "JSONDataStore")],
        false,
        "seen = rates",
    );
    upload_ok(&app, "sales/rates", "rates.bpmn", &rates).await;
    let (status, body) = start(&app, "sales/rates", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let instance = &body["process_instance"];
    assert_eq!(instance["status"], "error", "{body}");
    assert_eq!(instance["error"]["element_id"], "task");
    let message = instance["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Unable to read from data store 'rates': no JSONDataStore 'rates' exists for the model 'sales/rates' (create it with PUT /v1.0/data-stores/json/rates)"),
        "{message}"
    );

    // writing needs the store too, and a failed write stores nothing
    let writer = store_task(
        "write_rates",
        &[("rates", "JSONDataStore")],
        true,
        "rates = 2",
    );
    upload_ok(&app, "sales/write", "write.bpmn", &writer).await;
    let (_, body) = start(&app, "sales/write", &json!({})).await;
    let message = body["process_instance"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("Unable to write to data store 'rates'"),
        "{message}"
    );
    let (_, body) = get_as(
        &app,
        "/v1.0/data-stores/json/rates?location=finance:eu",
        ADMIN,
    )
    .await;
    assert_eq!(body["data"], json!(1.1));
}

/// A model whose stores SpiffArena could not run is refused at upload, naming the element.
#[tokio::test]
async fn models_with_stores_that_cannot_be_used_are_refused_at_upload() {
    let app = spawn_app().await;
    let cases = [
        (
            store_task("p1", &[("d", "RedisDataStore")], false, "x = d"),
            "d",
            "data store name 'RedisDataStore' is no data store kind here",
        ),
        (
            store_task("p2", &[("d", "TypeaheadDataStore")], false, "x = d"),
            "task",
            "which can only be written",
        ),
    ];
    for (xml, element, reason) in cases {
        let (status, body) = upload(&app, "bad/stores", "m.bpmn", &xml).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error_code"], "invalid_process_model", "{body}");
        assert_eq!(body["element_id"], element, "{body}");
        assert!(body["reason"].as_str().unwrap().contains(reason), "{body}");
    }
}

#[tokio::test]
async fn the_admin_endpoints_check_what_they_are_given() {
    let app = spawn_app().await;
    let cases = [
        ("typeahead", "city", json!({}), "invalid_data_store_kind"),
        ("redis", "x", json!({}), "invalid_data_store_kind"),
        ("json", "9lives", json!({}), "invalid_data_store_identifier"),
        (
            "json",
            "x",
            json!({"location": "../etc"}),
            "invalid_data_store_location",
        ),
        (
            "kkv",
            "x",
            json!({"data": {"a": {"b": 1}}}),
            "invalid_payload",
        ),
        ("json", "x", json!({"data": "a\u{0}b"}), "invalid_payload"),
        ("json", "x", json!({"colour": "red"}), "invalid_json"),
    ];
    for (kind, identifier, body, code) in cases {
        let (status, body) = problem(put_store(&app, kind, identifier, &body).await).await;
        assert_eq!(
            (status, body["error_code"].as_str()),
            (StatusCode::BAD_REQUEST, Some(code)),
            "{kind}/{identifier}: {body}"
        );
    }
    // an update keeps what it does not change
    put_store_ok(&app, "json", "x", &json!({"data": [1]})).await;
    let response = put_store(&app, "json", "x", &json!({"description": "one list"})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (body["data"].clone(), body["description"].clone()),
        (json!([1]), json!("one list"))
    );

    // scopes
    let (status, _) = get_as(&app, "/v1.0/data-stores", "models:read").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let response = app
        .request(Method::PUT, "/v1.0/data-stores/json/y")
        .bearer_auth(app.token("data-stores:read"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    // delete, then it is gone
    let delete = |path: &'static str| {
        app.request(Method::DELETE, path)
            .bearer_auth(app.token("data-stores:write"))
            .send()
    };
    assert_eq!(
        delete("/v1.0/data-stores/json/x").await.unwrap().status(),
        StatusCode::NO_CONTENT
    );
    let (status, body) = problem(delete("/v1.0/data-stores/json/x").await.unwrap()).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("data_store_not_found"))
    );
    let (status, body) = problem(app.get_as("/v1.0/data-stores/kkv/nothing", ADMIN).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("data_store_not_found"))
    );
    let (status, body) = problem(app.get_as("/v1.0/data-stores?kind=redis", ADMIN).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_query"))
    );
}
