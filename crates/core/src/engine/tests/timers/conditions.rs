//! Conditional catch events and boundaries, and link events.

use super::*;

/// ConditionalEventTest.testIntermediateEvent's shape (with a user task setting the flag,
/// where SpiffWorkflow's test sets it by hand): the catch waits until the flag holds.
#[test]
fn a_conditional_catch_waits_until_its_condition_holds() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:userTask id="a"/>
        <bpmn:intermediateCatchEvent id="when_a"><bpmn:conditionalEventDefinition><bpmn:condition>task_a_done</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>
        <bpmn:parallelGateway id="join"/><bpmn:endEvent id="e"/>{}{}{}{}{}"#,
        flow("f0", "s", "fork"),
        flow("f1", "fork", "a"),
        flow("f2", "fork", "when_a"),
        flow("f3", "a", "join") + &flow("f4", "when_a", "join"),
        flow("f5", "join", "e"),
    ));
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(task(&st, "when_a").state, TaskState::Waiting);
    let a = task(&st, "a").guid;
    complete_guid(&m, &mut st, a, json!({"task_a_done": true}));
    assert_eq!(task(&st, "when_a").state, TaskState::Completed);
    assert_eq!(st.status, InstanceStatus::Complete);
}

/// ConditionalEventTest.testBoundaryEvent's shape: the boundary on D fires when C's data makes
/// its condition true, and D is cancelled.
#[test]
fn a_conditional_boundary_interrupts_when_its_condition_holds() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:userTask id="c"/><bpmn:userTask id="d"/>
        <bpmn:boundaryEvent id="when_c" attachedToRef="d"><bpmn:conditionalEventDefinition><bpmn:condition>task_c_done</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:boundaryEvent>
        <bpmn:endEvent id="e_c"/><bpmn:endEvent id="e_d"/><bpmn:endEvent id="e_b"/>{}{}{}{}"#,
        flow("f0", "s", "fork"),
        flow("f1", "fork", "c") + &flow("f2", "fork", "d"),
        chain(&["c", "e_c"]) + &chain(&["d", "e_d"]),
        chain(&["when_c", "e_b"]),
    ));
    let (mut st, _) = start_with(&m, json!({"task_c_done": false}));
    assert_eq!(task(&st, "when_c").state, TaskState::Waiting);
    let c = task(&st, "c").guid;
    complete_guid(&m, &mut st, c, json!({"task_c_done": true}));
    assert_eq!(task(&st, "d").state, TaskState::Cancelled);
    assert_eq!(count(&st, "e_b"), 1);
    assert_eq!(st.status, InstanceStatus::Complete);
}

#[test]
fn a_link_throw_goes_on_at_its_catch() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:intermediateThrowEvent id="go"><bpmn:linkEventDefinition name="page2"/></bpmn:intermediateThrowEvent>
        <bpmn:intermediateCatchEvent id="landed"><bpmn:linkEventDefinition name="page2"/></bpmn:intermediateCatchEvent>
        {}<bpmn:endEvent id="e"/>{}{}"#,
        script("after", "arrived = True"),
        chain(&["s", "go"]),
        chain(&["landed", "after", "e"]),
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["arrived"], json!(true));
}
