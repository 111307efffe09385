//! Event-based gateways (a timer, a message or a signal wins the race) and signals thrown in
//! an instance.

use super::*;

fn race_model() -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:eventBasedGateway id="g"/>
            <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition messageRef="m_req"/></bpmn:intermediateCatchEvent>
            {}
            <bpmn:intermediateCatchEvent id="stop"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateCatchEvent>
            <bpmn:endEvent id="ok"/><bpmn:endEvent id="expired"/><bpmn:endEvent id="stopped"/>
            {}{}{}{}{}{}"#,
            timer_catch("deadline", "timeDuration", "\"P3D\""),
            flow("f0", "s", "g"),
            flow("f1", "g", "paid"),
            flow("f2", "g", "deadline"),
            flow("f3", "g", "stop"),
            chain(&["paid", "ok"]) + &chain(&["deadline", "expired"]),
            flow("f4", "stop", "stopped"),
        ),
        &format!(r#"{CORRELATION}<bpmn:signal id="sig" name="STOP"/>"#),
    )
}

#[test]
fn at_an_event_based_gateway_the_timer_wins_and_cancels_the_message_wait() {
    let m = race_model();
    let (mut st, effects) = start_with(&m, json!({}));
    let (paid, deadline, stop) = (
        task(&st, "paid").guid,
        task(&st, "deadline").guid,
        task(&st, "stop").guid,
    );
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::WaitForMessage { task_guid, .. } if *task_guid == paid)));
    assert!(effects.iter().any(|e| matches!(e, Effect::WaitForSignal { task_guid, name } if *task_guid == stop && name == "STOP")));
    assert_eq!(started_timers(&effects)[0].0, deadline);

    let effects = fire(&m, &mut st, "deadline");
    assert_eq!(
        effects,
        vec![
            Effect::CancelMessageWait { task_guid: paid },
            Effect::CancelSignalWait { task_guid: stop }
        ]
    );
    assert_eq!(task(&st, "paid").state, TaskState::Cancelled);
    assert_eq!(count(&st, "expired"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
    // the message comes too late: nothing waits for it
    let late = deliver_guid(&m, &mut st, paid, "request", json!({}));
    assert!(late.is_err());
}

#[test]
fn at_an_event_based_gateway_the_message_wins_and_cancels_the_timer() {
    let m = race_model();
    let (mut st, _) = start_with(&m, json!({}));
    let (paid, deadline) = (task(&st, "paid").guid, task(&st, "deadline").guid);
    let effects = deliver_guid(&m, &mut st, paid, "request", json!({})).unwrap();
    assert!(effects.contains(&Effect::CancelTimer {
        task_guid: deadline
    }));
    assert_eq!(count(&st, "ok"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.races.is_empty());
}

#[test]
fn a_signal_from_outside_wins_the_race() {
    let m = race_model();
    let (mut st, _) = start_with(&m, json!({}));
    let stop = task(&st, "stop").guid;
    let effects = step(
        &m,
        &mut st,
        Event::Signal {
            name: "STOP".into(),
            payload: Value::Null,
        },
    )
    .unwrap();
    assert!(effects.contains(&Effect::CancelSignalWait { task_guid: stop }));
    assert_eq!(count(&st, "stopped"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// A signal thrown inside the instance reaches its own waiting catches at once, and goes out
/// for the others.
#[test]
fn a_thrown_signal_is_caught_in_the_instance_and_broadcast() {
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/>
            <bpmn:intermediateCatchEvent id="catch"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateCatchEvent>
            <bpmn:intermediateThrowEvent id="throw"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateThrowEvent>
            <bpmn:endEvent id="caught"/><bpmn:endEvent id="thrown"/>
            {}{}{}{}"#,
            flow("f0", "s", "fork"),
            flow("f1", "fork", "catch"),
            flow("f2", "fork", "throw"),
            chain(&["catch", "caught"]) + &chain(&["throw", "thrown"]),
        ),
        r#"<bpmn:signal id="sig" name="GO"/>"#,
    );
    let (st, effects) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "caught"), 1);
    let throw = task(&st, "throw").guid;
    assert!(effects.contains(&Effect::ThrowSignal {
        task_guid: throw,
        name: "GO".into(),
        payload: Value::Null,
    }));
}
