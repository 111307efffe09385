//! Events over HTTP, on a real database: timers, event-based gateways, signals, escalations,
//! event subprocesses, conditional, link and multiple events. No background worker runs: each
//! test fires due timers itself with the timer worker's one-shot round and a `now` of its
//! choosing, so nothing sleeps.

use crate::domain::*;
use crate::helpers::{spawn_app_with, spawn_app_without_workers, TestApp};
use crate::models::definitions;
use chrono::{DateTime, Duration, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};
use workflow_backend::workers::timer_firer::fire_due_once;

fn timer_catch(id: &str, kind: &str, expression: &str) -> String {
    format!(
        r#"<bpmn:intermediateCatchEvent id="{id}"><bpmn:timerEventDefinition><bpmn:{kind}>{expression}</bpmn:{kind}></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#
    )
}

/// start -> timer (PT1H) -> end.
fn waits_an_hour(process_id: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="hour" />
    {}
    <bpmn:sequenceFlow id="f2" sourceRef="hour" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
        timer_catch("hour", "timeDuration", "\"PT1H\"")
    ))
}

fn pending_timers(shown: &Value) -> Vec<Value> {
    shown["pending_timers"]
        .as_array()
        .expect("pending_timers")
        .clone()
}

fn due_of(timer: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(timer["due_at"].as_str().unwrap())
        .unwrap()
        .into()
}

#[tokio::test]
async fn a_timer_fires_once_at_its_due_time_and_never_before() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/hour", "h.bpmn", &waits_an_hour("hour")).await;
    let before = Utc::now();
    let id = start_ok(&app, "timers/hour", &json!({})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    let timers = pending_timers(&shown);
    assert_eq!(timers.len(), 1, "{shown}");
    assert_eq!(timers[0]["element_id"], "hour");
    let due = due_of(&timers[0]);
    assert!(due >= before + Duration::hours(1) && due <= Utc::now() + Duration::hours(1));

    // a millisecond early: nothing
    let early = fire_due_once(&app.state, due - Duration::milliseconds(1)).await;
    assert_eq!(early.claimed, 0);
    assert_eq!(show(&app, id).await["status"], "waiting");

    let round = fire_due_once(&app.state, due).await;
    assert_eq!((round.claimed, round.fired, round.failed), (1, 1, 0));
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert!(pending_timers(&shown).is_empty());
    // fired once: a later round finds nothing
    assert_eq!(
        fire_due_once(&app.state, due + Duration::days(1))
            .await
            .claimed,
        0
    );
}

/// Two workers (as two replicas would) race for the same due timers: each fires once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_timer_workers_fire_each_timer_once() {
    const N: usize = 30;
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/many", "m.bpmn", &waits_an_hour("many")).await;
    let mut ids = vec![];
    for _ in 0..N {
        ids.push(start_ok(&app, "timers/many", &json!({})).await);
    }
    let later = Utc::now() + Duration::hours(2);
    // let the claims lapse at once, so that both workers see every timer and only the
    // instance lock and the timer row decide who fires it
    sqlx::query("UPDATE timers SET claimed_until = NULL")
        .execute(&app.pool)
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        fire_due_once(&app.state, later),
        fire_due_once(&app.state, later)
    );
    assert_eq!(a.fired + b.fired, N, "{a:?} {b:?}");
    for id in ids {
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "{shown}");
        let ends = shown["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["element_id"] == "done")
            .count();
        assert_eq!(ends, 1, "{shown}");
    }
}

/// Waits for `paid` (keyed by `key`) or three days, whichever comes first.
fn payment_or_deadline() -> String {
    definitions(&format!(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_paid"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_paid" name="paid" />
  <bpmn:process id="race" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="gate" />
    <bpmn:eventBasedGateway id="gate" />
    <bpmn:sequenceFlow id="f2" sourceRef="gate" targetRef="payment" />
    <bpmn:sequenceFlow id="f3" sourceRef="gate" targetRef="deadline" />
    <bpmn:intermediateCatchEvent id="payment">
      <bpmn:messageEventDefinition messageRef="m_paid">
        <bpmn:extensionElements>
          <spiffworkflow:messageVariable>received</spiffworkflow:messageVariable>
          <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>key</spiffworkflow:propertyId><spiffworkflow:expression>key</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
        </bpmn:extensionElements>
      </bpmn:messageEventDefinition>
    </bpmn:intermediateCatchEvent>
    {}
    <bpmn:sequenceFlow id="f4" sourceRef="payment" targetRef="paid_end" />
    <bpmn:sequenceFlow id="f5" sourceRef="deadline" targetRef="expired_end" />
    <bpmn:endEvent id="paid_end" /><bpmn:endEvent id="expired_end" />
  </bpmn:process>"#,
        timer_catch("deadline", "timeDuration", "\"P3D\"")
    ))
}

fn reached(shown: &Value, element: &str) -> bool {
    shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["element_id"] == element && t["state"] == "COMPLETED")
}

#[tokio::test]
async fn the_deadline_wins_and_a_late_message_finds_nothing_waiting() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/race", "r.bpmn", &payment_or_deadline()).await;
    let id = start_ok(&app, "timers/race", &json!({"key": "k1"})).await;
    let round = fire_due_once(
        &app.state,
        Utc::now() + Duration::days(3) + Duration::minutes(1),
    )
    .await;
    assert_eq!(round.fired, 1);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert!(
        reached(&shown, "expired_end") && !reached(&shown, "paid_end"),
        "{shown}"
    );

    // the payment comes too late: no receiver, no start event, not buffered -> 400
    let (status, body) = send(&app, "paid", &json!({"key": "k1"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "message_not_accepted", "{body}");
}

#[tokio::test]
async fn the_message_wins_and_its_timer_is_gone() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/race", "r.bpmn", &payment_or_deadline()).await;
    let id = start_ok(&app, "timers/race", &json!({"key": "k1"})).await;
    assert_eq!(pending_timers(&show(&app, id).await).len(), 1);
    let (status, body) = send(&app, "paid", &json!({"key": "k1", "amount": 5}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    let shown = show(&app, id).await;
    assert!(pending_timers(&shown).is_empty(), "{shown}");
    assert!(reached(&shown, "paid_end") && !reached(&shown, "expired_end"));
    let round = fire_due_once(&app.state, Utc::now() + Duration::days(4)).await;
    assert_eq!(round.claimed, 0);
}

/// The deadline and the payments race for real: a timer round and the messages run at once on
/// several instances. Each instance ends one way only; a payment answered 200 is one that won
/// (its instance ended paid), and a late one is refused, never delivered to an instance the
/// deadline already took.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deadline_and_payments_racing_each_win_exactly_once() {
    const N: usize = 12;
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/race", "r.bpmn", &payment_or_deadline()).await;
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(start_ok(&app, "timers/race", &json!({"key": format!("k{i}")})).await);
    }
    let after_deadline = Utc::now() + Duration::days(3) + Duration::minutes(1);
    let payments = async {
        let mut answers = Vec::new();
        for i in 0..N {
            answers.push(send(&app, "paid", &json!({"key": format!("k{i}")}), &[]).await);
        }
        answers
    };
    let timers = async {
        let mut fired = 0;
        loop {
            let round = fire_due_once(&app.state, after_deadline).await;
            fired += round.fired;
            if round.claimed == 0 {
                break fired;
            }
        }
    };
    let (answers, fired) = tokio::join!(payments, timers);
    let accepted = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::OK)
        .count();
    for (status, body) in &answers {
        assert!(
            *status == StatusCode::OK || body["error_code"] == "message_not_accepted",
            "{status} {body}"
        );
    }
    let (mut paid, mut expired) = (0, 0);
    for id in ids {
        let shown = show(&app, id).await;
        assert_eq!(shown["status"], "complete", "{shown}");
        match (reached(&shown, "paid_end"), reached(&shown, "expired_end")) {
            (true, false) => paid += 1,
            (false, true) => expired += 1,
            _ => panic!("one end only: {shown}"),
        }
        assert!(pending_timers(&shown).is_empty(), "{shown}");
    }
    assert_eq!(paid, accepted, "{answers:?}");
    assert_eq!(expired, fired);
    assert_eq!(paid + expired, N);
}

/// A user task reminded every hour (non-interrupting cycle, three times) and abandoned after a
/// day (interrupting duration).
fn reminded_task() -> String {
    definitions(
        r#"<bpmn:process id="chase" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:userTask id="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="done" />
    <bpmn:endEvent id="done" />
    <bpmn:boundaryEvent id="hourly" attachedToRef="approve" cancelActivity="false">
      <bpmn:timerEventDefinition><bpmn:timeCycle>"R3/PT1H"</bpmn:timeCycle></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="hourly" targetRef="remind" />
    <bpmn:scriptTask id="remind"><bpmn:script>reminders = get_task_data_value('reminders', 0) + 1</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f4" sourceRef="remind" targetRef="reminded" />
    <bpmn:endEvent id="reminded" />
    <bpmn:boundaryEvent id="abandon" attachedToRef="approve">
      <bpmn:timerEventDefinition><bpmn:timeDuration>"P1D"</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f5" sourceRef="abandon" targetRef="abandoned" />
    <bpmn:endEvent id="abandoned" />
  </bpmn:process>"#,
    )
}

#[tokio::test]
async fn a_cycle_reminds_without_interrupting_and_a_deadline_interrupts() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/chase", "c.bpmn", &reminded_task()).await;
    let id = start_ok(&app, "timers/chase", &json!({})).await;
    let start = Utc::now();
    for hour in 1..=4 {
        fire_due_once(
            &app.state,
            start + Duration::hours(hour) + Duration::minutes(1),
        )
        .await;
    }
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    let reminded = shown["tasks"].as_array().unwrap().iter();
    let reminded = reminded.filter(|t| t["element_id"] == "reminded").count();
    assert_eq!(reminded, 3, "{shown}");
    // each reminder's path works on its own copy of the data (docs/bpmn.md, boundary events):
    // none of them is the instance's until the process ends
    assert!(shown["data"].get("reminders").is_none(), "{shown}");
    let timers = pending_timers(&shown);
    assert_eq!(timers.len(), 1, "only the deadline is left: {shown}");
    assert_eq!(timers[0]["element_id"], "abandon");

    fire_due_once(&app.state, start + Duration::days(1) + Duration::minutes(1)).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert!(reached(&shown, "abandoned"), "{shown}");
    // each counted from the data the task was reached with, as in SpiffWorkflow
    assert_eq!(shown["data"]["reminders"], 1, "{shown}");
    let approve = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["element_id"] == "approve")
        .unwrap()
        .clone();
    assert_eq!(approve["state"], "CANCELLED");
}

/// Waits for the signal `release`, then ends.
fn signal_waiter() -> String {
    definitions(
        r#"<bpmn:signal id="sig_release" name="release" />
  <bpmn:process id="held" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// Throws `release` from a signal end event.
fn signal_thrower() -> String {
    definitions(
        r#"<bpmn:signal id="sig_release" name="release" />
  <bpmn:process id="releaser" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="throw" />
    <bpmn:endEvent id="throw"><bpmn:signalEventDefinition signalRef="sig_release" /></bpmn:endEvent>
  </bpmn:process>"#,
    )
}

async fn send_signal(app: &TestApp, address: &str, name: &str, scope: &str) -> (StatusCode, Value) {
    let response = app
        .client
        .post(format!("{address}/v1.0/signals/{}", urlencode(name)))
        .bearer_auth(app.token(scope))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_thrown_signal_reaches_every_waiting_instance() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "signals/held", "h.bpmn", &signal_waiter()).await;
    upload_ok(&app, "signals/releaser", "r.bpmn", &signal_thrower()).await;
    let held = [
        start_ok(&app, "signals/held", &json!({})).await,
        start_ok(&app, "signals/held", &json!({})).await,
    ];
    let thrower = start_ok(&app, "signals/releaser", &json!({})).await;
    assert_eq!(show(&app, thrower).await["status"], "complete");
    for id in held {
        assert_eq!(show(&app, id).await["status"], "complete");
    }
    // nothing waits any more: the signal is not kept
    let (status, body) = send_signal(&app, &app.address, "release", "signals:send").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"signal_name": "release", "delivered_to": [], "started": []})
    );
}

#[tokio::test]
async fn a_signal_from_the_api_needs_its_scope_and_says_whom_it_reached() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "signals/held", "h.bpmn", &signal_waiter()).await;
    let first = start_ok(&app, "signals/held", &json!({})).await;
    let second = start_ok(&app, "signals/held", &json!({})).await;
    let (status, body) = send_signal(&app, &app.address, "release", "signals:send:other").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error_code"], "not_authorized");
    let (status, body) = send_signal(&app, &app.address, "release", "signals:send:release").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["delivered_to"], json!([first, second]));
    assert_eq!(show(&app, first).await["status"], "complete");
    let (status, body) = send_signal(&app, &app.address, &"s".repeat(256), "admin").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error_code"], "invalid_signal_name");
}

/// Many concurrent throws of one signal through two servers on one database: each waiting
/// instance catches it exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_signals_through_two_servers_reach_each_instance_once() {
    const N: usize = 20;
    let first = spawn_app_without_workers().await;
    let database_url = first.settings.database_url.clone();
    let second = spawn_app_with(|s| {
        s.database_url = database_url;
        s.run_workers = false;
    })
    .await;
    upload_ok(&first, "signals/held", "h.bpmn", &signal_waiter()).await;
    let mut ids = vec![];
    for _ in 0..N {
        ids.push(start_ok(&first, "signals/held", &json!({})).await);
    }
    let servers = [first.address.clone(), second.address.clone()];
    let throws = (0..8).map(|n| {
        let address = servers[n % 2].clone();
        let app = &first;
        async move { send_signal(app, &address, "release", "admin").await }
    });
    let answers = futures_util::future::join_all(throws).await;
    let mut delivered: Vec<i64> = vec![];
    for (status, body) in answers {
        assert_eq!(status, StatusCode::OK, "{body}");
        delivered.extend(
            body["delivered_to"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap()),
        );
    }
    delivered.sort_unstable();
    assert_eq!(
        delivered, ids,
        "every instance caught the signal exactly once"
    );
    for id in ids {
        let shown = show(&first, id).await;
        assert_eq!(shown["status"], "complete");
        let ends = shown["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["element_id"] == "done")
            .count();
        assert_eq!(ends, 1);
    }
}

/// An order waits for approval; a `cancel_order` message for its key starts the interrupting
/// event subprocess, which ends the approval wait (the message reaches the listener through
/// the same correlation as any receive).
#[tokio::test]
async fn a_message_starts_an_interrupting_event_subprocess() {
    let app = spawn_app_without_workers().await;
    let xml = definitions(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_cancel"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_cancel" name="cancel_order" />
  <bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:userTask id="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="done" />
    <bpmn:endEvent id="done" />
    <bpmn:subProcess id="cancelling" triggeredByEvent="true">
      <bpmn:startEvent id="cancel_start">
        <bpmn:messageEventDefinition messageRef="m_cancel">
          <bpmn:extensionElements>
            <spiffworkflow:messageVariable>cancellation</spiffworkflow:messageVariable>
            <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>key</spiffworkflow:propertyId><spiffworkflow:expression>key</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
          </bpmn:extensionElements>
        </bpmn:messageEventDefinition>
      </bpmn:startEvent>
      <bpmn:sequenceFlow id="f3" sourceRef="cancel_start" targetRef="cancelled" />
      <bpmn:endEvent id="cancelled" />
    </bpmn:subProcess>
  </bpmn:process>"#,
    );
    upload_ok(&app, "orders/cancellable", "o.bpmn", &xml).await;
    let kept = start_ok(&app, "orders/cancellable", &json!({"key": "a"})).await;
    let cancelled = start_ok(&app, "orders/cancellable", &json!({"key": "b"})).await;
    let (status, body) = send(
        &app,
        "cancel_order",
        &json!({"key": "b", "why": "late"}),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["process_instance"]["id"], cancelled, "{body}");
    assert_eq!(body["process_instance"]["status"], "complete", "{body}");
    assert_eq!(body["task_data"]["cancellation"]["why"], "late", "{body}");
    let shown = show(&app, cancelled).await;
    assert!(
        reached(&shown, "cancelled") && !reached(&shown, "done"),
        "{shown}"
    );
    assert_eq!(show(&app, kept).await["status"], "user_input_required");

    // the other order completes normally; its listener's receive is cancelled with it
    let approve = waiting_task(&app, kept, "approve").await;
    let (status, done) = complete_task(&app, kept, &approve, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    let (status, late) = send(&app, "cancel_order", &json!({"key": "a"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{late}");
}

/// A process started every hour, twice (`R2/PT1H`).
fn hourly(expression: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="hourly" isExecutable="true">
    <bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>{expression}</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="tick" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

async fn instance_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM process_instances")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_timer_start_event_starts_one_instance_per_occurrence() {
    let app = spawn_app_without_workers().await;
    let uploaded = Utc::now();
    upload_ok(&app, "timers/hourly", "h.bpmn", &hourly("\"R2/PT1H\"")).await;
    let at = |minutes: i64| uploaded + Duration::minutes(minutes);
    assert_eq!(fire_due_once(&app.state, at(59)).await.claimed, 0);
    let round = fire_due_once(&app.state, at(61)).await;
    assert_eq!((round.claimed, round.fired), (1, 1));
    assert_eq!(instance_count(&app).await, 1);
    let (_, listed) = get(&app, "/v1.0/process-instances").await;
    assert_eq!(listed["results"][0]["status"], "complete", "{listed}");
    // the same occurrence never twice
    assert_eq!(fire_due_once(&app.state, at(62)).await.claimed, 0);
    // a new version with the same timer keeps its schedule
    upload_ok(
        &app,
        "timers/hourly",
        "h.bpmn",
        &hourly("\"R2/PT1H\"").replace("done", "end"),
    )
    .await;
    fire_due_once(&app.state, at(121)).await;
    assert_eq!(instance_count(&app).await, 2);
    // R2: that was the last
    assert_eq!(fire_due_once(&app.state, at(24 * 60)).await.claimed, 0);
    assert_eq!(instance_count(&app).await, 2);
}

/// Two timer workers (as two replicas would) reach the same occurrence of a timer start event
/// at once, even with its claim lapsed: one instance starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_timer_workers_start_one_instance_per_occurrence() {
    let app = spawn_app_without_workers().await;
    let uploaded = Utc::now();
    upload_ok(&app, "timers/hourly", "h.bpmn", &hourly("\"R/PT1H\"")).await;
    let due = uploaded + Duration::minutes(61);
    for occurrence in 1..=3 {
        sqlx::query("UPDATE start_timers SET claimed_until = NULL")
            .execute(&app.pool)
            .await
            .unwrap();
        let at = due + Duration::hours(occurrence - 1);
        let (a, b) = tokio::join!(fire_due_once(&app.state, at), fire_due_once(&app.state, at));
        assert_eq!(a.fired + b.fired, 1, "{a:?} {b:?}");
        assert_eq!(instance_count(&app).await, occurrence);
    }
}

#[tokio::test]
async fn a_version_without_the_timer_start_drops_its_schedule() {
    let app = spawn_app_without_workers().await;
    let uploaded = Utc::now();
    upload_ok(&app, "timers/hourly", "h.bpmn", &hourly("\"R/PT1H\"")).await;
    let plain = hourly("\"R/PT1H\"").replace(
        r#"<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeCycle>"R/PT1H"</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>"#,
        r#"<bpmn:startEvent id="tick" />"#,
    );
    assert!(!plain.contains("timeCycle"));
    upload_ok(&app, "timers/hourly", "h.bpmn", &plain).await;
    assert_eq!(
        fire_due_once(&app.state, uploaded + Duration::hours(5))
            .await
            .claimed,
        0
    );
    assert_eq!(instance_count(&app).await, 0);
    // a timer that cannot be scheduled refuses the upload, naming the element
    let (status, body) = upload(&app, "timers/hourly", "h.bpmn", &hourly("\"every hour\"")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["element_id"], "tick", "{body}");
}

#[tokio::test]
async fn a_signal_starts_the_models_with_its_start_event() {
    let app = spawn_app_without_workers().await;
    let started_by_signal = definitions(
        r#"<bpmn:signal id="sig_go" name="go" />
  <bpmn:process id="on_go" isExecutable="true">
    <bpmn:startEvent id="go"><bpmn:signalEventDefinition signalRef="sig_go" /></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="go" targetRef="work" />
    <bpmn:userTask id="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "signals/on-go", "g.bpmn", &started_by_signal).await;
    // it has no none start event: it cannot be started by hand
    let (status, body) = start(&app, "signals/on-go", &json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = send_signal(&app, &app.address, "go", "signals:send").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let started = body["started"].as_array().unwrap().clone();
    assert_eq!(started.len(), 1, "{body}");
    let shown = show(&app, started[0].as_i64().unwrap()).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert_eq!(shown["process_model_identifier"], "signals/on-go");
}

/// Escalation, conditional and link events through HTTP: a review subprocess escalates (a
/// non-interrupting boundary records it and the review goes on); in the review, completing the
/// `cancel` user task sets the flag that the conditional boundary on `decide` waits for, which
/// interrupts `decide`; after the review a link jumps to the end of the flow.
#[tokio::test]
async fn escalations_conditions_and_links_run_over_http() {
    let app = spawn_app_without_workers().await;
    let xml = definitions(
        r#"<bpmn:escalation id="esc_slow" escalationCode="slow" />
  <bpmn:process id="review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="reviewing" />
    <bpmn:subProcess id="reviewing">
      <bpmn:startEvent id="r_start" />
      <bpmn:sequenceFlow id="r1" sourceRef="r_start" targetRef="slow" />
      <bpmn:intermediateThrowEvent id="slow"><bpmn:escalationEventDefinition escalationRef="esc_slow" /></bpmn:intermediateThrowEvent>
      <bpmn:sequenceFlow id="r2" sourceRef="slow" targetRef="fork" />
      <bpmn:parallelGateway id="fork" />
      <bpmn:sequenceFlow id="r3" sourceRef="fork" targetRef="decide" />
      <bpmn:sequenceFlow id="r4" sourceRef="fork" targetRef="cancel" />
      <bpmn:userTask id="decide" />
      <bpmn:userTask id="cancel" />
      <bpmn:sequenceFlow id="r5" sourceRef="decide" targetRef="decided" />
      <bpmn:sequenceFlow id="r6" sourceRef="cancel" targetRef="cancel_asked" />
      <bpmn:endEvent id="decided" /><bpmn:endEvent id="cancel_asked" />
      <bpmn:boundaryEvent id="cancelled" attachedToRef="decide">
        <bpmn:conditionalEventDefinition><bpmn:condition>order_cancelled</bpmn:condition></bpmn:conditionalEventDefinition>
      </bpmn:boundaryEvent>
      <bpmn:sequenceFlow id="r7" sourceRef="cancelled" targetRef="withdrawn" />
      <bpmn:endEvent id="withdrawn" />
    </bpmn:subProcess>
    <bpmn:boundaryEvent id="noted" attachedToRef="reviewing" cancelActivity="false">
      <bpmn:escalationEventDefinition escalationRef="esc_slow" />
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="noted" targetRef="note" />
    <bpmn:scriptTask id="note"><bpmn:script>escalated = True</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="note" targetRef="noted_end" />
    <bpmn:endEvent id="noted_end" />
    <bpmn:sequenceFlow id="f4" sourceRef="reviewing" targetRef="jump" />
    <bpmn:intermediateThrowEvent id="jump"><bpmn:linkEventDefinition name="finish" /></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="landing"><bpmn:linkEventDefinition name="finish" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f5" sourceRef="landing" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "events/review", "r.bpmn", &xml).await;
    let id = start_ok(&app, "events/review", &json!({"order_cancelled": false})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert!(reached(&shown, "noted_end"), "{shown}");

    let cancel = waiting_task(&app, id, "cancel").await;
    let (status, done) = complete_task(&app, id, &cancel, &json!({"order_cancelled": true})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    let shown = show(&app, id).await;
    assert!(
        reached(&shown, "withdrawn") && !reached(&shown, "decided"),
        "{shown}"
    );
    assert!(
        reached(&shown, "landing") && reached(&shown, "done"),
        "{shown}"
    );
    // the escalation's path ended before the others: what it wrote is merged in at the end
    assert_eq!(shown["data"]["escalated"], true, "{shown}");
}

/// Waits at one catch event for `part_a` and `part_b` (`parallel`: both; else either).
fn assembler(process_id: &str, parallel: bool) -> String {
    definitions(&format!(
        r#"<bpmn:message id="m_a" name="part_a" /><bpmn:message id="m_b" name="part_b" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="parts" />
    <bpmn:intermediateCatchEvent id="parts" parallelMultiple="{parallel}">
      <bpmn:messageEventDefinition messageRef="m_a" />
      <bpmn:messageEventDefinition messageRef="m_b" />
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="parts" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Throws `part_a` and `part_b` from one end event.
fn supplier() -> String {
    definitions(
        r#"<bpmn:message id="m_a" name="part_a" /><bpmn:message id="m_b" name="part_b" />
  <bpmn:process id="supplier" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ship" />
    <bpmn:endEvent id="ship">
      <bpmn:messageEventDefinition messageRef="m_a" />
      <bpmn:messageEventDefinition messageRef="m_b" />
    </bpmn:endEvent>
  </bpmn:process>"#,
    )
}

async fn buffer(app: &TestApp, name: &str) {
    let uuid = uuid::Uuid::new_v4().to_string();
    let q = [
        ("time_to_live_in_seconds", "60"),
        ("message_instance_uuid", uuid.as_str()),
    ];
    let (status, body) = send(app, name, &json!({}), &q).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test]
async fn a_catch_of_several_messages_takes_one_or_all_from_the_buffer() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "parts/all", "a.bpmn", &assembler("all_parts", true)).await;
    buffer(&app, "part_a").await;
    buffer(&app, "part_b").await;
    let id = start_ok(&app, "parts/all", &json!({})).await;
    assert_eq!(show(&app, id).await["status"], "complete");

    upload_ok(&app, "parts/any", "y.bpmn", &assembler("any_part", false)).await;
    buffer(&app, "part_a").await;
    buffer(&app, "part_b").await;
    let id = start_ok(&app, "parts/any", &json!({})).await;
    assert_eq!(show(&app, id).await["status"], "complete");
    // one of them was taken; the other still waits in the buffer for someone else
    let ready = messages(&app, "name=part_b&status=ready&message_type=send").await;
    assert_eq!(ready.len(), 1, "{ready:?}");
}

/// One end event throws both messages; the instance waiting for both at one catch event gets
/// both, in the same transaction, and completes.
#[tokio::test]
async fn a_multiple_throw_completes_a_catch_waiting_for_all() {
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "parts/all", "a.bpmn", &assembler("all_parts", true)).await;
    upload_ok(&app, "parts/supplier", "s.bpmn", &supplier()).await;
    let waiting = start_ok(&app, "parts/all", &json!({})).await;
    assert_eq!(show(&app, waiting).await["status"], "waiting");
    let supplier = start_ok(&app, "parts/supplier", &json!({})).await;
    assert_eq!(show(&app, supplier).await["status"], "complete");
    assert_eq!(show(&app, waiting).await["status"], "complete");
    let left = messages(&app, "status=ready").await;
    assert!(left.is_empty(), "{left:?}");
}

/// A start event with both messages (`parallelMultiple`): the first message starts the
/// instance, which waits at the start event for the second (correlated by the order id the
/// first established), then runs.
#[tokio::test]
async fn a_parallel_start_event_starts_on_one_message_and_waits_for_the_other() {
    let app = spawn_app_without_workers().await;
    let xml = definitions(
        r#"<bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_a"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_b"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_a" name="order_paid" /><bpmn:message id="m_b" name="order_packed" />
  <bpmn:process id="ship" isExecutable="true">
    <bpmn:startEvent id="both" parallelMultiple="true">
      <bpmn:messageEventDefinition messageRef="m_a" />
      <bpmn:messageEventDefinition messageRef="m_b" />
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="both" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "orders/ship", "s.bpmn", &xml).await;
    let (status, first) = send(&app, "order_paid", &json!({"order_id": 7}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["process_instance"]["status"], "waiting", "{first}");
    let id = first["process_instance"]["id"].as_i64().unwrap();
    let (status, second) = send(&app, "order_packed", &json!({"order_id": 7}), &[]).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["process_instance"]["id"], id, "{second}");
    assert_eq!(second["process_instance"]["status"], "complete", "{second}");
}

/// Two transactions fire the same timer (as two replicas whose claims overlapped would): the
/// second waits for the first's instance lock, then finds the timer gone and does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timer_fired_by_two_transactions_fires_once() {
    use workflow_backend::ids::InstanceId;
    use workflow_backend::services::UnitOfWork;
    let app = spawn_app_without_workers().await;
    upload_ok(&app, "timers/hour", "h.bpmn", &waits_an_hour("hour")).await;
    let id = InstanceId(start_ok(&app, "timers/hour", &json!({})).await);
    let timer: i64 = sqlx::query_scalar("SELECT id FROM timers")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let mut first = UnitOfWork::begin(&app.state.pool, &app.state.models)
        .await
        .unwrap();
    assert!(first.fire_timer(id, timer).await.unwrap());
    let state = app.state.clone();
    let second = tokio::spawn(async move {
        let mut unit = UnitOfWork::begin(&state.pool, &state.models).await.unwrap();
        let fired = unit.fire_timer(id, timer).await.unwrap();
        unit.commit().await.unwrap();
        fired
    });
    first.commit().await.unwrap();
    assert!(
        !second.await.unwrap(),
        "the second transaction fired it again"
    );
    let shown = show(&app, id.0).await;
    let ends = shown["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["element_id"] == "done")
        .count();
    assert_eq!(
        (shown["status"].as_str(), ends),
        (Some("complete"), 1),
        "{shown}"
    );
}

/// A non-interrupting timer event subprocess reminds while the approval waits; its listener's
/// timer is a pending timer of the instance like any other, and it ends with the process.
#[tokio::test]
async fn a_timer_event_subprocess_reminds_while_the_process_waits() {
    let app = spawn_app_without_workers().await;
    let xml = definitions(
        r#"<bpmn:process id="remind" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="approve" />
    <bpmn:userTask id="approve" />
    <bpmn:sequenceFlow id="f1" sourceRef="approve" targetRef="done" />
    <bpmn:endEvent id="done" />
    <bpmn:subProcess id="reminder" triggeredByEvent="true">
      <bpmn:startEvent id="tick" isInterrupting="false">
        <bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition>
      </bpmn:startEvent>
      <bpmn:sequenceFlow id="r0" sourceRef="tick" targetRef="note" />
      <bpmn:scriptTask id="note"><bpmn:script>reminded = True</bpmn:script></bpmn:scriptTask>
      <bpmn:sequenceFlow id="r1" sourceRef="note" targetRef="noted" />
      <bpmn:endEvent id="noted" />
    </bpmn:subProcess>
  </bpmn:process>"#,
    );
    upload_ok(&app, "events/remind", "r.bpmn", &xml).await;
    let id = start_ok(&app, "events/remind", &json!({})).await;
    let timers = pending_timers(&show(&app, id).await);
    assert_eq!(timers.len(), 1);
    assert_eq!(timers[0]["element_id"], "tick");
    let round = fire_due_once(&app.state, due_of(&timers[0])).await;
    assert_eq!(round.fired, 1);
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "user_input_required", "{shown}");
    assert_eq!(shown["data"]["reminded"], true, "{shown}");

    let approve = waiting_task(&app, id, "approve").await;
    let (status, done) = complete_task(&app, id, &approve, &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["process_instance"]["status"], "complete", "{done}");
    assert!(pending_timers(&show(&app, id).await).is_empty());
}
