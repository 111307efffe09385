//! Multi-instance activities, on SpiffWorkflow's own models (`ParallelMultiInstanceTest`,
//! `SequentialMultiInstanceTest`, spiff's `MultiInstanceTaskTest`) with what those tests
//! assert, and on small models of our own (scripts, subprocesses, service tasks, boundaries).
//!
//! SpiffWorkflow's tests change the task spec before running (another input or output, a
//! completion condition); here the same change is made to the file's text. Its models use
//! `bpmn:task`, which SpiffWorkflow runs as a manual task and this engine passes through, so
//! they are loaded as user tasks. One difference is deliberate: parallel instances that
//! complete out of order still give their results in item order (SpiffWorkflow appends them
//! in completion order).
//!
//! Checked: every test of ParallelMultiInstanceTest.py and SequentialMultiInstanceTest.py
//! (list/dict input and output, existing and new output, in-place update, cardinality,
//! empty collection, completion condition, non-empty output refused, invalid model refused;
//! the save/restore variants are the same runs, our state being serialised between steps
//! anyway) and MultiInstanceTaskTest.py (scripts on the activity, scripts on the instances).
//! Not run: the `set` inputs (JSON has no sets).

use super::spiffworkflow::{conformance_file, user_tasks_of};
use super::*;

/// A SpiffWorkflow model with the test's changes made to its text.
fn changed_model(path: &str, process_id: &str, changes: &[(&str, String)]) -> ModelSpec {
    let (name, mut xml) = user_tasks_of(path);
    for (from, to) in changes {
        assert!(xml.contains(from), "{path} has no {from}");
        xml = xml.replace(from, to.as_str());
    }
    build_model(&[(name, xml)], Some(process_id)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const PARALLEL: &str = "bpmn/data/parallel_multiinstance_loop_input.bpmn";
const SEQUENTIAL: &str = "bpmn/data/sequential_multiinstance_loop_input.bpmn";
const PARALLEL_CARDINALITY: &str = "bpmn/data/parallel_multiinstance_cardinality.bpmn";
const SEQUENTIAL_CARDINALITY: &str = "bpmn/data/sequential_multiinstance_cardinality.bpmn";
const OUTPUT_REF: &str = "<bpmn:loopDataOutputRef>output_data</bpmn:loopDataOutputRef>";

fn in_place() -> (&'static str, String) {
    (
        OUTPUT_REF,
        "<bpmn:loopDataOutputRef>input_data</bpmn:loopDataOutputRef>".to_string(),
    )
}

fn condition(source: &'static str) -> (&'static str, String) {
    (
        "</bpmn:multiInstanceLoopCharacteristics>",
        format!("<bpmn:completionCondition>{source}</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics>"),
    )
}

/// The waiting instances of `any_task`, with their own data.
fn instances(state: &InstanceState) -> Vec<(Uuid, Map)> {
    state
        .tasks
        .iter()
        .filter(|t| t.element_id == "any_task" && t.state == TaskState::Waiting)
        .map(|t| (t.guid, state.internal.local_data[&t.guid].clone()))
        .collect()
}

/// Completes every instance as SpiffWorkflow's tests do (`output_item = input_item * 2`), the
/// first waiting one first; `at_once` instances wait at the start (and, when it is 1, at
/// every step: a sequential activity).
fn double_every_item(m: &ModelSpec, state: &mut InstanceState, at_once: usize) {
    let mut first = true;
    loop {
        let waiting = instances(state);
        if waiting.is_empty() {
            return;
        }
        if first || at_once == 1 {
            assert_eq!(waiting.len(), at_once, "instances waiting at once");
        }
        first = false;
        let (guid, data) = waiting[0].clone();
        let item = data["input_item"]
            .as_i64()
            .expect("the instance has its item");
        complete_guid(m, state, guid, json!({"output_item": item * 2}));
    }
}

fn run(m: &ModelSpec, process_id: &str, data: Value, at_once: usize) -> InstanceState {
    let mut state = start_process_of(m, process_id, data);
    double_every_item(m, &mut state, at_once);
    state
}

fn start_process_of(m: &ModelSpec, process_id: &str, data: Value) -> InstanceState {
    let event = Event::Start {
        start_event_id: None,
        data: map(data),
        message: None,
        signal: None,
    };
    start(m, process_id, event).expect("start").0
}

fn completed_with(state: &InstanceState, data: Value) {
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data.clone()), data);
    assert!(state.internal.local_data.is_empty() && state.internal.multi.is_empty());
}

fn refused_with(state: &InstanceState, message: &str) {
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.as_ref().expect("an error");
    assert_eq!(error.element_id, "any_task");
    assert!(error.message.contains(message), "{error}");
}

#[test]
fn parallel_instances_all_wait_at_once_each_with_its_item() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process_of(&m, "main", json!({"input_data": [1, 2, 3]}));
    let items: Vec<Value> = instances(&state)
        .iter()
        .map(|(_, data)| data["input_item"].clone())
        .collect();
    assert_eq!(items, [json!(1), json!(2), json!(3)]);
    assert_eq!(task(&state, "any_task").state, TaskState::Waiting);
    assert_eq!(
        count(&state, "any_task"),
        4,
        "the activity and its three instances"
    );
}

#[test]
fn parallel_list_with_dict_output() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = run(
        &m,
        "main",
        json!({"input_data": [1, 2, 3], "output_data": {}}),
        3,
    );
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": {"0": 2, "1": 4, "2": 6}}),
    );
}

#[test]
fn parallel_dict_with_list_output() {
    let m = changed_model(PARALLEL, "main", &[]);
    let data = json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": []});
    let state = run(&m, "main", data, 3);
    completed_with(
        &state,
        json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": [2, 4, 6]}),
    );
}

#[test]
fn parallel_non_empty_output_is_refused() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process_of(
        &m,
        "main",
        json!({"input_data": [1, 2, 3], "output_data": [1, 2, 3]}),
    );
    refused_with(&state, "If the input is not being updated in place, the output must be empty or it must be a map (dict)");
}

#[test]
fn parallel_output_that_is_no_collection_is_refused() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process_of(&m, "main", json!({"input_data": [1], "output_data": 7}));
    refused_with(
        &state,
        "Only a mutable map (dict) or sequence (list) can be used for output",
    );
}

#[test]
fn parallel_new_list_and_dict_outputs() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = run(&m, "main", json!({"input_data": [1, 2, 3]}), 3);
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": [2, 4, 6]}),
    );
    let state = run(
        &m,
        "main",
        json!({"input_data": {"a": 1, "b": 2, "c": 3}}),
        3,
    );
    completed_with(
        &state,
        json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": {"a": 2, "b": 4, "c": 6}}),
    );
}

#[test]
fn parallel_results_keep_item_order_whatever_order_instances_complete_in() {
    let m = changed_model(PARALLEL, "main", &[]);
    let mut state = start_process_of(&m, "main", json!({"input_data": [1, 2, 3]}));
    for expected_waiting in [3, 2, 1] {
        let waiting = instances(&state);
        assert_eq!(waiting.len(), expected_waiting);
        let (guid, data) = waiting.last().unwrap().clone();
        let item = data["input_item"].as_i64().unwrap();
        complete_guid(&m, &mut state, guid, json!({"output_item": item * 2}));
    }
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": [2, 4, 6]}),
    );
}

#[test]
fn parallel_empty_collection_completes_at_once() {
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process_of(&m, "main", json!({"input_data": []}));
    completed_with(&state, json!({"input_data": [], "output_data": []}));
}

#[test]
fn parallel_completion_condition_cancels_the_other_instances() {
    let m = changed_model(PARALLEL, "main", &[condition("input_item == 2")]);
    let mut state = start_process_of(&m, "main", json!({"input_data": [1, 2, 3]}));
    let (guid, _) = instances(&state)
        .into_iter()
        .find(|(_, data)| data["input_item"] == json!(2))
        .unwrap();
    complete_guid(&m, &mut state, guid, json!({"output_item": 4}));
    completed_with(&state, json!({"input_data": [1, 2, 3], "output_data": [4]}));
    let cancelled = state
        .tasks
        .iter()
        .filter(|t| t.element_id == "any_task" && t.state == TaskState::Cancelled)
        .count();
    assert_eq!(cancelled, 2);
}

/// The output is the input itself: each item is replaced in place (parallel, sequential).
#[test]
fn update_in_place() {
    for (path, at_once) in [(PARALLEL, 3), (SEQUENTIAL, 1)] {
        let m = changed_model(path, "main", &[in_place()]);
        let state = run(&m, "main", json!({"input_data": [1, 2, 3]}), at_once);
        completed_with(&state, json!({"input_data": [2, 4, 6]}));
        let data = json!({"input_data": {"a": 1, "b": 2, "c": 3}});
        let state = run(&m, "main", data, at_once);
        completed_with(&state, json!({"input_data": {"a": 2, "b": 4, "c": 6}}));
    }
}

#[test]
fn parallel_cardinality() {
    let m = changed_model(PARALLEL_CARDINALITY, "main", &[]);
    let state = run(&m, "main", json!({}), 3);
    completed_with(&state, json!({"output_data": [0, 2, 4]}));
    let m = changed_model(
        PARALLEL_CARDINALITY,
        "main",
        &[condition("input_item == 2")],
    );
    let mut state = start_process_of(&m, "main", json!({}));
    let (guid, _) = instances(&state)
        .into_iter()
        .find(|(_, data)| data["input_item"] == json!(2))
        .unwrap();
    complete_guid(&m, &mut state, guid, json!({"output_item": 4}));
    completed_with(&state, json!({"output_data": [4]}));
}

#[test]
fn cardinality_and_input_together_are_refused() {
    let file = conformance_file("bpmn/data/parallel_multiinstance_invalid.bpmn");
    let error = build_model(&[file], Some("main")).expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("exactly one of loopCardinality and loopDataInputRef"),
        "{error}"
    );
}

#[test]
fn sequential_instances_run_one_after_the_other() {
    for (data, expected) in [
        (
            json!({"input_data": [1, 2, 3], "output_data": {}}),
            json!({"input_data": [1, 2, 3], "output_data": {"0": 2, "1": 4, "2": 6}}),
        ),
        (
            json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": []}),
            json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": [2, 4, 6]}),
        ),
        (
            json!({"input_data": [1, 2, 3]}),
            json!({"input_data": [1, 2, 3], "output_data": [2, 4, 6]}),
        ),
        (
            json!({"input_data": {"a": 1, "b": 2, "c": 3}}),
            json!({"input_data": {"a": 1, "b": 2, "c": 3}, "output_data": {"a": 2, "b": 4, "c": 6}}),
        ),
        (
            json!({"input_data": []}),
            json!({"input_data": [], "output_data": []}),
        ),
    ] {
        let m = changed_model(SEQUENTIAL, "main", &[]);
        let state = run(&m, "main", data, 1);
        completed_with(&state, expected);
    }
}

#[test]
fn sequential_non_empty_output_is_refused() {
    let m = changed_model(SEQUENTIAL, "main", &[]);
    let state = start_process_of(
        &m,
        "main",
        json!({"input_data": [1, 2, 3], "output_data": [1, 2, 3]}),
    );
    refused_with(&state, "If the input is not being updated in place");
}

#[test]
fn sequential_completion_condition_stops_after_the_instance_that_meets_it() {
    let m = changed_model(SEQUENTIAL, "main", &[condition("input_item == 2")]);
    let state = run(&m, "main", json!({"input_data": [1, 2, 3]}), 1);
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": [2, 4]}),
    );
    assert_eq!(
        count(&state, "any_task"),
        3,
        "the activity and two instances"
    );
}

#[test]
fn sequential_cardinality() {
    let m = changed_model(SEQUENTIAL_CARDINALITY, "main", &[]);
    let state = run(&m, "main", json!({}), 1);
    completed_with(&state, json!({"output_data": [0, 2, 4]}));
    let m = changed_model(
        SEQUENTIAL_CARDINALITY,
        "main",
        &[condition("input_item == 1")],
    );
    let state = run(&m, "main", json!({}), 1);
    completed_with(&state, json!({"output_data": [0, 2]}));
}

/// MultiInstanceTaskTest.testMultiInstanceTask: the pre-script adds 1 to every input before
/// the instances start, the post-script subtracts 1 from every output after they end.
#[test]
fn scripts_run_once_around_the_instances() {
    let m = changed_model("spiff/data/spiff_multiinstance.bpmn", "Process_1", &[]);
    let state = run(&m, "Process_1", json!({"input_data": [1, 2, 3]}), 3);
    completed_with(
        &state,
        json!({"input_data": [2, 3, 4], "output_data": [3, 5, 7]}),
    );
}

/// MultiInstanceTaskTest.testMultiInstanceTaskWithInstanceScripts: with scriptsOnInstances
/// the pre-script adds 1 to each item and the post-script subtracts 1 from each output.
#[test]
fn scripts_on_instances_run_on_every_instance() {
    let m = changed_model("spiff/data/script_on_mi.bpmn", "Process_1", &[]);
    let state = run(&m, "Process_1", json!({"input_data": [1, 2, 3]}), 3);
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": [3, 5, 7]}),
    );
}

const ITEMS: &str = r#"<bpmn:multiInstanceLoopCharacteristics>
  <bpmn:loopDataInputRef>orders</bpmn:loopDataInputRef>
  <bpmn:loopDataOutputRef>results</bpmn:loopDataOutputRef>
  <bpmn:inputDataItem id="order"/><bpmn:outputDataItem id="result"/>
</bpmn:multiInstanceLoopCharacteristics>"#;

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
