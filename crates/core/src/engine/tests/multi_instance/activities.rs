//! Our own multi-instance activities beyond scripts: a service task calling once per item,
//! errors and boundaries on the activity, receives with their own correlation, and the
//! cardinality limit.

use super::*;

const SERVICE_MI: &str = r#"<bpmn:serviceTask id="mi"><bpmn:extensionElements>
  <spiffworkflow:serviceTaskOperator id="http/GetRequest" resultVariable="result">
    <spiffworkflow:parameters>
      <spiffworkflow:parameter id="url" type="str" value="&#34;/orders/&#34; + str(order)"/>
    </spiffworkflow:parameters>
  </spiffworkflow:serviceTaskOperator></bpmn:extensionElements>
  <bpmn:multiInstanceLoopCharacteristics>
    <bpmn:loopDataInputRef>orders</bpmn:loopDataInputRef>
    <bpmn:loopDataOutputRef>results</bpmn:loopDataOutputRef>
    <bpmn:inputDataItem id="order"/><bpmn:outputDataItem id="result"/>
  </bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>"#;

fn service_instances(state: &InstanceState) -> Vec<Uuid> {
    state
        .tasks
        .iter()
        .filter(|t| {
            t.element_id == "mi" && t.state.is_live() && !state.internal.multi.contains_key(&t.guid)
        })
        .map(|t| t.guid)
        .collect()
}

/// One connector call per item, each with its own task and parameters; results arrive in
/// any order and are collected in item order.
#[test]
fn a_parallel_service_task_calls_once_per_item() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE_MI}<bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (mut state, effects) = start_with(&m, json!({"orders": [7, 8, 9]}));
    let calls: Vec<Uuid> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallService { task_guid } => Some(*task_guid),
            _ => None,
        })
        .collect();
    assert_eq!(calls, service_instances(&state));
    assert_eq!(calls.len(), 3);
    let urls: Vec<Value> = calls
        .iter()
        .map(|guid| service_call(&m, &state, *guid).unwrap().params["url"].clone())
        .collect();
    assert_eq!(
        urls,
        [json!("/orders/7"), json!("/orders/8"), json!("/orders/9")]
    );
    for (guid, result) in [(calls[2], "nine"), (calls[0], "seven"), (calls[1], "eight")] {
        step(
            &m,
            &mut state,
            Event::ServiceSucceeded {
                task_guid: guid,
                result: json!(result),
            },
        )
        .unwrap();
    }
    completed_with(
        &state,
        json!({"orders": [7, 8, 9], "results": ["seven", "eight", "nine"]}),
    );
    // a late repeat of a result is refused: the instance is no longer live
    let again = step(
        &m,
        &mut state,
        Event::ServiceSucceeded {
            task_guid: calls[0],
            result: json!("x"),
        },
    );
    assert!(again.is_err());
}

/// An error of one instance reaches the activity's error boundary: the activity and every
/// other instance are cancelled, their calls with them.
#[test]
fn an_instance_error_is_caught_on_the_activity() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{SERVICE_MI}
        <bpmn:boundaryEvent id="failed" attachedToRef="mi"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>
        <bpmn:endEvent id="e"/><bpmn:endEvent id="e_failed"/>{}{}"#,
        chain(&["s", "mi", "e"]),
        chain(&["failed", "e_failed"])
    ));
    let (mut state, _) = start_with(&m, json!({"orders": [1, 2, 3]}));
    let calls = service_instances(&state);
    let effects = step(
        &m,
        &mut state,
        Event::ServiceFailed {
            task_guid: calls[1],
            error_code: "502".into(),
            message: "bad gateway".into(),
        },
    )
    .unwrap();
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(task(&state, "e_failed").state, TaskState::Completed);
    let cancelled: Vec<Uuid> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::CancelServiceCall { task_guid } => Some(*task_guid),
            _ => None,
        })
        .collect();
    assert_eq!(cancelled, [calls[0], calls[2]]);
    assert!(state.internal.local_data.is_empty() && state.internal.multi.is_empty());
}

/// A message boundary on the activity interrupts every instance.
#[test]
fn a_boundary_on_the_activity_interrupts_every_instance() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:userTask id="mi">{ITEMS}</bpmn:userTask>
            <bpmn:boundaryEvent id="stop" attachedToRef="mi"><bpmn:messageEventDefinition messageRef="m_stop"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="e"/><bpmn:endEvent id="e_stop"/>{}{}"#,
            chain(&["s", "mi", "e"]),
            chain(&["stop", "e_stop"])
        ),
        r#"<bpmn:message id="m_stop" name="stop"/>"#,
    );
    let (mut state, effects) = start_with(&m, json!({"orders": [1, 2]}));
    let waits = effects
        .iter()
        .filter(|e| matches!(e, Effect::WaitForMessage { .. }))
        .count();
    assert_eq!(waits, 1, "one boundary, on the activity");
    let stop = task(&state, "stop").guid;
    deliver_guid(&m, &mut state, stop, "stop", json!({})).unwrap();
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    let cancelled = state
        .tasks
        .iter()
        .filter(|t| t.element_id == "mi" && t.state == TaskState::Cancelled)
        .count();
    assert_eq!(cancelled, 3, "the activity and its two instances");
    assert!(state.internal.local_data.is_empty());
}

/// Each instance of a receive task waits for the message of its own item.
#[test]
fn receive_instances_expect_their_own_correlation() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:receiveTask id="mi" messageRef="m_reply">
              <bpmn:extensionElements><spiffworkflow:processVariableCorrelation>
                <spiffworkflow:propertyId>order_id</spiffworkflow:propertyId>
                <spiffworkflow:expression>order</spiffworkflow:expression>
              </spiffworkflow:processVariableCorrelation></bpmn:extensionElements>
              {ITEMS}</bpmn:receiveTask>
            <bpmn:endEvent id="e"/>{}"#,
            chain(&["s", "mi", "e"])
        ),
        CORRELATION,
    );
    let (_, effects) = start_with(&m, json!({"orders": [11, 12]}));
    let expected: Vec<Value> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaitForMessage { expected, .. } => Some(expected["order_id"].clone()),
            _ => None,
        })
        .collect();
    assert_eq!(expected, [json!(11), json!(12)]);
}

/// A cardinality beyond the limit fails before any instance is made.
#[test]
fn a_cardinality_beyond_the_limit_fails_at_once() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:userTask id="mi"><bpmn:multiInstanceLoopCharacteristics isSequential="true">
          <bpmn:loopCardinality>n</bpmn:loopCardinality></bpmn:multiInstanceLoopCharacteristics></bpmn:userTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (state, _) = start_with(&m, json!({"n": 1_000_000_000}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state
        .error
        .unwrap()
        .message
        .contains("more than 5000 instances"));
    let (state, _) = start_with(&m, json!({"n": 5_000}));
    assert_eq!(state.status, InstanceStatus::UserInputRequired);
}
