//! SpiffWorkflow's ParallelMultiInstanceTest: list and dict inputs and outputs, new and
//! in-place outputs, item order, empty collections, completion conditions, cardinality.

use super::*;

#[test]
fn parallel_instances_all_wait_at_once_each_with_its_item() {
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process(&m, "main", json!({"input_data": [1, 2, 3]}));
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process(
        &m,
        "main",
        json!({"input_data": [1, 2, 3], "output_data": [1, 2, 3]}),
    );
    refused_with(&state, "If the input is not being updated in place, the output must be empty or it must be a map (dict)");
}

#[test]
fn parallel_output_that_is_no_collection_is_refused() {
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process(&m, "main", json!({"input_data": [1], "output_data": 7}));
    refused_with(
        &state,
        "Only a mutable map (dict) or sequence (list) can be used for output",
    );
}

#[test]
fn parallel_new_list_and_dict_outputs() {
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[]);
    let mut state = start_process(&m, "main", json!({"input_data": [1, 2, 3]}));
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
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[]);
    let state = start_process(&m, "main", json!({"input_data": []}));
    completed_with(&state, json!({"input_data": [], "output_data": []}));
}

#[test]
fn parallel_completion_condition_cancels_the_other_instances() {
    conformance_or_skip!();
    let m = changed_model(PARALLEL, "main", &[condition("input_item == 2")]);
    let mut state = start_process(&m, "main", json!({"input_data": [1, 2, 3]}));
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
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = changed_model(PARALLEL_CARDINALITY, "main", &[]);
    let state = run(&m, "main", json!({}), 3);
    completed_with(&state, json!({"output_data": [0, 2, 4]}));
    let m = changed_model(
        PARALLEL_CARDINALITY,
        "main",
        &[condition("input_item == 2")],
    );
    let mut state = start_process(&m, "main", json!({}));
    let (guid, _) = instances(&state)
        .into_iter()
        .find(|(_, data)| data["input_item"] == json!(2))
        .unwrap();
    complete_guid(&m, &mut state, guid, json!({"output_item": 4}));
    completed_with(&state, json!({"output_data": [4]}));
}

#[test]
fn cardinality_and_input_together_are_refused() {
    conformance_or_skip!();
    let file = conformance_file("bpmn/data/parallel_multiinstance_invalid.bpmn");
    let error = build_model(&[file], Some("main")).expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("exactly one of loopCardinality and loopDataInputRef"),
        "{error}"
    );
}
