//! What SpiffArena accepts is accepted here too (issue 32): file names with spaces and
//! parentheses, models with faults SpiffWorkflow only meets when the element runs (returned
//! as warnings, the instance erring there), and process models calling themselves.

use crate::domain::*;
use crate::helpers::spawn_app_without_workers;
use crate::models::{definitions, user_task_process};
use reqwest::StatusCode;
use serde_json::{json, Value};
use workflow_backend::workers::connector_dispatcher::dispatch_due_once;

fn file_url(model: &str, file: &str) -> String {
    format!(
        "/v1.0/process-models/{}/files/{}",
        model.replace('/', ":"),
        urlencode(file)
    )
}

/// Names SpiffArena's users give their files go up, come down (named in the attachment) and
/// go with their model.
#[tokio::test]
async fn file_names_with_spaces_and_parentheses_round_trip() {
    let app = spawn_app_without_workers().await;
    let names = [
        "Sub process.bpmn",
        "TC-1.0 - Send message (v2).bpmn",
        "Übersicht & 'draft'.bpmn",
    ];
    for (i, name) in names.iter().enumerate() {
        let (status, body) = upload(
            &app,
            "names/spaced",
            &urlencode(name),
            &user_task_process(&format!("p{i}")),
        )
        .await;
        assert!(status.is_success(), "{name}: {status} {body}");
    }
    let (status, body) = upload(
        &app,
        "names/spaced",
        "form%20schema.json",
        "{\"type\": \"object\"}",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a JSON file is kept with the model: {body}"
    );
    let files: Vec<&str> = body["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for name in names.iter().chain(&["form schema.json"]) {
        assert!(files.contains(name), "{name} in {files:?}");
    }
    for name in names {
        let response = app
            .get_as(&file_url("names/spaced", name), "models:read")
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{name}");
        let disposition = response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_string();
        if name.is_ascii() {
            assert_eq!(disposition, format!("attachment; filename=\"{name}\""));
        } else {
            assert!(disposition.contains("filename*=UTF-8''"), "{disposition}");
        }
        let text = response.text().await.unwrap();
        assert!(text.contains("<bpmn:definitions"), "{name}");
    }
    for bad in [
        "a%2Fb.bpmn",
        "a%5Cb.bpmn",
        "a..b.bpmn",
        "a%01b.bpmn",
        "a.txt",
    ] {
        let (status, body) = upload(&app, "names/spaced", bad, &user_task_process("bad")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let long = urlencode(&format!("{}.bpmn", "a".repeat(251)));
    let (status, body) = upload(&app, "names/spaced", &long, &user_task_process("long")).await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_file_name")),
        "{body}"
    );
    let deleted = app
        .request(reqwest::Method::DELETE, "/v1.0/process-models/names:spaced")
        .bearer_auth(app.token("models:write"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = app
        .get_as(&file_url("names/spaced", names[0]), "models:read")
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

/// `countdown` calls itself while `n > 0`, counting the levels in `depth` (each call's data
/// merged back into its caller's).
fn countdown() -> String {
    definitions(
        r#"<bpmn:process id="countdown" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="more" />
    <bpmn:exclusiveGateway id="more" default="f_done" />
    <bpmn:sequenceFlow id="f1" sourceRef="more" targetRef="down"><bpmn:conditionExpression>n &gt; 0</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:scriptTask id="down"><bpmn:script>n = n - 1
depth = depth + 1</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="down" targetRef="again" />
    <bpmn:callActivity id="again" calledElement="countdown" />
    <bpmn:sequenceFlow id="f3" sourceRef="again" targetRef="done" />
    <bpmn:sequenceFlow id="f_done" sourceRef="more" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// A process calling itself runs as deep as it calls, up to `MAX_CALL_DEPTH` (16) calls; one
/// call deeper errs the instance at that call activity.
#[tokio::test]
async fn a_process_calling_itself_runs_to_the_documented_depth_and_errs_past_it() {
    let app = spawn_app_without_workers().await;
    let (status, body) = upload(&app, "calls/countdown", "countdown.bpmn", &countdown()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let limit = workflow_backend::bpmn::MAX_CALL_DEPTH as i64;
    for n in [0, 3, limit] {
        let id = start_ok(&app, "calls/countdown", &json!({"n": n, "depth": 0})).await;
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "n = {n}: {shown}");
        assert_eq!(
            (&shown["data"]["n"], &shown["data"]["depth"]),
            (&json!(0), &json!(n)),
            "{shown}"
        );
    }
    let id = start_ok(
        &app,
        "calls/countdown",
        &json!({"n": limit + 1, "depth": 0}),
    )
    .await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    let deepest = vec!["again"; limit as usize + 1].join("/");
    assert_eq!(shown["error"]["element_id"], deepest.as_str(), "{shown}");
    let message = shown["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 16 calls deep"), "{message}");
}

/// The files of SpiffWorkflow's test suite its own parser (`SpiffBpmnParser`, with its
/// validator, each file alone, as SpiffArena loads them) refuses, with its reason, measured
/// with SpiffWorkflow 3.2.0.
const REFUSED_BY_SPIFFWORKFLOW: &[(&str, &str)] = &[
    // a business rule task's decision in a .dmn file not given with it
    (
        "bpmn/data/call_activity_nested/call_activity_nested.bpmn",
        "No DMN Diagram available",
    ),
    (
        "camunda/data/DMNMultiInstance.bpmn",
        "No DMN Diagram available",
    ),
    (
        "camunda/data/ExclusiveGatewayIfElseAndDecision.bpmn",
        "No DMN Diagram available",
    ),
    (
        "camunda/data/invalid/InvalidDecision.bpmn",
        "No DMN Diagram available",
    ),
    (
        "spiff/data/business_rule_task.bpmn",
        "No DMN Diagram available",
    ),
    (
        "bpmn/data/data_object_invalid.bpmn",
        "is not a valid value of the atomic type 'xs:IDREF'",
    ),
    (
        "bpmn/data/data_store.bpmn",
        "Data Store with name TestDataStore has no implementation",
    ),
    (
        "bpmn/data/data_store_read.bpmn",
        "Data Store with name TestDataStore has no implementation",
    ),
    (
        "bpmn/data/data_store_write.bpmn",
        "Data Store with name TestDataStore has no implementation",
    ),
    (
        "bpmn/data/invalid_cancel.bpmn",
        "Cancel Events may only be used with transactions",
    ),
    (
        "bpmn/data/parallel_multiinstance_invalid.bpmn",
        "must specify exactly one of cardinality or loop input",
    ),
    (
        "bpmn/data/service_task.bpmn",
        "A Service Task must have an operator",
    ),
    (
        "bpmn/data/standard_loop_invalid.bpmn",
        "A loopMaximum or loopCondition must be specified",
    ),
    (
        "camunda/data/parallel_multiinstance_collection.bpmn",
        "must specify a cardinality or a loop input",
    ),
];

/// Every `.bpmn` file of SpiffWorkflow's test suite (in the conformance corpus) that
/// SpiffWorkflow's parser loads uploads here, alone, as a model of its own (with warnings
/// where SpiffWorkflow would fail only when an element runs).
#[tokio::test]
async fn every_file_spiffworkflow_loads_uploads() {
    let root = conformance_or_skip!().join("spiffworkflow-tests");
    let mut files = vec![];
    collect_bpmn(&root, &mut files);
    files.sort();
    let app = spawn_app_without_workers().await;
    let (mut loaded, mut refused, mut warned) = (0, vec![], 0);
    for path in &files {
        let relative = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if REFUSED_BY_SPIFFWORKFLOW
            .iter()
            .any(|(file, _)| *file == relative)
        {
            continue;
        }
        let xml = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (status, body) = upload(&app, "corpus/file", &urlencode(&name), &xml).await;
        if status.is_success() {
            loaded += 1;
            warned += usize::from(!body["warnings"].as_array().is_none_or(Vec::is_empty));
            let deleted = app
                .request(reqwest::Method::DELETE, "/v1.0/process-models/corpus:file")
                .bearer_auth(app.token("models:write"))
                .send()
                .await
                .unwrap();
            assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
        } else {
            refused.push(format!("{relative}: {status} {body}"));
        }
    }
    println!(
        "{} files SpiffWorkflow loads: {loaded} upload ({warned} with warnings), {} refused",
        loaded + refused.len(),
        refused.len()
    );
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

fn collect_bpmn(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_bpmn(&path, out);
        } else if path.extension().is_some_and(|e| e == "bpmn") {
            out.push(path);
        }
    }
}

/// `body` (elements) as process `p` with its start `s` leading to `t`, then to the end `e`;
/// `before` goes before the process (messages, correlation properties).
fn around(before: &str, task: &str) -> String {
    definitions(&format!(
        r#"{before}<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>{task}<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/></bpmn:process>"#
    ))
}

fn warnings_of(body: &Value) -> Vec<(String, String, String)> {
    body["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings in {body}"))
        .iter()
        .map(|w| {
            let text = |key: &str| w[key].as_str().unwrap_or_default().to_string();
            (text("file_name"), text("element_id"), text("reason"))
        })
        .collect()
}

/// What SpiffWorkflow's parser loads and SpiffArena fails on only when the element runs is
/// uploaded, with a warning naming the file, the element and what is wrong (in the upload's
/// answer and the model's detail); an instance errs at that element. What SpiffWorkflow's
/// parser refuses is still refused.
#[tokio::test]
async fn faults_spiffworkflow_meets_only_at_run_time_are_warnings() {
    let app = spawn_app_without_workers().await;
    let correlation = |expression: &str| {
        format!(
            r#"<bpmn:correlationProperty id="key" name="key"><bpmn:correlationPropertyRetrievalExpression messageRef="m"><bpmn:formalExpression>{expression}</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression></bpmn:correlationProperty><bpmn:message id="m" name="go"/>"#
        )
    };
    let waits = r#"<bpmn:intermediateCatchEvent id="t"><bpmn:messageEventDefinition id="d" messageRef="m"/></bpmn:intermediateCatchEvent>"#;
    let service = |value: &str| {
        format!(
            r#"<bpmn:serviceTask id="t"><bpmn:extensionElements><spiffworkflow:serviceTaskOperator id="http/GetRequest" resultVariable="r"><spiffworkflow:parameters><spiffworkflow:parameter id="url" type="str" value="{value}"/></spiffworkflow:parameters></spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>"#
        )
    };
    // (case, file, element warned about, fragment of the warning, the instance errs at `t`)
    let cases: Vec<(&str, String, &str, &str, bool)> = vec![
        (
            "script syntax",
            around(
                "",
                r#"<bpmn:scriptTask id="t"><bpmn:script>x = = 1</bpmn:script></bpmn:scriptTask>"#,
            ),
            "t",
            "SyntaxError",
            true,
        ),
        (
            "empty retrieval expression",
            around(&correlation(""), waits),
            "key",
            "SyntaxError",
            false,
        ),
        (
            "invalid retrieval expression",
            around(&correlation("order["), waits),
            "key",
            "SyntaxError",
            false,
        ),
        (
            "message catch without messageRef",
            around(
                "",
                r#"<bpmn:intermediateCatchEvent id="t"><bpmn:messageEventDefinition id="d"/></bpmn:intermediateCatchEvent>"#,
            ),
            "t",
            "messageRef",
            true,
        ),
        (
            "message start without messageRef",
            definitions(
                r#"<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="t"><bpmn:messageEventDefinition id="d"/></bpmn:startEvent><bpmn:sequenceFlow id="f1" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/></bpmn:process>"#,
            ),
            "t",
            "messageRef",
            // it starts by a message no one can send: never over the API either
            false,
        ),
        (
            "message boundary without messageRef",
            around(
                "",
                r#"<bpmn:userTask id="t"/><bpmn:boundaryEvent id="b" attachedToRef="t"><bpmn:messageEventDefinition id="d"/></bpmn:boundaryEvent><bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e"/>"#,
            ),
            "b",
            "messageRef",
            false,
        ),
        (
            "message throw without messageRef",
            around(
                "",
                r#"<bpmn:intermediateThrowEvent id="t"><bpmn:messageEventDefinition id="d"/></bpmn:intermediateThrowEvent>"#,
            ),
            "t",
            "messageRef",
            true,
        ),
        (
            "service parameter",
            around("", &service("a b c")),
            "t",
            "SyntaxError",
            true,
        ),
        (
            "empty service parameter",
            around("", &service("")),
            "t",
            "SyntaxError",
            true,
        ),
    ];
    for (i, (case, xml, element, what, errs)) in cases.into_iter().enumerate() {
        let model = format!("warned/m{i}");
        // process ids are unique across models
        let xml = xml.replace(r#"process id="p""#, &format!(r#"process id="p{i}""#));
        let (status, body) = upload(&app, &model, "Model (draft).bpmn", &xml).await;
        assert_eq!(status, StatusCode::CREATED, "{case}: {body}");
        let warnings = warnings_of(&body);
        assert!(
            warnings
                .iter()
                .any(|(file, id, reason)| file == "Model (draft).bpmn"
                    && id == element
                    && reason.contains(what)),
            "{case}: {warnings:?}"
        );
        let (_, detail) = get(
            &app,
            &format!("/v1.0/process-models/{}", model.replace('/', ":")),
        )
        .await;
        assert_eq!(warnings_of(&detail), warnings, "{case}: the model's detail");
        if errs {
            let id = start_ok(&app, &model, &json!({})).await;
            // a service task's parameters are evaluated when the dispatcher calls it
            dispatch_due_once(&app.state).await;
            let shown = show(&app, id).await;
            assert_eq!(shown["status"], "error", "{case}: {shown}");
            assert_eq!(shown["error"]["element_id"], "t", "{case}: {shown}");
        }
    }
    // SpiffWorkflow's parser refuses these too
    for (case, task) in [
        (
            "service task without an operator",
            r#"<bpmn:serviceTask id="t"/>"#,
        ),
        (
            "multi-instance without cardinality or input",
            r#"<bpmn:scriptTask id="t"><bpmn:multiInstanceLoopCharacteristics/><bpmn:script>x = 1</bpmn:script></bpmn:scriptTask>"#,
        ),
    ] {
        let (status, body) = upload(&app, "warned/refused", "r.bpmn", &around("", task)).await;
        assert_eq!(
            (status, body["error_code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_process_model")),
            "{case}: {body}"
        );
    }
    // a model without faults has no warnings
    let (_, body) = upload(&app, "warned/clean", "c.bpmn", &user_task_process("clean")).await;
    assert_eq!(body["warnings"], json!([]), "{body}");
}

/// `process_id` counts `n` down and calls `callee` while `n > 0`.
fn caller_while_positive(process_id: &str, callee: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="more" />
    <bpmn:exclusiveGateway id="more" default="f_done" />
    <bpmn:sequenceFlow id="f1" sourceRef="more" targetRef="down"><bpmn:conditionExpression>n &gt; 0</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:scriptTask id="down"><bpmn:script>n = n - 1
visited = visited + ["{process_id}"]</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="down" targetRef="call_{callee}" />
    <bpmn:callActivity id="call_{callee}" calledElement="{callee}" />
    <bpmn:sequenceFlow id="f3" sourceRef="call_{callee}" targetRef="done" />
    <bpmn:sequenceFlow id="f_done" sourceRef="more" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Recursion through a process of another model: `ping` (one model) calls `pong` (another),
/// which calls `ping` again, each call linked as the instance reaches it.
#[tokio::test]
async fn processes_of_two_models_calling_each_other_run() {
    let app = spawn_app_without_workers().await;
    upload_ok(
        &app,
        "calls/ping",
        "ping.bpmn",
        &caller_while_positive("ping", "pong"),
    )
    .await;
    upload_ok(
        &app,
        "calls/pong",
        "pong.bpmn",
        &caller_while_positive("pong", "ping"),
    )
    .await;
    let id = start_ok(&app, "calls/ping", &json!({"n": 5, "visited": []})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(
        shown["data"]["visited"],
        json!(["ping", "pong", "ping", "pong", "ping"]),
        "{shown}"
    );
}
