//! DMN decisions over HTTP: `.dmn` files upload with a model, business rule tasks evaluate
//! them (each hit policy, inside a multi-instance task, from another model), the decision
//! endpoints show and try them, and what cannot run is refused at upload.

use crate::domain::{get, show, start_ok, upload, upload_ok, ADMIN};
use crate::helpers::{problem, spawn_app, TestApp};
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A decision table: `(id, hitPolicy attributes, output element, rules)`; a rule is
/// `(input entry, output entry)`.
type Table<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A DMN file of decision tables whose input is always `amount`.
fn dmn(tables: &[Table]) -> String {
    let decisions: String = tables
        .iter()
        .map(|(id, policy, output, rules)| {
            let rules: String = rules
                .iter()
                .enumerate()
                .map(|(i, (entry, out))| {
                    format!(
                        r#"<rule id="{id}_r{i}"><description>{id} row {}</description><inputEntry id="{id}_i{i}"><text>{entry}</text></inputEntry><outputEntry id="{id}_o{i}"><text>{out}</text></outputEntry></rule>"#,
                        i + 1
                    )
                })
                .collect();
            format!(
                r#"<decision id="{id}" name="{id}"><decisionTable id="{id}_table" {policy}><input id="{id}_in" label="Amount"><inputExpression id="{id}_ie" typeRef="integer"><text>amount</text></inputExpression></input>{output}{rules}</decisionTable></decision>"#
            )
        })
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="pricing" name="Pricing" namespace="http://camunda.org/schema/1.0/dmn">{decisions}</definitions>"#
    )
}

fn output(name: &str) -> String {
    format!(r#"<output id="{name}_out" name="{name}" typeRef="string"/>"#)
}

fn ranked_output(name: &str, values: &str) -> String {
    format!(
        r#"<output id="{name}_out" name="{name}" typeRef="string"><outputValues><text>{values}</text></outputValues></output>"#
    )
}

/// One table per hit policy.
fn every_policy() -> String {
    dmn(&[
        (
            "by_unique",
            r#"hitPolicy="UNIQUE""#,
            &output("tier"),
            &[("&lt; 100", r#""small""#), ("&gt;= 100", r#""large""#)],
        ),
        (
            "by_first",
            r#"hitPolicy="FIRST""#,
            &output("first"),
            &[("&gt; 10", r#""over ten""#), ("&gt; 0", r#""positive""#)],
        ),
        (
            "by_priority",
            r#"hitPolicy="PRIORITY""#,
            &ranked_output("medal", r#""gold","silver","bronze""#),
            &[
                ("&gt; 0", r#""bronze""#),
                ("&gt; 50", r#""gold""#),
                ("&gt; 10", r#""silver""#),
            ],
        ),
        (
            "by_any",
            r#"hitPolicy="ANY""#,
            &output("any_ok"),
            &[("&gt; 0", r#""yes""#), ("&gt; 10", r#""yes""#)],
        ),
        (
            "by_collect",
            r#"hitPolicy="COLLECT""#,
            &output("letters"),
            &[
                ("&gt; 0", r#""a""#),
                ("&gt; 10", r#""b""#),
                ("&gt; 1000", r#""c""#),
            ],
        ),
        (
            "by_sum",
            r#"hitPolicy="COLLECT" aggregation="SUM""#,
            &output("score"),
            &[("&gt; 0", "1"), ("&gt; 10", "10"), ("&gt; 100", "100")],
        ),
        (
            "by_count",
            r#"hitPolicy="COLLECT" aggregation="COUNT""#,
            &output("hits"),
            &[("&gt; 0", "1"), ("&gt; 10", "1"), ("&gt; 100", "1")],
        ),
        (
            "by_rule_order",
            r#"hitPolicy="RULE ORDER""#,
            &output("in_rule_order"),
            &[("&gt; 0", r#""x1""#), ("&gt; 10", r#""x2""#)],
        ),
        (
            "by_output_order",
            r#"hitPolicy="OUTPUT ORDER""#,
            &ranked_output("by_rank", r#""low","high""#),
            &[("&gt; 0", r#""high""#), ("&gt; 10", r#""low""#)],
        ),
        (
            "any_disagreeing",
            r#"hitPolicy="ANY""#,
            &output("verdict"),
            &[("&gt; 0", r#""yes""#), ("&gt; 10", r#""no""#)],
        ),
    ])
}

/// A process of business rule tasks, one per decision id, in a row.
fn deciding(process_id: &str, decisions: &[&str]) -> String {
    let mut body = format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true"><bpmn:startEvent id="start"/>"#
    );
    let mut previous = "start".to_string();
    for (i, decision) in decisions.iter().enumerate() {
        body.push_str(&format!(
            r#"<bpmn:sequenceFlow id="f{i}" sourceRef="{previous}" targetRef="decide_{decision}"/><bpmn:businessRuleTask id="decide_{decision}" name="Decide {decision}"><bpmn:extensionElements><spiffworkflow:calledDecisionId>{decision}</spiffworkflow:calledDecisionId></bpmn:extensionElements></bpmn:businessRuleTask>"#
        ));
        previous = format!("decide_{decision}");
    }
    body.push_str(&format!(
        r#"<bpmn:sequenceFlow id="f_end" sourceRef="{previous}" targetRef="done"/><bpmn:endEvent id="done"/></bpmn:process>"#
    ));
    definitions(&body)
}

async fn evaluate(app: &TestApp, decision: &str, body: &Value) -> reqwest::Response {
    app.post_json(&format!("/v1.0/decisions/{decision}/evaluate"), body, ADMIN)
        .await
}

async fn evaluate_ok(app: &TestApp, decision: &str, amount: i64) -> Value {
    let response = evaluate(app, decision, &json!({"data": {"amount": amount}})).await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test]
async fn each_hit_policy_decides_in_a_business_rule_task() {
    let app = spawn_app().await;
    let policies = [
        "by_unique",
        "by_first",
        "by_priority",
        "by_any",
        "by_collect",
        "by_sum",
        "by_count",
        "by_rule_order",
        "by_output_order",
    ];
    // a model's first file is a .bpmn file; its decisions come with it
    upload_ok(
        &app,
        "billing/pricing",
        "price.bpmn",
        &deciding("price", &policies),
    )
    .await;
    upload_ok(&app, "billing/pricing", "pricing.dmn", &every_policy()).await;

    let id = start_ok(&app, "billing/pricing", &json!({"amount": 75})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"],
        json!({
            "amount": 75,
            "tier": "small",
            "first": "over ten",
            "medal": "gold",
            "any_ok": "yes",
            "letters": ["a", "b"],
            "score": 11,
            "hits": 2,
            "in_rule_order": ["x1", "x2"],
            "by_rank": ["low", "high"],
        })
    );
    let id = start_ok(&app, "billing/pricing", &json!({"amount": 500})).await;
    let data = &show(&app, id).await["data"];
    assert_eq!(data["tier"], "large");
    assert_eq!(data["score"], 111);
    assert_eq!(data["hits"], 3);
    assert_eq!(data["letters"], json!(["a", "b"]));
}

#[tokio::test]
async fn a_decision_table_can_be_shown_and_tried_without_a_process() {
    let app = spawn_app().await;
    upload_ok(
        &app,
        "billing/pricing",
        "price.bpmn",
        &deciding("price", &["by_unique"]),
    )
    .await;
    upload_ok(&app, "billing/pricing", "pricing.dmn", &every_policy()).await;

    let (status, shown) = get(&app, "/v1.0/decisions/by_priority").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["process_model_identifier"], "billing/pricing");
    assert_eq!(shown["file_name"], "pricing.dmn");
    assert_eq!(shown["hit_policy"], "PRIORITY");
    assert_eq!(shown["inputs"][0]["expression"], "amount");
    assert_eq!(
        shown["outputs"][0]["output_values"],
        json!(["gold", "silver", "bronze"])
    );
    assert_eq!(shown["rules"][1]["row"], 2);
    assert_eq!(shown["rules"][1]["input_entries"], json!(["> 50"]));
    assert_eq!(shown["rules"][1]["output_entries"], json!(["\"gold\""]));

    let tried = evaluate_ok(&app, "by_priority", 20).await;
    assert_eq!(tried["result"], json!({"medal": "silver"}));
    let rows = |key: &str| -> Vec<i64> {
        tried[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["row"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(rows("matched_rules"), vec![1, 3]);
    assert_eq!(rows("selected_rules"), vec![3]);
    assert_eq!(
        tried["matched_rules"][0]["description"],
        "by_priority row 1"
    );

    // no body: no data (the decision's Python then fails on the missing name)
    let response = app
        .client
        .post(format!("{}/v1.0/decisions/by_unique/evaluate", app.address))
        .bearer_auth(app.token(ADMIN))
        .send()
        .await
        .unwrap();
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "decision_failed", "{body}");

    // nothing matches: nothing to merge
    let tried = evaluate_ok(&app, "by_first", -5).await;
    assert_eq!(tried["result"], json!({}));
    assert_eq!(tried["matched_rules"], json!([]));

    // ANY with disagreeing rules, and a rule that fails: 400 decision_failed with the reason
    let response = evaluate(&app, "any_disagreeing", &json!({"data": {"amount": 20}})).await;
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error_code"], "decision_failed");
    assert!(
        body["detail"].as_str().unwrap().contains("rows 1 and 2"),
        "{body}"
    );
    let response = evaluate(&app, "by_unique", &json!({"data": {"amout": 1}})).await;
    let (_, body) = problem(response).await;
    assert_eq!(body["error_code"], "decision_failed");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("NameError"), "{detail}");
    assert!(detail.contains("Did you mean 'amout'?"), "{detail}");
    assert!(detail.contains("row 1"), "{detail}");

    // unknown decision, bad body
    let (status, body) = problem(evaluate(&app, "nowhere", &json!({})).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("decision_not_found"))
    );
    let (status, body) = problem(evaluate(&app, "by_unique", &json!({"data": [1]})).await).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_json"))
    );
    let response = app
        .post_json(
            "/v1.0/decisions/by_unique/evaluate",
            &json!({}),
            "instances:read:x",
        )
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_decision_decides_each_instance_of_a_multi_instance_task() {
    let app = spawn_app().await;
    let tiers = dmn(&[(
        "tier_of",
        r#"hitPolicy="UNIQUE""#,
        &output("tier"),
        &[("&lt; 100", r#""small""#), ("&gt;= 100", r#""large""#)],
    )])
    .replace("<text>amount</text>", r#"<text>order["amount"]</text>"#);
    let process = definitions(
        r#"<bpmn:process id="orders" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="classify"/>
    <bpmn:businessRuleTask id="classify">
      <bpmn:extensionElements><spiffworkflow:calledDecisionId>tier_of</spiffworkflow:calledDecisionId></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics>
        <bpmn:loopDataInputRef>orders</bpmn:loopDataInputRef>
        <bpmn:loopDataOutputRef>tiers</bpmn:loopDataOutputRef>
        <bpmn:inputDataItem id="order"/><bpmn:outputDataItem id="tier"/>
      </bpmn:multiInstanceLoopCharacteristics>
    </bpmn:businessRuleTask>
    <bpmn:sequenceFlow id="f2" sourceRef="classify" targetRef="done"/>
    <bpmn:endEvent id="done"/>
  </bpmn:process>"#,
    );
    upload_ok(&app, "shop/orders", "orders.bpmn", &process).await;
    upload_ok(&app, "shop/orders", "tiers.dmn", &tiers).await;
    let orders = json!([{"amount": 5}, {"amount": 500}, {"amount": 99}]);
    let id = start_ok(&app, "shop/orders", &json!({"orders": orders})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(
        instance["data"]["tiers"],
        json!(["small", "large", "small"])
    );
}

#[tokio::test]
async fn a_decision_of_another_model_is_found_by_id_and_kept_for_the_instance() {
    let app = spawn_app().await;
    // the caller is uploaded before the model holding its decision
    upload_ok(
        &app,
        "shop/checkout",
        "checkout.bpmn",
        &deciding("checkout", &["by_unique"]),
    )
    .await;
    let early = start_ok(&app, "shop/checkout", &json!({"amount": 1})).await;
    let instance = show(&app, early).await;
    assert_eq!(instance["status"], "error", "{instance}");
    let message = instance["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("The decision 'by_unique' was not found"),
        "{message}"
    );

    upload_ok(
        &app,
        "billing/pricing",
        "price.bpmn",
        &deciding("price", &["by_first"]),
    )
    .await;
    upload_ok(&app, "billing/pricing", "pricing.dmn", &every_policy()).await;
    let id = start_ok(&app, "shop/checkout", &json!({"amount": 150})).await;
    let instance = show(&app, id).await;
    assert_eq!(instance["status"], "complete", "{instance}");
    assert_eq!(instance["data"]["tier"], "large");

    // a second model defining the same id: the model's own copy is used inside it; from
    // elsewhere the id is ambiguous
    let own = dmn(&[(
        "by_unique",
        r#"hitPolicy="UNIQUE""#,
        &output("tier"),
        &[("-", r#""own""#)],
    )]);
    upload_ok(
        &app,
        "shop/own",
        "own.bpmn",
        &deciding("own", &["by_unique"]),
    )
    .await;
    upload_ok(&app, "shop/own", "own.dmn", &own).await;
    let id = start_ok(&app, "shop/own", &json!({"amount": 150})).await;
    assert_eq!(show(&app, id).await["data"]["tier"], "own");
    let later = start_ok(&app, "shop/checkout", &json!({"amount": 150})).await;
    let instance = show(&app, later).await;
    assert_eq!(instance["status"], "error", "{instance}");
    let message = instance["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("several process models (billing/pricing, shop/own)"),
        "{message}"
    );
    let (status, body) = get(&app, "/v1.0/decisions/by_unique").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error_code"], "ambiguous_decision");
    assert_eq!(
        body["process_model_identifiers"],
        json!(["billing/pricing", "shop/own"])
    );
    let (status, body) = get(
        &app,
        "/v1.0/decisions/by_unique?process_model_identifier=shop:own",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["rules"][0]["output_entries"], json!(["\"own\""]));
}

#[tokio::test]
async fn decision_files_that_cannot_run_are_refused_at_upload() {
    let app = spawn_app().await;
    upload_ok(&app, "bad/model", "p.bpmn", &deciding("p", &["syntax"])).await;

    // Python that does not compile is a warning (SpiffWorkflow fails when the rule runs)
    for (xml, element, reason) in [
        (
            dmn(&[("syntax", "", &output("o"), &[("= 1", "1")])]),
            "syntax",
            "SyntaxError",
        ),
        (
            dmn(&[("bad_output", "", &output("o"), &[("1", "1 +")])]),
            "bad_output",
            "output 'o' of row 1",
        ),
    ] {
        let (status, body) = upload(&app, "bad/model", "rules.dmn", &xml).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let warning = &body["warnings"][0];
        assert_eq!(warning["file_name"], "rules.dmn", "{body}");
        assert_eq!(warning["element_id"], element, "{body}");
        assert!(
            warning["reason"].as_str().unwrap().contains(reason),
            "{body}"
        );
    }
    let cases: Vec<(String, &str, &str)> = vec![
        (
            dmn(&[(
                "policy",
                r#"hitPolicy="SOMETIMES""#,
                &output("o"),
                &[("1", "1")],
            )]),
            "policy",
            "unknown hit policy",
        ),
        (
            "<definitions xmlns=\"urn:not-dmn\"/>".to_string(),
            "",
            "not a DMN file",
        ),
    ];
    for (xml, element, reason) in cases {
        let (status, body) = upload(&app, "bad/model", "rules.dmn", &xml).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error_code"], "invalid_process_model", "{body}");
        assert_eq!(body["file_name"], "rules.dmn", "{body}");
        if !element.is_empty() {
            assert_eq!(body["element_id"], element, "{body}");
        }
        assert!(
            body["reason"].as_str().unwrap().contains(reason),
            "{reason}: {body}"
        );
    }
    // two files of a model defining one decision id
    let tiers = dmn(&[("tier", "", &output("o"), &[("1", "1")])]);
    upload_ok(
        &app,
        "twice/model",
        "twice.bpmn",
        &deciding("twice", &["tier"]),
    )
    .await;
    upload_ok(&app, "twice/model", "a.dmn", &tiers).await;
    let (status, body) = upload(&app, "twice/model", "b.dmn", &tiers).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("also defined in a.dmn"),
        "{body}"
    );
    // a business rule task without a decision
    let task = definitions(
        r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="br"/><bpmn:businessRuleTask id="br"/></bpmn:process>"#,
    );
    let (status, body) = upload(&app, "no/decision", "p.bpmn", &task).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["element_id"], "br");
}
