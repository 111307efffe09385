//! SpiffWorkflow's script models: pre- and post-scripts, and a script task that builds its
//! data and drops its function.

use super::*;

/// PrescriptPostscriptTest.task_test: the pre-script sets x, y and z = x + y; the
/// post-script sets c = z * 2 and deletes x and y.
#[test]
fn prescript_postscript_leaves_a_b_c_z() {
    conformance_or_skip!();
    let m = spiffworkflow_model("spiff/data/prescript_postscript.bpmn", "Process_1");
    let state = start_process(&m, "Process_1", json!({"a": 1, "b": 2}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"a": 1, "b": 2, "c": 12, "z": 6})
    );
}

/// PrescriptPostscriptTest.test_for_error: without a and b the pre-script fails, and the task
/// is in error.
#[test]
fn prescript_postscript_without_data_fails_in_the_prescript() {
    conformance_or_skip!();
    let m = spiffworkflow_model("spiff/data/prescript_postscript.bpmn", "Process_1");
    let state = start_process(&m, "Process_1", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.clone().expect("an error");
    assert_eq!(error.element_id, "Activity_1iqs4li");
    assert!(error.message.contains("(in the preScript)"), "{error}");
    assert!(error.message.starts_with("NameError"), "{error}");
    assert_eq!(task(&state, "Activity_1iqs4li").state, TaskState::Error);
}

/// PythonScriptEngineTest.testRunThroughHappy and testFunctionsAndGlobalsAreRemoved: the
/// scripts build `testvar`, `testvar2` and `sample`; the function they define is not kept.
#[test]
fn script_test_builds_its_data_and_drops_its_function() {
    conformance_or_skip!();
    let m = spiffworkflow_model("bpmn/data/ScriptTest.bpmn", "Process_1l85e0n");
    let state = start_process(&m, "Process_1l85e0n", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({
            "testvar": {"a": 1, "b": 2, "new": "Test"},
            "testvar2": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c"}],
            "sample": ["b", "c"],
        })
    );
}
