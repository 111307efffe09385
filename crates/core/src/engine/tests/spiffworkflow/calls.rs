//! SpiffWorkflow's call activity models: a missing process, errors inside a call, called
//! processes with io specifications, and data through a call.

use super::*;

/// CallActivityTest.test_call_activity_missing_subprocess_sets_task_error_state: without the
/// called process, reaching the call activity fails it with SpiffWorkflow's message.
#[test]
fn a_call_activity_without_its_process_fails_as_spiffworkflow_says() {
    conformance_or_skip!();
    let m = spiffworkflow_models(&["bpmn/data/call_activity_with_error.bpmn"], "ErroringBPMN");
    // no model defines it (as the shell finds when the step asks for it)
    let reason =
        "The called process 'Call_Activity_Get_Data' was not found: no process model defines it";
    let m = m
        .with_callees(
            &[],
            [("Call_Activity_Get_Data".to_string(), reason.to_string())].into(),
        )
        .unwrap();
    let state = start_process(&m, "ErroringBPMN", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().unwrap();
    assert!(
        error
            .message
            .contains("The called process 'Call_Activity_Get_Data' was not found"),
        "{error}"
    );
    assert_eq!(task(&state, "Activity_12zat0d").state, TaskState::Error);
}

/// CallActivityTest.test_call_activity_errors_include_task_trace: with the called process, the
/// error comes from its task, inside the call activity (the task id says where).
#[test]
fn an_error_inside_a_called_process_names_the_task_inside_the_call() {
    conformance_or_skip!();
    let m = spiffworkflow_models(
        &[
            "bpmn/data/call_activity_with_error.bpmn",
            "bpmn/data/call_activity_call_activity.bpmn",
        ],
        "ErroringBPMN",
    );
    let state = start_process(&m, "ErroringBPMN", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().unwrap();
    assert_eq!(
        error.element_id, "Activity_12zat0d/Sub_Bpmn_Task",
        "{error}"
    );
    assert_eq!(
        task(&state, "Activity_12zat0d/Sub_Bpmn_Task").state,
        TaskState::Error
    );
    assert_eq!(task(&state, "Activity_12zat0d").scope, None);
}

/// SpiffWorkflow's io_spec models (IOSpecTest.CallActivityDataTest), the caller's set_data
/// script changed as each test changes it.
fn io_spec_model(set_data: &str, transform: &str) -> ModelSpec {
    let (parent_name, parent) = conformance_file("bpmn/data/io_spec_parent.bpmn");
    let (callee_name, callee) = conformance_file("bpmn/data/io_spec.bpmn");
    let original = r#"in_1, in_2, unused = 1, "hello world", True"#;
    let transform_original = "out_1, out_2, unused = in_1 * 2, in_2.upper(), False";
    assert!(parent.contains(original) && callee.contains(transform_original));
    let files = [
        (parent_name, parent.replace(original, set_data)),
        (callee_name, callee.replace(transform_original, transform)),
    ];
    build_model(&files, Some("parent")).unwrap()
}

/// testCallActivityWithIOSpec: only the inputs go in, only the outputs come back; the
/// caller's own variables are untouched.
#[test]
fn a_called_process_with_an_io_specification_passes_only_its_inputs_and_outputs() {
    conformance_or_skip!();
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, out_2, unused = in_1 * 2, in_2.upper(), False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"in_1": 1, "in_2": "hello world", "unused": true, "out_1": 2, "out_2": "HELLO WORLD"})
    );
    // what is not an input is not there
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, out_2 = in_1 * 2, unused",
    );
    let state = start_process(&m, "parent", json!({}));
    let error = state.error.expect("the callee cannot see 'unused'");
    assert!(
        error.message.starts_with("NameError: name 'unused'"),
        "{error}"
    );
}

/// testCallActivityMissingInput: the call fails naming the missing input.
#[test]
fn a_called_process_missing_an_input_fails() {
    conformance_or_skip!();
    let m = io_spec_model(
        "in_1, unused = 1, True",
        "out_1, out_2, unused = in_1 * 2, in_2.upper(), False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data input 'in_2'"));
}

/// testCallActivityMissingOutput: the call fails naming the output not set.
#[test]
fn a_called_process_missing_an_output_fails() {
    conformance_or_skip!();
    let m = io_spec_model(
        r#"in_1, in_2, unused = 1, "hello world", True"#,
        "out_1, unused = in_1 * 2, False",
    );
    let state = start_process(&m, "parent", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data output 'out_2'"));
}

/// CallActivityTest.test_data_persists_through_call_activity and
/// test_call_activity_allows_removal_of_data: the called process's data comes back, and a
/// variable it deleted is gone. (Its last script prints, and `print` is not among SpiffArena's
/// script globals: the prints are replaced by `pass`.)
#[test]
fn data_persists_through_a_call_activity_and_a_deleted_variable_is_gone() {
    conformance_or_skip!();
    let (caller_name, caller) = conformance_file("bpmn/data/call_activity_end_event.bpmn");
    let prints = "print(pre_var)\nprint(my_var)\nprint(my_other_var)";
    assert!(caller.contains(prints));
    let files = [
        (caller_name, caller.replace(prints, "pass")),
        conformance_file("bpmn/data/call_activity_call_activity.bpmn"),
    ];
    let m = build_model(&files, Some("Process_8200379")).unwrap();
    let state = start_process(&m, "Process_8200379", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"pre_var": "some string", "my_var": "World", "my_other_var": "Mike"})
    );
}
