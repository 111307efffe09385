//! The example of each successful answer in the OpenAPI document, written by hand: a real
//! answer of the case it shows, so that Swagger UI never shows what an example generated from
//! the schema would (a started instance with an `error` and status `running`, a buffered
//! message with a `failure_reason`).
//!
//! The examples are the answers of one small world, taken from a server that ran it (ids,
//! guids and times then fixed): the model `shop/orders` (the `order placed` message starts an
//! order, which waits for `payment received` with its `order_id`), `finance/invoices` (a user
//! task `approve`, then a script; its decision `discount`), `crm/scoring` (a service task
//! whose connector answers by callback), `finance/closing` (started by the signal `quarter
//! closed`), the secret `SMTP_PASSWORD`, the API key `order-service` and the JSON data store
//! `approved_vendors`. `tests/api/openapi_examples.rs` runs the same world and compares every
//! answer with its example.

use serde_json::{json, Value};

/// The file of `shop/orders` (the example of an upload, and of a download).
pub const ORDERS_BPMN: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:spiffworkflow="http://spiffworkflow.org/bpmn/schema/1.0/core" id="shop" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:collaboration id="shop_orders">
    <bpmn:participant id="p_orders" processRef="orders" />
    <bpmn:correlationKey name="order"><bpmn:correlationPropertyRef>order_id</bpmn:correlationPropertyRef></bpmn:correlationKey>
  </bpmn:collaboration>
  <bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_placed"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_paid"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_placed" name="order placed" />
  <bpmn:message id="m_paid" name="payment received" />
  <bpmn:process id="orders" name="Orders" isExecutable="true">
    <bpmn:startEvent id="placed" name="Order placed">
      <bpmn:messageEventDefinition id="placed_message" messageRef="m_placed"><bpmn:extensionElements><spiffworkflow:messageVariable>order</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="placed" targetRef="paid" />
    <bpmn:intermediateCatchEvent id="paid" name="Payment received">
      <bpmn:messageEventDefinition id="paid_message" messageRef="m_paid"><bpmn:extensionElements><spiffworkflow:messageVariable>payment</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="shipped" />
    <bpmn:endEvent id="shipped" name="Shipped" />
  </bpmn:process>
</bpmn:definitions>
"#;

/// One example of a response.
struct Example {
    operation: &'static str,
    status: u16,
    /// Set when a response has several examples (Swagger UI lists them by name).
    name: Option<(&'static str, &'static str)>,
    value: Value,
}

/// Puts each example on its response (`example`, or `examples` by name) in `doc`, a
/// serialised OpenAPI document.
pub fn add_answer_examples(doc: &mut Value) {
    for example in answers() {
        let Some(media) = media_of(doc, example.operation, example.status) else {
            continue; // every example names a documented response: see the tests below
        };
        match example.name {
            None => media["example"] = example.value,
            Some((name, summary)) => {
                media["examples"][name] = json!({"summary": summary, "value": example.value});
            }
        }
    }
}

/// The JSON (or XML) content of an operation's response.
fn media_of<'a>(doc: &'a mut Value, operation: &str, status: u16) -> Option<&'a mut Value> {
    let paths = doc.get_mut("paths")?.as_object_mut()?;
    let found = paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .find(|o| o["operationId"] == operation)?;
    let content = found
        .get_mut("responses")?
        .get_mut(status.to_string())?
        .get_mut("content")?
        .as_object_mut()?;
    content.values_mut().next()
}

/// The version of `shop/orders` ([`ORDERS_BPMN`]).
const ORDERS_VERSION: &str = "4c071079be8c8da580df5c6748815e34b0a34752d0738b9ede28290c63df130e";
/// The first and the second version of `finance/invoices`.
const INVOICES_V1: &str = "5ea1315a57a5bd1938e997d61b033a055409d2d7ae9dd0cea5cab16c16439f66";
const INVOICES_V2: &str = "cb056df92623c7c1e94784ce7750c602de66ed23bf28062f6e4e7604dd7c9373";
const SCORING_VERSION: &str = "d243285bedc1b4dd497f1b144d935068669f96467e17e9c41affbb55ef819091";

fn example(operation: &'static str, status: u16, value: Value) -> Example {
    Example {
        operation,
        status,
        name: None,
        value,
    }
}

fn named(
    operation: &'static str,
    status: u16,
    name: &'static str,
    summary: &'static str,
    value: Value,
) -> Example {
    Example {
        operation,
        status,
        name: Some((name, summary)),
        value,
    }
}

/// An instance as the answers of a step show it (`InstanceAnswer`).
fn instance(
    (id, model, process_id, version): (i64, &str, &str, &str),
    status: &str,
    (created_at, updated_at): (&str, &str),
    task_data: Value,
) -> Value {
    json!({
        "process_instance": {
            "id": id,
            "process_model_identifier": model,
            "process_model_version": version,
            "process_id": process_id,
            "status": status,
            "error": null,
            "created_at": created_at,
            "updated_at": updated_at
        },
        "task_data": task_data
    })
}

/// The instances of the world: (id, model, process, version).
const ORDER: (i64, &str, &str, &str) = (3187, "shop/orders", "orders", ORDERS_VERSION);
const INVOICE: (i64, &str, &str, &str) = (3188, "finance/invoices", "invoices", INVOICES_V1);
const SUSPENDED: (i64, &str, &str, &str) = (3189, "finance/invoices", "invoices", INVOICES_V1);
const MIGRATED: (i64, &str, &str, &str) = (3190, "finance/invoices", "invoices", INVOICES_V2);
const RETRIED: (i64, &str, &str, &str) = (3191, "finance/invoices", "invoices", INVOICES_V2);

/// `shop/orders` as its upload answers it.
fn orders_model() -> Value {
    json!({
        "id": "shop/orders",
        "identifier": "shop/orders",
        "modified_process_model_identifier": "shop:orders",
        "display_name": "orders",
        "primary_file_name": null,
        "primary_process_id": "orders",
        "summary": {
            "primary_process_id": "orders",
            "files": ["orders.bpmn"],
            "processes": [{
                "id": "orders",
                "name": "Orders",
                "file": "orders.bpmn",
                "is_primary": true,
                "start_events": [{
                    "id": "placed",
                    "name": "Order placed",
                    "kind": "message",
                    "message_name": "order placed",
                    "signal_name": null
                }]
            }],
            "start_messages": ["order placed"],
            "waits_for_messages": ["payment received"],
            "sends_messages": [],
            "correlation_properties": [{
                "id": "order_id",
                "name": "order id",
                "messages": ["order placed", "payment received"]
            }],
            "service_operators": []
        },
        "version_sha": ORDERS_VERSION,
        "created_at": "2026-03-02T09:12:41.725846Z",
        "updated_at": "2026-03-02T09:12:41.725846Z",
        "current_version": ORDERS_VERSION,
        "versions_in_use": [],
        "files": [{
            "name": "orders.bpmn",
            "sha256": "33817328c6ace12fd1e96d6c53733b8ca92c842d4a0ec0981af32975dfc41aee",
            "size": 1950
        }],
        "warnings": []
    })
}

/// `finance/invoices` (its process and its decision file) at `version`, with the versions
/// live instances run on.
fn invoices_model(
    version: &str,
    (bpmn_sha256, size): (&str, u64),
    updated_at: &str,
    in_use: Value,
) -> Value {
    json!({
        "id": "finance/invoices",
        "identifier": "finance/invoices",
        "modified_process_model_identifier": "finance:invoices",
        "display_name": "invoices",
        "primary_file_name": null,
        "primary_process_id": "invoices",
        "summary": {
            "primary_process_id": "invoices",
            "files": ["invoices.bpmn"],
            "processes": [{
                "id": "invoices",
                "name": "Invoices",
                "file": "invoices.bpmn",
                "is_primary": true,
                "start_events": [{
                    "id": "start",
                    "name": null,
                    "kind": "none",
                    "message_name": null,
                    "signal_name": null
                }]
            }],
            "start_messages": [],
            "waits_for_messages": [],
            "sends_messages": [],
            "correlation_properties": [],
            "service_operators": []
        },
        "version_sha": version,
        "created_at": "2026-03-02T09:12:41.750082Z",
        "updated_at": updated_at,
        "current_version": version,
        "versions_in_use": in_use,
        "files": [
            {
                "name": "discount.dmn",
                "sha256": "2182444b55c618b1027c3df3e8302ca72dc6c4caedac852674166dccebd024bd",
                "size": 924
            },
            {"name": "invoices.bpmn", "sha256": bpmn_sha256, "size": size}
        ],
        "warnings": []
    })
}

/// A message instance's fields, as lists and the message itself show them.
fn message_fields(id: i64, name: &str, correlation: &str, created_at: &str) -> Value {
    json!({
        "id": id,
        "name": name,
        "message_type": "send",
        "status": "completed",
        "state": "completed",
        "correlation_key": correlation,
        "process_instance_id": ORDER.0,
        "process_model_identifier": "shop/orders",
        "task_guid": null,
        "message_instance_uuid": null,
        "expires_at": null,
        "expires_at_in_seconds": null,
        "counterpart_id": 8411,
        "failure_cause": null,
        "failure_reason": null,
        "created_by": "alice",
        "created_at": created_at,
        "updated_at": created_at,
        "created_at_in_seconds": 1772442761,
        "updated_at_in_seconds": 1772442761
    })
}

fn with(mut value: Value, members: Value) -> Value {
    if let (Value::Object(value), Value::Object(members)) = (&mut value, members) {
        value.extend(members);
    }
    value
}

fn api_key(revoked_at: Value) -> Value {
    json!({
        "name": "order-service",
        "prefix": "wbk_58e78394",
        "scopes": ["messages:send", "instances:read:*"],
        "created_by": "alice",
        "created_at": "2026-03-02T09:12:42.834302Z",
        "expires_at": "2026-05-31T09:12:42.834302Z",
        "revoked_at": revoked_at,
        "last_used_at": null
    })
}

fn vendors_store(updated_at: &str) -> Value {
    json!({
        "kind": "json",
        "identifier": "approved_vendors",
        "location": "finance",
        "name": "Approved vendors",
        "description": "Vendors invoices may be paid to",
        "created_at": "2026-03-02T09:12:42.868251Z",
        "updated_at": updated_at,
        "data": {"vendors": ["ACME", "Globex"]}
    })
}

fn answers() -> Vec<Example> {
    let order_placed = json!({"order": {"order_id": "A1", "amount": 12}});
    let invoice_data = json!({"customer_id": "C-42", "amount": 120});
    let suspended_data = json!({"customer_id": "C-7", "amount": 80});
    let started = ("2026-03-02T09:12:41.844914Z", "2026-03-02T09:12:41.844914Z");
    let invoiced = ("2026-03-02T09:12:42.031339Z", "2026-03-02T09:12:42.031339Z");
    let page = |count: usize, total: i64, pages: i64| json!({"count": count, "total": total, "total_exact": true, "pages": pages});
    let secret = |updated_at: &str| {
        json!({
            "name": "SMTP_PASSWORD",
            "created_at": "2026-03-02T09:12:42.771707Z",
            "updated_at": updated_at
        })
    };
    vec![
        example("status", 200, json!({"ok": true})),
        example(
            "ready",
            200,
            json!({
                "ok": true,
                "database": "up",
                "connector_jobs_waiting": 0,
                "warnings": [
                    "autovacuum is turned off for the tables message_instances: they are not analysed or vacuumed"
                ]
            }),
        ),
        // messages
        named(
            "send_message",
            200,
            "started",
            "Started an instance (a Message Start Event has this name); it now waits for `payment received`",
            instance(ORDER, "waiting", started, order_placed.clone()),
        ),
        named(
            "send_message",
            200,
            "correlated",
            "Delivered to the instance waiting for it with these correlation values, which ran to its end",
            instance(
                ORDER,
                "complete",
                ("2026-03-02T09:12:41.844914Z", "2026-03-02T09:12:41.873777Z"),
                with(order_placed, json!({"payment": {"order_id": "A1", "paid": true}})),
            ),
        ),
        example(
            "send_message",
            202,
            json!({"message_instance": {
                "id": 8414,
                "name": "payment received",
                "message_type": "send",
                "status": "ready",
                "state": "buffered",
                "correlation_key": "{\"order_id\":\"A2\"}",
                "process_instance_id": null,
                "process_model_identifier": null,
                "task_guid": null,
                "message_instance_uuid": "6f1c2a4e-8d1b-4c3a-9f57-2b0e8e4d9a11",
                "expires_at": "2026-03-02T09:17:41.886487Z",
                "expires_at_in_seconds": 1772443061,
                "counterpart_id": null,
                "failure_cause": null,
                "failure_reason": null,
                "created_by": "alice",
                "created_at": "2026-03-02T09:12:41.883006Z",
                "updated_at": "2026-03-02T09:12:41.883006Z",
                "created_at_in_seconds": 1772442761,
                "updated_at_in_seconds": 1772442761,
                "payload": {"order_id": "A2", "paid": true},
                "correlation_keys": {"order_id": "A2"}
            }}),
        ),
        example(
            "list_messages",
            200,
            json!({
                "results": [with(
                    message_fields(8413, "payment received", "{\"order_id\":\"A1\"}", "2026-03-02T09:12:41.873777Z"),
                    json!({"truncated": false}),
                )],
                "pagination": page(1, 2, 2)
            }),
        ),
        example(
            "show_message",
            200,
            with(
                message_fields(8413, "payment received", "{\"order_id\":\"A1\"}", "2026-03-02T09:12:41.873777Z"),
                json!({
                    "payload": {"order_id": "A1", "paid": true},
                    "correlation_keys": {"order_id": "A1"}
                }),
            ),
        ),
        // process models
        example("put_file", 201, orders_model()),
        example(
            "put_file",
            200,
            invoices_model(
                INVOICES_V2,
                ("d5d800de8a7089ad8af9c3c585b044e501bf61df8315c8900375f984a55122de", 842),
                "2026-03-02T09:12:42.351841Z",
                json!([{
                    "version_sha": INVOICES_V1,
                    "live_instances": 2,
                    "created_at": "2026-03-02T09:12:41.766855Z",
                    "current": false
                }]),
            ),
        ),
        example(
            "list_models",
            200,
            json!({
                "results": [{
                    "id": "crm/scoring",
                    "identifier": "crm/scoring",
                    "modified_process_model_identifier": "crm:scoring",
                    "display_name": "scoring",
                    "primary_file_name": null,
                    "primary_process_id": "scoring",
                    "summary": {
                        "primary_process_id": "scoring",
                        "files": ["scoring.bpmn"],
                        "processes": [{
                            "id": "scoring",
                            "name": "Scoring",
                            "file": "scoring.bpmn",
                            "is_primary": true,
                            "start_events": [{
                                "id": "start",
                                "name": null,
                                "kind": "none",
                                "message_name": null,
                                "signal_name": null
                            }]
                        }],
                        "start_messages": [],
                        "waits_for_messages": [],
                        "sends_messages": [],
                        "correlation_properties": [],
                        "service_operators": ["bureau/CreditScore"]
                    },
                    "version_sha": SCORING_VERSION,
                    "created_at": "2026-03-02T09:12:41.777251Z",
                    "updated_at": "2026-03-02T09:12:41.777251Z"
                }],
                "pagination": page(1, 4, 4)
            }),
        ),
        example(
            "show_model",
            200,
            invoices_model(
                INVOICES_V1,
                ("b5337ed3380af257fcd7f7517b6ed05b03a2cf9f9a68eecc9c48189835b5728d", 801),
                "2026-03-02T09:12:41.766855Z",
                json!([{
                    "version_sha": INVOICES_V1,
                    "live_instances": 1,
                    "created_at": "2026-03-02T09:12:41.766855Z",
                    "current": true
                }]),
            ),
        ),
        example("get_file", 200, json!(ORDERS_BPMN)),
        // process instances
        example(
            "start_instance",
            201,
            instance(INVOICE, "user_input_required", invoiced, invoice_data.clone()),
        ),
        example(
            "show_instance",
            200,
            json!({
                "id": INVOICE.0,
                "process_model_identifier": "finance/invoices",
                "process_model_version": INVOICES_V1,
                "process_id": "invoices",
                "status": "user_input_required",
                "error": null,
                "created_at": invoiced.0,
                "updated_at": invoiced.1,
                "process_file_name": "invoices.bpmn",
                "data": invoice_data.clone(),
                "correlations": {},
                "data_objects": {},
                "tasks": [
                    {
                        "guid": "d684da62-51b7-47db-ad5b-0968425d2a4b",
                        "element_id": "start",
                        "element_type": "startEvent",
                        "name": null,
                        "state": "COMPLETED",
                        "scope": null,
                        "process_id": "invoices",
                        "data": null,
                        "retries_attempted": 0,
                        "retry_at": null,
                        "created_at": invoiced.0,
                        "updated_at": invoiced.0
                    },
                    {
                        "guid": "d684da62-51b7-47db-ad5b-0968425d2a4c",
                        "element_id": "approve",
                        "element_type": "userTask",
                        "name": "Approve the invoice",
                        "state": "WAITING",
                        "scope": null,
                        "process_id": "invoices",
                        "data": null,
                        "retries_attempted": 0,
                        "retry_at": null,
                        "created_at": invoiced.0,
                        "updated_at": invoiced.0
                    }
                ],
                "pending_timers": []
            }),
        ),
        example(
            "list_instances",
            200,
            json!({
                "results": [instance(INVOICE, "user_input_required", invoiced, json!({}))["process_instance"].clone()],
                "pagination": page(1, 1, 1)
            }),
        ),
        example(
            "complete_task",
            200,
            instance(
                INVOICE,
                "complete",
                ("2026-03-02T09:12:42.031339Z", "2026-03-02T09:12:42.114331Z"),
                with(
                    invoice_data,
                    json!({"approved": true, "comment": "fine", "total": 144}),
                ),
            ),
        ),
        example(
            "suspend",
            200,
            instance(
                SUSPENDED,
                "suspended",
                ("2026-03-02T09:12:42.152989Z", "2026-03-02T09:12:42.164901Z"),
                suspended_data.clone(),
            ),
        ),
        example(
            "resume",
            200,
            instance(
                SUSPENDED,
                "user_input_required",
                ("2026-03-02T09:12:42.152989Z", "2026-03-02T09:12:42.177795Z"),
                suspended_data.clone(),
            ),
        ),
        example(
            "terminate",
            200,
            instance(
                SUSPENDED,
                "terminated",
                ("2026-03-02T09:12:42.152989Z", "2026-03-02T09:12:42.280155Z"),
                suspended_data,
            ),
        ),
        example(
            "migrate_instance",
            200,
            with(
                instance(
                    MIGRATED,
                    "user_input_required",
                    ("2026-03-02T09:12:42.323477Z", "2026-03-02T09:12:42.362012Z"),
                    json!({"customer_id": "C-8", "amount": 50}),
                ),
                json!({"previous_version": INVOICES_V1}),
            ),
        ),
        example(
            "retry",
            200,
            instance(
                RETRIED,
                "complete",
                ("2026-03-02T09:12:42.327348Z", "2026-03-02T09:12:42.379646Z"),
                json!({"customer_id": "C-9", "approved": true, "total": 0}),
            ),
        ),
        // decisions
        example(
            "show_decision",
            200,
            json!({
                "decision_id": "discount",
                "name": "Discount",
                "process_model_identifier": "finance/invoices",
                "file_name": "discount.dmn",
                "hit_policy": "UNIQUE",
                "aggregation": null,
                "inputs": [{"id": "amount_in", "label": "Amount", "expression": "amount"}],
                "outputs": [{"id": "discount_out", "label": null, "name": "discount", "output_values": []}],
                "rules": [
                    {"id": "small", "row": 1, "description": "Small invoices", "input_entries": ["< 100"], "output_entries": ["0"]},
                    {"id": "large", "row": 2, "description": "Large invoices", "input_entries": [">= 100"], "output_entries": ["10"]}
                ]
            }),
        ),
        example(
            "evaluate_decision",
            200,
            json!({
                "decision_id": "discount",
                "process_model_identifier": "finance/invoices",
                "hit_policy": "UNIQUE",
                "matched_rules": [{"id": "large", "row": 2, "description": "Large invoices"}],
                "selected_rules": [{"id": "large", "row": 2, "description": "Large invoices"}],
                "result": {"discount": 10}
            }),
        ),
        // signals
        example(
            "send_signal",
            200,
            json!({"signal_name": "quarter closed", "delivered_to": [], "started": [3192]}),
        ),
        // service tasks
        example(
            "service_tasks",
            200,
            json!([{"id": "bureau/CreditScore", "parameters": [
                {"id": "customer_id", "type": "str", "required": true}
            ]}]),
        ),
        example(
            "authentications",
            200,
            json!([{"id": "bureau/OAuth", "parameters": [
                {"id": "client_id", "type": "str", "required": true},
                {"id": "client_secret", "type": "str", "required": true}
            ]}]),
        ),
        example(
            "callback",
            200,
            json!({
                "ok": true,
                "status": "completed",
                "process_instance_id": 3193,
                "process_model_identifier": "crm/scoring"
            }),
        ),
        example(
            "connector_logs",
            200,
            json!({
                "results": [
                    {
                        "id": 120,
                        "task_guid": "c365ae4d-ad50-40c6-a58e-3f6a657792a5",
                        "line": "queued at the bureau",
                        "created_at": "2026-03-02T09:12:42.619635Z"
                    },
                    {
                        "id": 121,
                        "task_guid": "c365ae4d-ad50-40c6-a58e-3f6a657792a5",
                        "line": "scored by the bureau",
                        "created_at": "2026-03-02T09:12:42.636828Z"
                    }
                ],
                "pagination": page(2, 2, 1)
            }),
        ),
        // secrets
        example("put_secret", 201, secret("2026-03-02T09:12:42.771707Z")),
        example("put_secret", 200, secret("2026-03-02T09:12:42.776727Z")),
        example(
            "list_secrets",
            200,
            json!({"results": [secret("2026-03-02T09:12:42.776727Z")], "pagination": page(1, 1, 1)}),
        ),
        // API keys
        example(
            "create_api_key",
            201,
            with(
                api_key(Value::Null),
                json!({"key": "wbk_58e783942b749c862679278c2a15f1930a8ca77642c56994e9e3f487a98a"}),
            ),
        ),
        example("list_api_keys", 200, json!({"results": [api_key(Value::Null)]})),
        example(
            "revoke_api_key",
            200,
            api_key(json!("2026-03-02T09:12:42.859121Z")),
        ),
        // data stores
        example("put_data_store", 201, vendors_store("2026-03-02T09:12:42.868251Z")),
        example("put_data_store", 200, vendors_store("2026-03-02T09:12:42.881097Z")),
        example("show_data_store", 200, vendors_store("2026-03-02T09:12:42.881097Z")),
        example(
            "list_data_stores",
            200,
            json!({"results": [{
                "kind": "json",
                "identifier": "approved_vendors",
                "location": "finance",
                "name": "Approved vendors",
                "description": "Vendors invoices may be paid to",
                "updated_at": "2026-03-02T09:12:42.881097Z"
            }]}),
        ),
        example(
            "overview",
            200,
            json!({
                "generated_at": "2026-03-02T09:12:43.102934Z",
                "count_cap": 10000,
                "models": [{
                    "process_model_identifier": "finance/invoices",
                    "counts": {"complete": 1, "error": 1, "running": 0, "suspended": 0,
                               "terminated": 2, "user_input_required": 1, "waiting": 0},
                    "capped": []
                }],
                "models_truncated": false,
                "errors": [{
                    "process_model_identifier": "finance/invoices",
                    "element_id": "total",
                    "message": "NameError: name 'amount' is not defined (line 1, column 9) (in the script)",
                    "count": 1
                }],
                "messages": {
                    "buffered_now": 1,
                    "last_hour": {"accepted": 0, "buffered": 1, "completed": 2, "rejected": 1}
                }
            }),
        ),
        example(
            "message_chart",
            200,
            json!({
                "window": "hour",
                "bucket_seconds": 60,
                "since": "2026-03-02T08:13:00Z",
                "until": "2026-03-02T09:13:00Z",
                "buckets": [{
                    "start": "2026-03-02T09:12:00Z",
                    "counts": {"accepted": 0, "buffered": 1, "completed": 2, "rejected": 1}
                }],
                "complete": true,
                "counted_since": null
            }),
        ),
        example(
            "element_counts",
            200,
            json!({
                "process_model_identifier": "finance/invoices",
                "version_sha": INVOICES_V1,
                "elements": [{"element_id": "approve", "waiting": 1, "error": 0}],
                "other_versions": {"waiting": 0, "error": 0}
            }),
        ),
        example(
            "bulk",
            200,
            json!({
                "action": "suspend",
                "results": [
                    {"process_instance_id": 3194, "outcome": "done", "status": "suspended",
                     "error_code": null, "detail": null},
                    {"process_instance_id": 999999, "outcome": "refused", "status": null,
                     "error_code": "process_instance_not_found",
                     "detail": "process instance 999999 does not exist"}
                ],
                "done": 1,
                "refused": 1
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiDoc;
    use utoipa::OpenApi;

    #[test]
    fn every_example_names_a_documented_response() {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        for example in answers() {
            assert!(
                media_of(&mut doc, example.operation, example.status).is_some(),
                "{} {}: no such response with content",
                example.operation,
                example.status
            );
        }
    }
}
