//! Token flow, scripts, gateways and the bounds of a step.

use super::*;

#[test]
fn none_start_to_end_completes() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "e"])
    ));
    let (st, effects) = start_with(&m, json!({"a": 1}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(effects.is_empty());
    assert_eq!(st.data, map(json!({"a": 1})));
    assert_eq!(st.tasks.len(), 2);
    assert!(st
        .tasks
        .iter()
        .all(|t| t.state == TaskState::Completed && t.dirty));
    assert_eq!(task(&st, "s").element_type, "startEvent");
    assert_eq!(st.live_tasks().count(), 0);
    let mut pruned = st.clone();
    pruned.prune_finished();
    assert!(pruned.tasks.is_empty());
    // serialisable round trip
    let back: InstanceState = serde_json::from_value(snapshot(&st)).unwrap();
    assert_eq!(back.status, InstanceStatus::Complete);
}

#[test]
fn script_task_runs_pre_script_script_post_script_in_order() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:scriptTask id="t"><bpmn:extensionElements>
          <spiffworkflow:preScript>log = ["pre"]</spiffworkflow:preScript>
          <spiffworkflow:postScript>log.append("post")</spiffworkflow:postScript></bpmn:extensionElements>
          <bpmn:script>log.append("script")
x = a + 1</bpmn:script></bpmn:scriptTask>
        <bpmn:task id="plain"/>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "t", "plain", "e"])
    ));
    let (st, _) = start_with(&m, json!({"a": 1}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["x"], json!(2));
    assert_eq!(st.data["log"], json!(["pre", "script", "post"]));
    assert_eq!(task(&st, "plain").state, TaskState::Completed);
}

#[test]
fn exclusive_gateway_takes_first_true_condition_then_default() {
    let body = format!(
        r#"<bpmn:startEvent id="s"/>{}
        <bpmn:exclusiveGateway id="g" default="fd"/>
        {}{}{}
        <bpmn:endEvent id="big"/><bpmn:endEvent id="also_big"/><bpmn:endEvent id="small"/><bpmn:endEvent id="other"/>"#,
        flow("f0", "s", "g"),
        cond_flow("fb", "g", "big", "x &gt; 3"),
        cond_flow("fb2", "g", "also_big", "x &gt; 2"),
        cond_flow("fs", "g", "small", "x == 1"),
    ) + &flow("fd", "g", "other");
    let m = model(&body);
    for (x, end) in [(5, "big"), (3, "also_big"), (1, "small"), (0, "other")] {
        let (st, _) = start_with(&m, json!({ "x": x }));
        assert_eq!(st.status, InstanceStatus::Complete, "x={x}: {:?}", st.error);
        let ends: Vec<&str> = st
            .tasks
            .iter()
            .filter(|t| t.element_type == "endEvent")
            .map(|t| t.element_id.as_str())
            .collect();
        assert_eq!(ends, vec![end], "x={x}");
        assert_eq!(task(&st, "g").element_type, "exclusiveGateway");
    }
    // no default, nothing true -> instance error naming the gateway
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:exclusiveGateway id="g"/>{}<bpmn:endEvent id="e"/>"#,
        flow("f0", "s", "g"),
        cond_flow("f1", "g", "e", "x == 1")
    ));
    let (st, effects) = start_with(&m, json!({"x": 2}));
    assert_eq!(st.status, InstanceStatus::Error);
    assert!(effects.is_empty());
    let err = st.error.as_ref().unwrap();
    assert_eq!(err.element_id, "g");
    assert!(err.message.contains("no outgoing flow matched"), "{err}");
    assert_eq!(task(&st, "g").state, TaskState::Error);
}

#[test]
fn conditional_flows_from_tasks_take_every_true_or_unconditioned_flow() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:task id="t"/>{}{}{}{}
        <bpmn:endEvent id="a"/><bpmn:endEvent id="b"/><bpmn:endEvent id="c"/>"#,
        flow("f0", "s", "t"),
        cond_flow("fa", "t", "a", "x"),
        cond_flow("fb", "t", "b", "not x"),
        flow("fc", "t", "c"),
    ));
    let (st, _) = start_with(&m, json!({"x": true}));
    assert_eq!(
        (count(&st, "a"), count(&st, "b"), count(&st, "c")),
        (1, 0, 1)
    );
}

fn parallel_model(branch_b: &str) -> ModelSpec {
    model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/>
        {}{}<bpmn:parallelGateway id="join"/>{}<bpmn:endEvent id="e"/>
        {}{}{}{}{}{}"#,
        script("a", "a = 1"),
        branch_b,
        script("sum", "c = a + b"),
        flow("f0", "s", "fork"),
        flow("f1", "fork", "a"),
        flow("f2", "fork", "b"),
        flow("f3", "a", "join"),
        flow("f4", "b", "join"),
        chain(&["join", "sum", "e"]),
    ))
}

#[test]
fn parallel_fork_and_join_fire_the_join_once() {
    let m = parallel_model(&script("b", "b = 2"));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["c"], json!(3));
    assert_eq!(count(&st, "join"), 1);
    assert_eq!(count(&st, "sum"), 1);
    assert!(st.internal.joins.is_empty());

    // one branch waits: the join waits for it
    let m = parallel_model(r#"<bpmn:userTask id="b"/>"#);
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert_eq!(count(&st, "join"), 0);
    assert_eq!(st.internal.joins.len(), 1);
    // the join counters survive serialisation
    let mut st: InstanceState = {
        st.prune_finished();
        serde_json::from_value(snapshot(&st)).unwrap()
    };
    let guid = task(&st, "b").guid;
    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: guid,
            data: map(json!({"b": 40})),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["c"], json!(41));
    assert_eq!(count(&st, "join"), 1);
}

#[test]
fn expression_error_is_an_instance_error_with_element_id() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        script("bad", "x = undefined_name + 1"),
        chain(&["s", "bad", "e"])
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let err = st.error.as_ref().unwrap();
    assert_eq!(err.element_id, "bad");
    assert!(
        err.message.contains("NameError") && err.message.contains("undefined_name"),
        "{err}"
    );
    assert_eq!(err.error_code, None);
    assert_eq!(task(&st, "bad").state, TaskState::Error);

    // a failing condition names the gateway; the pending waits are cancelled
    let m = model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="fork"/><bpmn:receiveTask id="r" messageRef="m_reply"/>
            <bpmn:userTask id="u"/><bpmn:exclusiveGateway id="g"/><bpmn:endEvent id="e"/>{}{}{}{}{}"#,
            flow("f0", "s", "fork"),
            flow("f1", "fork", "r"),
            flow("f2", "fork", "u"),
            flow("f3", "u", "g"),
            cond_flow("f4", "g", "e", "missing &gt; 1"),
        ),
        CORRELATION,
    );
    let (mut st, _) = start_with(&m, json!({}));
    let (r, u) = (task(&st, "r").guid, task(&st, "u").guid);
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: u,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Error);
    assert_eq!(st.error.as_ref().unwrap().element_id, "g");
    assert!(st.error.as_ref().unwrap().message.contains("NameError"));
    assert_eq!(effects, vec![Effect::CancelMessageWait { task_guid: r }]);
    assert!(matches!(
        step(
            &m,
            &mut st,
            Event::MessageDelivered {
                task_guid: r,
                name: "reply".into(),
                payload: json!({})
            }
        ),
        Err(EngineError::Invalid(_))
    ));
}

#[test]
fn a_loop_without_wait_state_is_bounded() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:exclusiveGateway id="g" default="back"/>{}{}
        <bpmn:endEvent id="e"/>"#,
        script("inc", "n = n + 1"),
        flow("f0", "s", "inc") + &flow("f1", "inc", "g") + &flow("back", "g", "inc"),
        cond_flow("out", "g", "e", "n &gt; 1000000"),
    ));
    let (st, _) = start_with(&m, json!({"n": 0}));
    assert_eq!(st.status, InstanceStatus::Error);
    let err = st.error.unwrap();
    assert!(err.message.contains("element executions"), "{err}");
    assert!(err.element_id == "inc" || err.element_id == "g");
}

#[test]
fn model_and_state_types_are_thread_safe() {
    fn is<T: Send + Sync>() {}
    is::<InstanceState>();
    is::<Effect>();
    is::<Event>();
    is::<ModelSpec>();
}

/// An inclusive join waits for the branches the split took that can still arrive (here a user
/// task), not for the one it did not take, nor for one that ended elsewhere.
#[test]
fn an_inclusive_join_waits_only_for_what_can_still_arrive() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:inclusiveGateway id="split"/>
        <bpmn:userTask id="slow"/>{}{}<bpmn:endEvent id="elsewhere"/>
        <bpmn:inclusiveGateway id="join"/><bpmn:endEvent id="e"/>
        {}{}{}{}{}{}{}"#,
        script("fast", "fast_done = True"),
        script("skipped", "skipped_ran = True"),
        flow("f0", "s", "split"),
        cond_flow("to_slow", "split", "slow", "True"),
        cond_flow("to_fast", "split", "fast", "True"),
        cond_flow("to_skipped", "split", "skipped", "False"),
        flow("slow_join", "slow", "join") + &flow("fast_join", "fast", "join"),
        flow("skipped_join", "skipped", "join") + &cond_flow("away", "split", "elsewhere", "True"),
        flow("f9", "join", "e"),
    ));
    let (mut st, _) = start_with(&m, json!({}));
    assert_eq!(st.data["fast_done"], json!(true));
    assert_eq!(count(&st, "join"), 0, "the join waits for the user task");
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    let slow = task(&st, "slow").guid;
    complete_guid(&m, &mut st, slow, json!({}));
    assert_eq!(count(&st, "join"), 1);
    assert_eq!(count(&st, "e"), 1);
    assert!(!st.data.contains_key("skipped_ran"));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert!(st.internal.joins.is_empty());
}

/// StandardLoopTest.testLoopCondition's shape: a user task repeats while `not done`; the
/// person says done in the second run and the loop ends.
#[test]
fn a_standard_loop_repeats_a_user_task_while_its_condition_holds() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:userTask id="ask"><bpmn:standardLoopCharacteristics><bpmn:loopCondition>not done</bpmn:loopCondition></bpmn:standardLoopCharacteristics></bpmn:userTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "ask", "e"]),
    ));
    let (mut st, _) = start_with(&m, json!({"done": false}));
    let first = task(&st, "ask").guid;
    complete_guid(&m, &mut st, first, json!({"answer": 1}));
    let second = task(&st, "ask").guid;
    assert_ne!(first, second, "a new run");
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    complete_guid(&m, &mut st, second, json!({"done": true}));
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(count(&st, "e"), 1);
}

const CALLEE: &str = r#"</bpmn:process>
<bpmn:process id="child" isExecutable="true">
  <bpmn:startEvent id="cs"/>
  <bpmn:scriptTask id="double"><bpmn:script>b = a * 2</bpmn:script></bpmn:scriptTask>
  <bpmn:exclusiveGateway id="check" default="fine"/>
  <bpmn:endEvent id="ce"/>
  <bpmn:endEvent id="too_big"><bpmn:errorEventDefinition errorRef="err_big"/></bpmn:endEvent>
  <bpmn:sequenceFlow id="c1" sourceRef="cs" targetRef="double"/>
  <bpmn:sequenceFlow id="c2" sourceRef="double" targetRef="check"/>
  <bpmn:sequenceFlow id="fine" sourceRef="check" targetRef="ce"/>
  <bpmn:sequenceFlow id="big" sourceRef="check" targetRef="too_big"><bpmn:conditionExpression>b &gt; 100</bpmn:conditionExpression></bpmn:sequenceFlow>
"#;

fn caller() -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:callActivity id="call" calledElement="child"/>
            {}<bpmn:endEvent id="e"/>
            <bpmn:boundaryEvent id="caught" attachedToRef="call"><bpmn:errorEventDefinition errorRef="err_big"/></bpmn:boundaryEvent>
            <bpmn:endEvent id="e_big"/>{}{}{CALLEE}"#,
            script("after", "c = b + 1"),
            chain(&["s", "call", "after", "e"]),
            chain(&["caught", "e_big"]),
        ),
        r#"<bpmn:error id="err_big" errorCode="too_big"/>"#,
    )
}

/// The called process runs inside the instance on the caller's data, and the caller goes on
/// with what it left.
#[test]
fn a_call_activity_runs_its_process_on_the_callers_data() {
    let (st, _) = start_with(&caller(), json!({"a": 5}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(
        Value::Object(st.data.clone()),
        json!({"a": 5, "b": 10, "c": 11})
    );
    let call = task(&st, "call");
    assert_eq!(call.element_type, "callActivity");
    assert_eq!(task(&st, "call/double").scope, Some(call.guid));
}

/// An error the called process throws reaches the call activity's error boundary.
#[test]
fn an_error_in_the_called_process_reaches_the_call_activitys_boundary() {
    let (st, _) = start_with(&caller(), json!({"a": 60}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "e_big"), 1);
    assert_eq!(count(&st, "after"), 0);
}

/// A called process that is not in the model fails the instance when the call is reached.
fn unavailable(process: &str, reason: &str) -> std::collections::BTreeMap<String, String> {
    [(process.to_string(), reason.to_string())].into()
}

/// A process of another model, linked in: it runs inside the caller, its ids prefixed with
/// the call activity's.
#[test]
fn a_call_runs_a_process_of_another_model_once_linked() {
    let caller = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:callActivity id="call" calledElement="other"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "call", "e"]),
    ));
    let callee = other_model();
    let called = Callee::Process("called".into());
    let linked = caller
        .with_callees(&[(called, &callee)], Default::default())
        .unwrap();
    let (st, _) = start_with(&linked, json!({}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(st.data["done"], json!(true));
    assert_eq!(task(&st, "call/work").state, TaskState::Completed);
}

#[test]
fn a_call_to_a_process_that_is_not_there_fails_when_reached() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:callActivity id="call" calledElement="nowhere"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "call", "e"]),
    ));
    // the step asks for the process first, and nothing happens
    let event = start_event(json!({}));
    let asked = start(&m, "P", event).expect_err("the step needs the process");
    assert_eq!(
        asked,
        EngineError::CalleeNeeded(Callee::Process("nowhere".into()))
    );
    // no model has it
    let m = m
        .with_callees(
            &[],
            unavailable("nowhere", "The called process 'nowhere' was not found"),
        )
        .unwrap();
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let error = st.error.unwrap();
    assert_eq!(error.element_id, "call");
    assert!(
        error
            .message
            .contains("The called process 'nowhere' was not found"),
        "{}",
        error.message
    );
}

/// A call works on a copy of its caller's data, which becomes the caller's when it completes:
/// what the callee sets comes back, what it deletes is gone (SpiffWorkflow's
/// test_call_activity_allows_removal_of_data).
#[test]
fn a_call_copies_the_data_in_and_merges_it_back() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:callActivity id="call" calledElement="Q"/><bpmn:endEvent id="e"/>{}
        </bpmn:process><bpmn:process id="Q" isExecutable="true"><bpmn:startEvent id="qs"/>{}<bpmn:endEvent id="qe"/>{}"#,
        chain(&["s", "call", "e"]),
        script("work", "del keep\nadded = seen + 1"),
        chain(&["qs", "work", "qe"])
    ));
    let (st, _) = start_with(&m, json!({"keep": 1, "seen": 41}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(Value::Object(st.data), json!({"seen": 41, "added": 42}));
}

/// A multi-instance call activity: each instance runs the called process on its own item.
#[test]
fn a_multi_instance_call_runs_the_process_once_per_item() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:callActivity id="call" calledElement="Q">
          <bpmn:multiInstanceLoopCharacteristics isSequential="true">
            <bpmn:loopDataInputRef>items</bpmn:loopDataInputRef>
            <bpmn:loopDataOutputRef>doubled</bpmn:loopDataOutputRef>
            <bpmn:inputDataItem id="item"/><bpmn:outputDataItem id="twice"/>
          </bpmn:multiInstanceLoopCharacteristics></bpmn:callActivity><bpmn:endEvent id="e"/>{}
        </bpmn:process><bpmn:process id="Q" isExecutable="true"><bpmn:startEvent id="qs"/>{}<bpmn:endEvent id="qe"/>{}"#,
        chain(&["s", "call", "e"]),
        script("work", "twice = item * 2"),
        chain(&["qs", "work", "qe"])
    ));
    let (st, _) = start_with(&m, json!({"items": [1, 2, 3]}));
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(
        Value::Object(st.data),
        json!({"items": [1, 2, 3], "doubled": [2, 4, 6]})
    );
}
