//! Our own multi-instance models and their data: each script instance sees its own item,
//! instances without an output merge back, missing items fail, subprocess instances run
//! their own paths.

use super::*;

#[test]
fn parallel_script_instances_each_see_only_their_own_data() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:scriptTask id="mi"><bpmn:script>seen = order
result = order * 10</bpmn:script>{ITEMS}</bpmn:scriptTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (state, _) = start_with(&m, json!({"orders": [1, 2, 3]}));
    completed_with(
        &state,
        json!({"orders": [1, 2, 3], "results": [10, 20, 30]}),
    );
}

#[test]
fn without_an_output_each_instance_merges_its_data_back() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:scriptTask id="mi"><bpmn:script>totals[str(i)] = i * i</bpmn:script>
          <bpmn:multiInstanceLoopCharacteristics isSequential="true">
            <bpmn:loopCardinality>3</bpmn:loopCardinality><bpmn:inputDataItem id="i"/>
          </bpmn:multiInstanceLoopCharacteristics></bpmn:scriptTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (state, _) = start_with(&m, json!({"totals": {}}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(state.data["totals"], json!({"0": 0, "1": 1, "2": 4}));
    assert_eq!(
        state.data["i"],
        json!(2),
        "the last instance's data was merged back"
    );
}

#[test]
fn a_missing_output_item_fails_the_activity() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:scriptTask id="mi"><bpmn:script>other = 1</bpmn:script>{ITEMS}</bpmn:scriptTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (state, _) = start_with(&m, json!({"orders": [1]}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(
        state
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("output item 'result' is missing"),
        "{:?}",
        state.error
    );
}

#[test]
fn a_missing_input_or_an_item_that_would_overwrite_data_fails_at_once() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:userTask id="mi">{ITEMS}</bpmn:userTask>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "mi", "e"])
    ));
    let (state, _) = start_with(&m, json!({}));
    assert!(state.error.unwrap().message.contains("'orders' is missing"));
    let (state, _) = start_with(&m, json!({"orders": [1], "order": 5}));
    assert!(state
        .error
        .unwrap()
        .message
        .contains("'order' already exists"));
    let (state, _) = start_with(&m, json!({"orders": 5}));
    assert!(state
        .error
        .unwrap()
        .message
        .contains("must be a list or a map"));
}

/// Each instance of a subprocess runs its own path on its own data; the user task inside
/// completes into that instance's data only.
#[test]
fn subprocess_instances_run_their_own_paths() {
    conformance_or_skip!();
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>
        <bpmn:subProcess id="mi">{ITEMS}
          <bpmn:startEvent id="in_s"/>
          <bpmn:userTask id="approve"/>
          <bpmn:scriptTask id="decide"><bpmn:script>result = {{"order": order, "ok": approved}}</bpmn:script></bpmn:scriptTask>
          <bpmn:endEvent id="in_e"/>{}
        </bpmn:subProcess>
        <bpmn:endEvent id="e"/>{}"#,
        chain(&["in_s", "approve", "decide", "in_e"]),
        chain(&["s", "mi", "e"])
    ));
    let (mut state, _) = start_with(&m, json!({"orders": ["a", "b"]}));
    let approvals: Vec<Uuid> = state
        .tasks
        .iter()
        .filter(|t| t.element_id == "approve" && t.state == TaskState::Waiting)
        .map(|t| t.guid)
        .collect();
    assert_eq!(approvals.len(), 2);
    complete_guid(&m, &mut state, approvals[1], json!({"approved": false}));
    assert!(
        !state.data.contains_key("approved"),
        "an instance's data stays its own"
    );
    complete_guid(&m, &mut state, approvals[0], json!({"approved": true}));
    completed_with(
        &state,
        json!({"orders": ["a", "b"], "results": [
            {"order": "a", "ok": true}, {"order": "b", "ok": false}
        ]}),
    );
}
