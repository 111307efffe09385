//! Engine tests: each family's behaviour on small models built here, and SpiffArena's
//! fixtures. Every step runs at the same pinned time with task ids from a per-test sequence,
//! so runs are reproducible and tests may assert exact ids and times.

mod activities;
mod boundaries;
mod branches;
mod conformance_load;
mod context;
mod data_stores;
mod events;
mod fixtures;
mod flow;
mod joins;
mod lifecycle;
mod multi_instance;
mod panics;
mod paused;
mod payloads;
mod scale;
mod spiffworkflow;
mod spiffworkflow_events;
mod timers;

use super::*;
use crate::bpmn::{build_model, ModelSpec, BPMN_NS, SPIFF_NS};
use serde_json::json;
use std::cell::Cell;

/// The time every step of these tests runs at.
const NOW: &str = "2026-11-26T09:30:00Z";

thread_local! {
    /// Steps run so far by this test (each test runs on its own thread).
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// The context of the next step: the pinned time, and task ids seeded by the step's number
/// (step n of a test creates tasks `0000000n-0000-4000-8000-00000000000k`).
fn next_context() -> StepContext {
    let n = STEPS.with(|steps| {
        steps.set(steps.get() + 1);
        steps.get()
    });
    StepContext::new(
        now(),
        TaskIds::from_seed(Uuid::from_u128(u128::from(n) << 96)),
        crate::test_support::script_host(),
    )
}

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(NOW).unwrap().into()
}

fn start(
    model: &ModelSpec,
    process_id: &str,
    event: Event,
) -> Result<(InstanceState, Vec<Effect>), EngineError> {
    super::start(model, process_id, event, &mut next_context())
}

fn step(
    model: &ModelSpec,
    state: &mut InstanceState,
    event: Event,
) -> Result<Vec<Effect>, EngineError> {
    super::step(model, state, event, &mut next_context())
}

fn service_call(
    model: &ModelSpec,
    state: &InstanceState,
    task_guid: Uuid,
) -> Result<ServiceCall, InstanceError> {
    super::service_call(model, state, task_guid, &next_context().expr())
}

fn model_with(body: &str, extra: &str) -> ModelSpec {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN_NS}" xmlns:spiffworkflow="{SPIFF_NS}" id="Defs">
<bpmn:process id="P" isExecutable="true">{body}</bpmn:process>{extra}
</bpmn:definitions>"#
    );
    build_model(&[("t.bpmn".to_string(), xml)], None).unwrap_or_else(|e| panic!("refused: {e}"))
}

fn model(body: &str) -> ModelSpec {
    model_with(body, "")
}

fn map(v: Value) -> Map {
    v.as_object().cloned().unwrap_or_default()
}

/// A start at the process's none start event, with `data` (a JSON object).
fn start_event(data: Value) -> Event {
    Event::Start {
        start_event_id: None,
        data: map(data),
        message: None,
        signal: None,
    }
}

/// A start by the message `name`, carrying `payload`.
fn message_start(name: &str, payload: Value) -> Event {
    Event::Start {
        start_event_id: None,
        data: Map::new(),
        message: Some((name.to_string(), payload)),
        signal: None,
    }
}

fn start_with(m: &ModelSpec, data: Value) -> (InstanceState, Vec<Effect>) {
    start(m, "P", start_event(data)).expect("start")
}

/// Starts `process_id` of `m` with `data`; the new instance.
fn start_process(m: &ModelSpec, process_id: &str, data: Value) -> InstanceState {
    start(m, process_id, start_event(data)).expect("start").0
}

/// Completes the waiting user or manual task `guid` with `data` (merged into task data).
fn complete_guid(m: &ModelSpec, st: &mut InstanceState, guid: Uuid, data: Value) -> Vec<Effect> {
    step(
        m,
        st,
        Event::CompleteTask {
            task_guid: guid,
            data: map(data),
        },
    )
    .expect("the task completes")
}

/// Delivers message `name` to the waiting task `guid`.
fn deliver_guid(
    m: &ModelSpec,
    st: &mut InstanceState,
    guid: Uuid,
    name: &str,
    payload: Value,
) -> Result<Vec<Effect>, EngineError> {
    step(
        m,
        st,
        Event::MessageDelivered {
            task_guid: guid,
            name: name.into(),
            payload,
        },
    )
}

/// The most recent task for an element.
fn task<'a>(st: &'a InstanceState, element: &str) -> &'a Task {
    st.tasks
        .iter()
        .rev()
        .find(|t| t.element_id == element)
        .unwrap_or_else(|| panic!("no task for {element}"))
}

fn count(st: &InstanceState, element: &str) -> usize {
    st.tasks.iter().filter(|t| t.element_id == element).count()
}

fn snapshot(st: &InstanceState) -> Value {
    serde_json::to_value(st).unwrap()
}

const SERVICE: &str = r#"<bpmn:serviceTask id="svc"><bpmn:extensionElements>
  <spiffworkflow:serviceTaskOperator id="http/GetRequest" resultVariable="resp">
    <spiffworkflow:parameters>
      <spiffworkflow:parameter id="url" type="str" value="base + &#34;/orders/&#34; + str(order_id)" required="true"/>
      <spiffworkflow:parameter id="timeout" type="int" value="5"/>
      <spiffworkflow:parameter id="token" type="str" value="token" required="true"/>
    </spiffworkflow:parameters>
    <spiffworkflow:retry retries="3"/>
  </spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>"#;

const CORRELATION: &str = r#"
  <bpmn:message id="m_req" name="request"/><bpmn:message id="m_reply" name="reply"/>
  <bpmn:correlationProperty id="order_id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_req"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:formalExpression>order["id"]</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:correlationProperty id="customer">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:messagePath>customer</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:correlationProperty id="only_request">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_req"><bpmn:messagePath>tag</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>"#;

/// flows "a->b" helper: `flow("f1", "a", "b")`.
fn flow(id: &str, from: &str, to: &str) -> String {
    format!(r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"/>"#)
}

fn cond_flow(id: &str, from: &str, to: &str, cond: &str) -> String {
    format!(
        r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"><bpmn:conditionExpression>{cond}</bpmn:conditionExpression></bpmn:sequenceFlow>"#
    )
}

fn script(id: &str, src: &str) -> String {
    format!(r#"<bpmn:scriptTask id="{id}"><bpmn:script>{src}</bpmn:script></bpmn:scriptTask>"#)
}

/// A model of its own defining the process `other`: one script task (`work`, `done = True`).
fn other_model() -> ModelSpec {
    build_model(
        &[(
            "other.bpmn".to_string(),
            format!(
                r#"<bpmn:definitions xmlns:bpmn="{BPMN_NS}" id="D"><bpmn:process id="other" isExecutable="true">
                <bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}</bpmn:process></bpmn:definitions>"#,
                script("work", "done = True"),
                chain(&["s", "work", "e"])
            ),
        )],
        None,
    )
    .unwrap()
}

fn chain(ids: &[&str]) -> String {
    ids.windows(2)
        .map(|w| flow(&format!("{}_to_{}", w[0], w[1]), w[0], w[1]))
        .collect()
}
