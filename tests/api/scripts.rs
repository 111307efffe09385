//! Scripts over HTTP: SpiffArena's Python runs in models (what monty refused: `del`,
//! `%`-formatting, the globals), a syntax error is refused at upload with its element and
//! position, and the limits hold: a runaway script or a memory bomb puts its instance in
//! error, the service keeps answering while runaways run, and a full pool answers 503.

use crate::domain::{send, start, upload, upload_ok};
use crate::helpers::{spawn_app_with, TestApp};
use crate::messages::orders;
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// start -> script task `run` with `source` -> end.
fn script_model(process_id: &str, source: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="run" />
    <bpmn:scriptTask id="run"><bpmn:script>{source}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="run" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

async fn app_with_limits(workers: usize, time_limit_ms: u64, queue_timeout_ms: u64) -> TestApp {
    spawn_app_with(|s| {
        s.scripts.workers = workers;
        s.scripts.time_limit_ms = time_limit_ms;
        s.scripts.queue_timeout_ms = queue_timeout_ms;
    })
    .await
}

#[tokio::test]
async fn a_spiffarena_script_runs_as_spiffarena_runs_it() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let source = "del items\nlabel = '%s-%d' % (name, count)\n\
                  due = datetime(2024, 1, 31) + timedelta(days=count)\n\
                  total = sum(x * 2 for x in values)\nrounded = round(2.675, 2)\n\
                  helper = lambda: 1";
    upload_ok(
        &app,
        "scripts/spiff",
        "s.bpmn",
        &script_model("spiff", source),
    )
    .await;
    let data = json!({"items": [1, 2], "name": "order", "count": 3, "values": [1, 2, 3]});
    let (status, body) = start(&app, "scripts/spiff", &data).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    assert_eq!(
        body["task_data"],
        json!({
            "name": "order", "count": 3, "values": [1, 2, 3], "label": "order-3",
            "due": "2024-02-03T00:00:00",
            "total": 12, "rounded": 2.67,
        })
    );
}

/// A datetime a script stores is a datetime again in the next script (clients see an ISO
/// string).
#[tokio::test]
async fn a_datetime_survives_storage_between_scripts() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let xml = definitions(
        r#"<bpmn:process id="dates" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="set" />
    <bpmn:scriptTask id="set"><bpmn:script>due = datetime(2024, 1, 31)</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="set" targetRef="wait" />
    <bpmn:userTask id="wait" />
    <bpmn:sequenceFlow id="f3" sourceRef="wait" targetRef="later" />
    <bpmn:scriptTask id="later"><bpmn:script>later = (due + timedelta(days=1)).strftime('%d %b')</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f4" sourceRef="later" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "scripts/dates", "d.bpmn", &xml).await;
    let (status, body) = start(&app, "scripts/dates", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["task_data"]["due"], "2024-01-31T00:00:00", "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let task = crate::domain::waiting_task(&app, id, "wait").await;
    let (status, done) = crate::domain::complete_task(&app, id, &task, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    assert_eq!(done["task_data"]["later"], "01 Feb", "{done}");
}

/// SpiffWorkflow loads a script with a syntax error and SpiffArena fails when it runs: the
/// upload warns with the element and the position, and the instance errs at the script.
#[tokio::test]
async fn a_syntax_error_is_a_warning_at_upload_with_element_and_position() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let (status, body) = upload(
        &app,
        "scripts/bad",
        "bad.bpmn",
        &script_model("bad", "x = = 1"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let warning = &body["warnings"][0];
    assert_eq!(warning["element_id"], "run", "{body}");
    assert_eq!(warning["file_name"], "bad.bpmn", "{body}");
    let reason = warning["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("script: SyntaxError: invalid syntax (line 1, column 5)"),
        "{reason}"
    );
    let (_, body) = start(&app, "scripts/bad", &json!({})).await;
    let instance = &body["process_instance"];
    assert_eq!(instance["status"], "error", "{body}");
    assert_eq!(instance["error"]["element_id"], "run", "{body}");
}

async fn instance_error(app: &TestApp, model: &str, source: &str) -> (Value, Duration) {
    let process_id = model.replace('/', "_");
    upload_ok(app, model, "s.bpmn", &script_model(&process_id, source)).await;
    let started = Instant::now();
    let (status, body) = start(app, model, &json!({})).await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "error", "{body}");
    (body["process_instance"]["error"].clone(), took)
}

#[tokio::test]
async fn a_runaway_script_is_stopped_at_its_time_limit() {
    let app = app_with_limits(1, 1_000, 5_000).await;
    let (error, took) = instance_error(&app, "scripts/runaway", "x = 7 ** 20000000").await;
    assert_eq!(error["error_code"], "script_time_limit", "{error}");
    assert_eq!(error["element_id"], "run", "{error}");
    assert!(took < Duration::from_secs(3), "stopped after {took:?}");
    // the pool replaced the killed worker: the next script runs
    let (status, body) = start(&app, "scripts/runaway", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn a_memory_bomb_errs_with_script_memory_limit() {
    let app = app_with_limits(1, 5_000, 5_000).await;
    let (error, _) = instance_error(&app, "scripts/bomb", "x = 'a' * (2 ** 31)").await;
    assert_eq!(error["error_code"], "script_memory_limit", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("MemoryError")),
        "{error}"
    );
}

#[tokio::test]
async fn the_service_answers_within_100_ms_while_two_runaway_scripts_run() {
    let app = app_with_limits(2, 3_000, 10_000).await;
    orders(&app).await;
    upload_ok(
        &app,
        "scripts/runaway",
        "s.bpmn",
        &script_model("runaway", "x = 7 ** 20000000"),
    )
    .await;
    let runaways: Vec<_> = (0..2)
        .map(|_| {
            let (address, client, token) =
                (app.address.clone(), app.client.clone(), app.token("admin"));
            tokio::spawn(async move {
                client
                    .post(format!("{address}/v1.0/process-instances/scripts:runaway"))
                    .bearer_auth(token)
                    .json(&json!({}))
                    .send()
                    .await
                    .map(|r| r.status())
            })
        })
        .collect();
    // sample the status endpoint, and messages to other instances (a start, then its
    // correlation), for as long as both runaways are in flight
    let mut samples = Vec::new();
    let mut messages = Vec::new();
    let mut order = 0;
    while runaways.iter().all(|r| !r.is_finished()) {
        let asked = Instant::now();
        let status = app.get("/v1.0/status").await.status();
        samples.push((status, asked.elapsed()));
        order += 1;
        for name in ["placed", "paid"] {
            let asked = Instant::now();
            let (status, body) = send(&app, name, &json!({"order_id": order}), &[]).await;
            messages.push((status, asked.elapsed(), body));
        }
    }
    for runaway in runaways {
        assert_eq!(runaway.await.unwrap().unwrap(), StatusCode::CREATED);
    }
    assert!(samples.len() >= 5, "only {} samples", samples.len());
    let slowest = samples.iter().map(|(_, took)| *took).max().unwrap();
    assert!(samples.iter().all(|(s, _)| *s == StatusCode::OK));
    assert!(slowest < Duration::from_millis(100), "slowest {slowest:?}");
    for (status, took, body) in &messages {
        assert_eq!(*status, StatusCode::OK, "{body}");
        // a runaway holds its script worker for 3 s; a message that needs none never waits
        assert!(*took < Duration::from_millis(500), "{took:?}: {body}");
    }
}

#[tokio::test]
async fn a_step_that_finds_every_worker_busy_gets_503_and_changes_nothing() {
    let app = app_with_limits(1, 3_000, 300).await;
    upload_ok(
        &app,
        "scripts/runaway",
        "s.bpmn",
        &script_model("runaway", "x = 7 ** 20000000"),
    )
    .await;
    let empty = json!({});
    let (first, second) = tokio::join!(
        start(&app, "scripts/runaway", &empty),
        start(&app, "scripts/runaway", &empty)
    );
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::CREATED, StatusCode::SERVICE_UNAVAILABLE],
        "{} / {}",
        first.1,
        second.1
    );
    let refused = if first.0 == StatusCode::SERVICE_UNAVAILABLE {
        &first.1
    } else {
        &second.1
    };
    assert_eq!(refused["error_code"], "scripts_unavailable", "{refused}");
    // the refused start left no instance behind
    let (_, listed) = crate::domain::get(&app, "/v1.0/process-instances").await;
    assert_eq!(listed["pagination"]["total"], 1, "{listed}");
}

#[tokio::test]
async fn spiffarena_script_functions_answer_from_the_instance_and_the_caller() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let source = "user = get_current_user()['username']\n\
                  initiator = get_process_initiator_user()['username']\n\
                  info = get_toplevel_process_info()\n\
                  task = get_current_task_info()['bpmn_identifier']\n\
                  env = get_env()\n\
                  url = get_frontend_url()\n\
                  paris = get_localtime(datetime(2024, 1, 1, 12, tzinfo=pytz.utc), 'Europe/Paris').isoformat()\n\
                  kept = get_task_data_value('x', 5)\n\
                  missing = get_task_data_value('nope', 'default')";
    upload_ok(
        &app,
        "scripts/functions",
        "s.bpmn",
        &script_model("functions", source),
    )
    .await;
    let (status, body) = start(&app, "scripts/functions", &json!({"x": 1})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    assert_eq!(
        body["task_data"],
        json!({
            "x": 1, "user": "test-user", "initiator": "test-user",
            "info": {"process_instance_id": id, "process_model_identifier": "scripts/functions"},
            "task": "run", "env": "local", "url": app.settings.public_url,
            "paris": "2024-01-01T13:00:00+01:00", "kept": 1, "missing": "default",
        }),
        "{body}"
    );

    // what needs SpiffArena's user directory says so
    let (error, _) =
        instance_error(&app, "scripts/groups", "members = get_group_members('a')").await;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("NotImplementedError: get_group_members()")),
        "{error}"
    );
}

#[tokio::test]
async fn get_secret_answers_from_the_secret_store() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let stored = app
        .request(reqwest::Method::PUT, "/v1.0/secrets/API_KEY")
        .bearer_auth(app.token("admin"))
        .json(&json!({"value": "s3cr3t-value"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), StatusCode::CREATED);
    let source = "header = 'Bearer ' + get_secret('API_KEY')";
    upload_ok(
        &app,
        "scripts/secret",
        "s.bpmn",
        &script_model("secret", source),
    )
    .await;
    let (status, body) = start(&app, "scripts/secret", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["task_data"]["header"], "Bearer s3cr3t-value", "{body}");

    let (error, _) = instance_error(&app, "scripts/nosecret", "x = get_secret('MISSING')").await;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("KeyError: \"no secret named 'MISSING'\"")),
        "{error}"
    );
}

/// A correlation expression beyond the fast path (here `str(key).upper()`, both where the
/// message's value is retrieved and where the waiting instance's is computed) runs on Python
/// and correlates.
#[tokio::test]
async fn a_correlation_expression_that_needs_python_correlates() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let xml = crate::models::keyed_waiter("upper", "ping")
        .replace(
            "<bpmn:formalExpression>key</bpmn:formalExpression>",
            "<bpmn:formalExpression>str(key).upper()</bpmn:formalExpression>",
        )
        .replace(
            "<spiffworkflow:expression>key</spiffworkflow:expression>",
            "<spiffworkflow:expression>str(key).upper()</spiffworkflow:expression>",
        );
    assert!(xml.contains("str(key).upper()</bpmn:formalExpression>"));
    upload_ok(&app, "scripts/upper", "u.bpmn", &xml).await;
    let (status, body) = start(&app, "scripts/upper", &json!({"key": "ab"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "waiting", "{body}");

    // another key does not match; this one does once upper-cased on both sides
    let (status, other) = crate::domain::send(&app, "ping", &json!({"key": "zz"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{other}");
    let (status, sent) = crate::domain::send(&app, "ping", &json!({"key": "ab"}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["process_instance"]["status"], "complete", "{sent}");
}

/// `get_url_for_task_with_bpmn_identifier()` links to a user task on a parallel branch, and
/// `get_last_user_completing_task()` names who completed it, as SpiffArena's functions do;
/// a task that does not exist is SpiffArena's error. Runtime errors name the BPMN file.
#[tokio::test]
async fn script_functions_look_up_the_tasks_of_the_instance() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let xml = definitions(
        r#"<bpmn:process id="review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fork" />
    <bpmn:parallelGateway id="fork" />
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="approve" />
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="link" />
    <bpmn:userTask id="approve" />
    <bpmn:scriptTask id="link"><bpmn:script>url = get_url_for_task_with_bpmn_identifier('approve')
private = get_url_for_task_with_bpmn_identifier('approve', public=False)
before = get_last_user_completing_task('review', 'approve')</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f4" sourceRef="approve" targetRef="who" />
    <bpmn:scriptTask id="who"><bpmn:script>approver = get_last_user_completing_task('review', 'approve')['username']</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f5" sourceRef="who" targetRef="join" />
    <bpmn:sequenceFlow id="f6" sourceRef="link" targetRef="join" />
    <bpmn:parallelGateway id="join" />
    <bpmn:sequenceFlow id="f7" sourceRef="join" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "scripts/review", "review.bpmn", &xml).await;
    let (status, body) = start(&app, "scripts/review", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["process_instance"]["id"].as_i64().unwrap();
    let approve = crate::domain::waiting_task(&app, id, "approve").await;
    let base = format!("{}/tasks/{id}/{approve}", app.settings.public_url);
    let public = format!("{}/public/tasks/{id}/{approve}", app.settings.public_url);
    assert_eq!(body["task_data"]["url"], public, "{body}");
    assert_eq!(body["task_data"]["private"], base, "{body}");
    assert_eq!(body["task_data"]["before"], Value::Null, "{body}");

    let (status, done) = crate::domain::complete_task(&app, id, &approve, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    assert_eq!(done["task_data"]["approver"], "test-user", "{done}");

    let (error, _) = instance_error(
        &app,
        "scripts/nourl",
        "u = get_url_for_task_with_bpmn_identifier('nope')",
    )
    .await;
    assert_eq!(
        error["message"],
        "Exception: Could not find a task with bpmn identifier 'nope' in \
         get_url_for_task_with_bpmn_identifier (line 1, column 5) (in the script)",
        "{error}"
    );
    assert_eq!(error["file"], "s.bpmn", "{error}");
    assert_eq!(error["element_id"], "run", "{error}");
}

/// A model whose script reaches for `os` through a global module (as it could in SpiffArena)
/// puts its instance in error, saying what was refused and where.
#[tokio::test]
async fn a_script_that_reaches_for_os_through_a_module_errs_saying_so() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let (error, _) = instance_error(
        &app,
        "scripts/escape",
        "cwd = calendar.sys.modules['os'].getcwd()",
    )
    .await;
    assert_eq!(
        error["message"],
        "AttributeError: module 'calendar' gives scripts no access to module 'sys' \
         (line 1, column 7) (in the script)",
        "{error}"
    );
    assert_eq!(error["element_id"], "run", "{error}");
}

/// Every way to the environment the audit found gives a script nothing: the modules that
/// hold `os` are refused (through `_getattr_` too), and the worker's environment is empty
/// anyway (crates/scripts/src/pool.rs tests that).
#[tokio::test]
async fn a_script_that_reads_the_environment_gets_nothing() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let source = "found = []\n\
                  for attempt in (lambda: uuid.os.environ, lambda: random._os.environ,\n\
                  \x20               lambda: calendar.sys.modules['os'].environ,\n\
                  \x20               lambda: _getattr_(uuid, 'os')):\n\
                  \x20   try:\n\
                  \x20       found.append(str(attempt()))\n\
                  \x20   except AttributeError:\n\
                  \x20       found.append('refused')";
    upload_ok(
        &app,
        "scripts/environ",
        "s.bpmn",
        &script_model("environ", source),
    )
    .await;
    let (status, body) = start(&app, "scripts/environ", &json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    assert_eq!(
        body["task_data"]["found"],
        json!(["refused", "refused", "refused", "refused"]),
        "{body}"
    );
}

/// `get_data_sizes()` answers in SpiffArena's shape (the task data the script started with
/// counts as the one task with data; SpiffArena's default environment keeps no Python state),
/// and `sanitize_for_md()` escapes as SpiffArena's JinjaHelpers does.
#[tokio::test]
async fn get_data_sizes_and_sanitize_for_md_answer_as_spiffarena_does() {
    let app = app_with_limits(1, 2_000, 5_000).await;
    let source = "sizes = get_data_sizes()\nmd = sanitize_for_md(text)";
    upload_ok(
        &app,
        "scripts/sizes",
        "s.bpmn",
        &script_model("sizes", source),
    )
    .await;
    let text = "a|b_c *x*\n[l](u) > 1!\r";
    let (status, body) = start(&app, "scripts/sizes", &json!({"text": text})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // json.dumps([{"text": "a|b_c *x*\n[l](u) > 1!\r"}])
    let dumped = r#"[{"text": "a|b_c *x*\n[l](u) > 1!\r"}]"#;
    assert_eq!(
        body["task_data"]["sizes"],
        json!({
            "python_env_size": 2,
            "python_env_keys": [],
            "task_data_size": dumped.len(),
            "task_data_keys_by_task": {"run": ["text"]},
        }),
        "{body}"
    );
    assert_eq!(
        body["task_data"]["md"], r"a\|b\_c \*x\*\[l\]\(u\) > 1\!",
        "{body}"
    );
}
