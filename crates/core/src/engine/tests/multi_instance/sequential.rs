//! SpiffWorkflow's SequentialMultiInstanceTest (instances one after the other, completion
//! conditions, cardinality) and spiff's MultiInstanceTaskTest (scripts around the activity and
//! on its instances).

use super::*;

#[test]
fn sequential_instances_run_one_after_the_other() {
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = changed_model(SEQUENTIAL, "main", &[]);
    let state = start_process(
        &m,
        "main",
        json!({"input_data": [1, 2, 3], "output_data": [1, 2, 3]}),
    );
    refused_with(&state, "If the input is not being updated in place");
}

#[test]
fn sequential_completion_condition_stops_after_the_instance_that_meets_it() {
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
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
    conformance_or_skip!();
    let m = changed_model("spiff/data/script_on_mi.bpmn", "Process_1", &[]);
    let state = run(&m, "Process_1", json!({"input_data": [1, 2, 3]}), 3);
    completed_with(
        &state,
        json!({"input_data": [1, 2, 3], "output_data": [3, 5, 7]}),
    );
}
