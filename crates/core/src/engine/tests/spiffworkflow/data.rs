//! SpiffWorkflow's data models: a task's io specification, and data objects read and written
//! through associations.

use super::*;

fn io_spec_on_task(set_data: &str) -> ModelSpec {
    let (name, xml) = conformance_file("bpmn/data/io_spec_on_task.bpmn");
    let original = r#"in_1, in_2, unused = 1, "hello world", True"#;
    assert!(xml.contains(original));
    build_model(&[(name, xml.replace(original, set_data))], Some("main")).unwrap()
}

/// IOSpecOnTaskTest.testIOSpecOnTask: the task sees its inputs only; only its outputs go on.
#[test]
fn a_task_with_an_io_specification_sees_its_inputs_and_hands_on_its_outputs() {
    conformance_or_skip!();
    let m = io_spec_on_task(r#"in_1, in_2, unused = 1, "hello world", True"#);
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "any_task").guid;
    assert_eq!(
        Value::Object(state.internal.local_data[&guid].clone()),
        json!({"in_1": 1, "in_2": "hello world"})
    );
    complete_guid(
        &m,
        &mut state,
        guid,
        json!({"out_1": 1, "out_2": "bye", "extra": true}),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data.clone()),
        json!({"out_1": 1, "out_2": "bye"})
    );
}

/// testIOSpecOnTaskMissingInput and testIOSpecOnTaskMissingOutput.
#[test]
fn a_task_missing_an_input_or_an_output_fails() {
    conformance_or_skip!();
    let m = io_spec_on_task("in_1, unused = 1, True");
    let state = start_process(&m, "main", json!({}));
    assert!(state.error.unwrap().message.contains("data input 'in_2'"));
    let m = io_spec_on_task(r#"in_1, in_2, unused = 1, "hello world", True"#);
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "any_task").guid;
    complete_guid(&m, &mut state, guid, json!({"out_1": 1}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data output 'out_2'"));
}

/// DataObjectTest.actual_test on data_object.bpmn (its `bpmn:task` run as a user task, as
/// SpiffWorkflow runs it): a data object is written from a task's data and leaves it; a task
/// that reads it sees the object's value, not what its data held; one that only reads it does
/// not change it; a task inside a subprocess reads and writes its parent's data object.
#[test]
fn data_objects_are_read_and_written_through_associations_only() {
    conformance_or_skip!();
    let m = with_user_tasks("bpmn/data/data_object.bpmn", "Process");
    let mut state = start_process(&m, "Process", json!({}));
    let complete_with = |state: &mut InstanceState, element: &str, data: Value| {
        let guid = task(state, element).guid;
        complete_guid(&m, state, guid, data);
    };
    complete_with(&mut state, "generate_data", json!({"obj_1": "hello"}));
    assert_eq!(state.internal.data_objects["obj_1"], json!("hello"));
    assert!(
        !state.data.contains_key("obj_1"),
        "copied out of the task data"
    );

    complete_with(&mut state, "task_1", json!({"obj_1": "hello again"}));
    assert_eq!(
        state.data["obj_1"],
        json!("hello"),
        "read_data sees the data object"
    );
    complete_with(&mut state, "read_data", json!({"obj_1": "hello again"}));
    assert_eq!(
        state.internal.data_objects["obj_1"],
        json!("hello"),
        "unchanged"
    );
    // the subprocess's task reads it now (its data is the instance's): the object's value,
    // not what read_data left
    assert_eq!(state.data["obj_1"], json!("hello"));
    complete_with(&mut state, "placeholder", json!({"obj_1": "hello again"}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(!state.data.contains_key("obj_1"));
    assert_eq!(state.internal.data_objects["obj_1"], json!("hello again"));
}

/// DataObjectTest.testMissingDataOutput: a task that writes a data object its data does not
/// hold fails.
#[test]
fn a_data_object_missing_from_the_writers_data_fails() {
    conformance_or_skip!();
    let (name, xml) = conformance_file("bpmn/data/data_object.bpmn");
    let m = build_model(&[(name, xml)], Some("Process")).unwrap();
    let mut state = start_process(&m, "Process", json!({}));
    let guid = task(&state, "generate_data").guid;
    complete_guid(&m, &mut state, guid, json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert!(state.error.unwrap().message.contains("data object 'obj_1'"));
}

/// DataObjectGatewayTest.testExpression: the gateway decides on the data object the task
/// wrote, which is not left in the data.
#[test]
fn a_gateway_decides_on_a_data_object() {
    conformance_or_skip!();
    let m = with_user_tasks("bpmn/data/data_object_gateway.bpmn", "main");
    let mut state = start_process(&m, "main", json!({}));
    let guid = task(&state, "set_data").guid;
    complete_guid(&m, &mut state, guid, json!({"val": true}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(task(&state, "yes").state, TaskState::Completed);
    assert_eq!(count(&state, "no"), 0);
    assert!(!state.data.contains_key("val"));
}
