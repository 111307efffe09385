//! Catch events with several definitions: the first to happen completes a multiple catch, a
//! parallel multiple catch waits for every one.

use super::*;

fn several(parallel: bool) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/>
            <bpmn:intermediateCatchEvent id="any" parallelMultiple="{parallel}">
              <bpmn:messageEventDefinition messageRef="m_req"/>
              <bpmn:messageEventDefinition messageRef="m_reply"/>
              {}
            </bpmn:intermediateCatchEvent><bpmn:endEvent id="e"/>{}"#,
            "<bpmn:timerEventDefinition><bpmn:timeDuration>\"P1D\"</bpmn:timeDuration></bpmn:timerEventDefinition>",
            chain(&["s", "any", "e"]),
        ),
        CORRELATION,
    )
}

/// A catch event with several definitions waits for all of them at once; the first to
/// happen completes it and ends the other waits.
#[test]
fn a_catch_with_several_definitions_completes_on_the_first() {
    let m = several(false);
    let (mut st, effects) = start_with(&m, json!({}));
    let any = task(&st, "any").guid;
    let waits: Vec<&str> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::WaitForMessage { name, .. } => Some(name.as_str()),
            Effect::StartTimer { .. } => Some("timer"),
            _ => None,
        })
        .collect();
    assert_eq!(waits, ["request", "reply", "timer"]);
    let effects = deliver_guid(&m, &mut st, any, "reply", json!({})).unwrap();
    assert_eq!(
        effects,
        vec![
            Effect::CancelMessageWait { task_guid: any },
            Effect::CancelTimer { task_guid: any }
        ]
    );
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// `parallelMultiple`: it completes only when every definition has happened.
#[test]
fn a_parallel_multiple_catch_waits_for_every_definition() {
    let m = several(true);
    let (mut st, _) = start_with(&m, json!({}));
    let any = task(&st, "any").guid;
    fire(&m, &mut st, "any");
    assert_eq!(st.status, InstanceStatus::Waiting);
    for name in ["request", "reply"] {
        deliver_guid(&m, &mut st, any, name, json!({})).unwrap();
    }
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.fired.is_empty());
}
