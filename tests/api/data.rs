//! Data over HTTP: a task's ioSpecification and data objects across a subprocess (data
//! stores: `data_stores`).

use crate::domain::*;
use crate::helpers::spawn_app;
use crate::models::definitions;
use reqwest::StatusCode;
use serde_json::json;

fn approval() -> String {
    definitions(
        r#"<bpmn:process id="approval" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="decide" />
    <bpmn:userTask id="decide">
      <bpmn:ioSpecification>
        <bpmn:dataInput id="amount" /><bpmn:dataOutput id="approved" />
        <bpmn:inputSet><bpmn:dataInputRefs>amount</bpmn:dataInputRefs></bpmn:inputSet>
        <bpmn:outputSet><bpmn:dataOutputRefs>approved</bpmn:dataOutputRefs></bpmn:outputSet>
      </bpmn:ioSpecification>
    </bpmn:userTask>
    <bpmn:sequenceFlow id="f1" sourceRef="decide" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// The task runs on its inputs; what goes on is its outputs only (SpiffWorkflow's rule); a
/// missing input or output fails the instance, naming it.
#[tokio::test]
async fn a_task_with_an_io_specification_passes_on_its_outputs_only() {
    let app = spawn_app().await;
    upload_ok(&app, "data/approval", "approval.bpmn", &approval()).await;

    let id = start_ok(&app, "data/approval", &json!({"amount": 10, "note": "x"})).await;
    let guid = waiting_task(&app, id, "decide").await;
    let (status, done) =
        complete_task(&app, id, &guid, &json!({"approved": true, "extra": 1})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"], json!({"approved": true}), "{shown}");

    let (status, body) = start(&app, "data/approval", &json!({"note": "no amount"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["process_instance"]["status"], "error", "{body}");
    let message = body["process_instance"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("data input 'amount'"), "{body}");

    let id = start_ok(&app, "data/approval", &json!({"amount": 10})).await;
    let guid = waiting_task(&app, id, "decide").await;
    complete_task(&app, id, &guid, &json!({"other": 1})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "error", "{shown}");
    let message = shown["error"]["message"].as_str().unwrap();
    assert!(message.contains("data output 'approved'"), "{shown}");
}

/// A data object written by one task is read and changed inside a subprocess; it stays out
/// of the task data, and the instance shows it.
#[tokio::test]
async fn data_objects_are_shared_with_a_subprocess_and_kept_out_of_the_task_data() {
    let app = spawn_app().await;
    let xml = definitions(
        r#"<bpmn:process id="objects" isExecutable="true">
    <bpmn:dataObject id="total" />
    <bpmn:dataObjectReference id="ref_write" dataObjectRef="total" />
    <bpmn:dataObjectReference id="ref_sub" dataObjectRef="total" />
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f0" sourceRef="start" targetRef="write" />
    <bpmn:scriptTask id="write">
      <bpmn:dataOutputAssociation id="out_1"><bpmn:targetRef>ref_write</bpmn:targetRef></bpmn:dataOutputAssociation>
      <bpmn:script>total = 40</bpmn:script>
    </bpmn:scriptTask>
    <bpmn:sequenceFlow id="f1" sourceRef="write" targetRef="sub" />
    <bpmn:subProcess id="sub">
      <bpmn:startEvent id="s_start" />
      <bpmn:sequenceFlow id="s0" sourceRef="s_start" targetRef="add" />
      <bpmn:scriptTask id="add">
        <bpmn:dataInputAssociation id="in_2"><bpmn:sourceRef>ref_sub</bpmn:sourceRef></bpmn:dataInputAssociation>
        <bpmn:dataOutputAssociation id="out_2"><bpmn:targetRef>ref_sub</bpmn:targetRef></bpmn:dataOutputAssociation>
        <bpmn:script>total = total + 2
seen = total</bpmn:script>
      </bpmn:scriptTask>
      <bpmn:sequenceFlow id="s1" sourceRef="add" targetRef="s_end" />
      <bpmn:endEvent id="s_end" />
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f2" sourceRef="sub" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    );
    upload_ok(&app, "data/objects", "objects.bpmn", &xml).await;
    let id = start_ok(&app, "data/objects", &json!({})).await;
    let shown = show(&app, id).await;
    assert_eq!(shown["status"], "complete", "{shown}");
    assert_eq!(shown["data"], json!({"seen": 42}), "{shown}");
    assert_eq!(shown["data_objects"], json!({"total": 42}), "{shown}");
}
