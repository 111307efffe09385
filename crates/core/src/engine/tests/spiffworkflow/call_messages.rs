//! camunda `CallActivityMessageTest`: a call activity whose process sends a request to
//! another participant and waits for its answer, run across two instances as the service
//! runs them (helpers from `calls_and_starts`).

use super::calls_and_starts::{do_named, own_id, ready, ready_ids, save_restore};
use super::*;

const MESSAGE_CHILD: &str = "camunda/data/call_activity_with_message.bpmn";
const MESSAGE_PARENT: &str = "camunda/data/call_activity_with_message_parent.bpmn";
/// The participant that starts with a none start event and calls `Subprocess`.
const CALLER: &str = "Process_0vpmpb9";
/// The participant that starts on the `ApprovalRequest` message.
const APPROVER: &str = "Process_0xeaemr";

fn spiff_ext(inner: &str) -> String {
    format!(
        r#"<bpmn:extensionElements xmlns:spiffworkflow="{SPIFF_NS}">{inner}</bpmn:extensionElements>"#
    )
}

/// The models as SpiffWorkflow's test loads them, with the Camunda message extensions
/// (`camunda:expression` on a throw: the payload; `camunda:resultVariable`: where the catch
/// puts it) written in SpiffArena's dialect when `translate` (`messagePayload` on the throw,
/// `messageVariable` on the catch, which is where SpiffArena names the variable).
fn message_models(translate: bool) -> ModelSpec {
    let (child_name, mut child) = conformance_file(MESSAGE_CHILD);
    let (parent_name, mut parent) = conformance_file(MESSAGE_PARENT);
    if translate {
        let request = r#"messageRef="Message_01cfgjd" camunda:expression="plan_details" />"#;
        let response_catch = r#"messageRef="Message_05r8evp" />"#;
        let response = r#"messageRef="Message_1v7scp6" camunda:expression="approved" camunda:resultVariable="Approved" />"#;
        assert!(child.contains(request) && child.contains(response_catch));
        assert!(parent.contains(response));
        child = child
            .replace(
                request,
                &format!(
                    r#"messageRef="Message_01cfgjd">{}</bpmn:messageEventDefinition>"#,
                    spiff_ext(
                        "<spiffworkflow:messagePayload>plan_details</spiffworkflow:messagePayload>"
                    )
                ),
            )
            .replace(
                response_catch,
                &format!(
                    r#"messageRef="Message_05r8evp">{}</bpmn:messageEventDefinition>"#,
                    spiff_ext(
                        "<spiffworkflow:messageVariable>Approved</spiffworkflow:messageVariable>"
                    )
                ),
            );
        parent = parent.replace(
            response,
            &format!(
                r#"messageRef="Message_1v7scp6">{}</bpmn:messageEventDefinition>"#,
                spiff_ext("<spiffworkflow:messagePayload>approved</spiffworkflow:messagePayload>")
            ),
        );
    }
    let files = [(child_name, child), (parent_name, parent)];
    build_model(&files, Some(CALLER)).unwrap_or_else(|e| panic!("refused: {e}"))
}

/// The one message among the effects.
fn sent(effects: &[Effect]) -> (String, Value) {
    let messages: Vec<(String, Value)> = effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::SendMessage { name, payload, .. } => Some((name.clone(), payload.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(messages.len(), 1, "{effects:?}");
    messages[0].clone()
}

/// One round of CallActivityMessageTest, with the service's part played here: the request
/// the called process sends starts an approver instance (SpiffWorkflow runs both participants
/// of the collaboration in one workflow; here each is an instance, and a message start
/// creates one), whose response goes to the catch waiting inside the call activity.
fn approval_round(
    m: &ModelSpec,
    caller: &mut InstanceState,
    plan: &str,
    approved: &str,
) -> (Value, Value) {
    assert_eq!(ready_ids(caller), ["Activity_EnterPlan"]);
    let guid = ready(caller)[0].guid;
    let effects = complete_guid(m, caller, guid, json!({"plan_details": plan}));
    let (name, request) = sent(&effects);
    assert_eq!(name, "ApprovalRequest");
    let catch = task(
        caller,
        "Activity_RequestApproval/Event_Get_Approval_Response",
    );
    assert_eq!(catch.state, TaskState::Waiting);
    let catch = catch.guid;

    let (mut approver, _) = start(m, APPROVER, message_start(&name, request.clone()))
        .expect("the request starts an approver");
    assert_eq!(ready_ids(&approver), ["Activity_ApproveOrDeny"]);
    let guid = ready(&approver)[0].guid;
    let effects = complete_guid(m, &mut approver, guid, json!({"approved": approved}));
    assert_eq!(approver.status, InstanceStatus::Complete);
    let (name, response) = sent(&effects);
    assert_eq!(name, "ApprovalResponse");
    deliver_guid(m, caller, catch, &name, response.clone()).expect("delivered");
    (request, response)
}

/// CallActivityMessageTest.testRunThroughHappy (and testRunThroughSaveRestore), with the
/// Camunda message extensions in SpiffArena's dialect: a plan is sent for approval from
/// inside the call activity until approved, then enabled; the data at the end is
/// SpiffWorkflow's. The steps are the test's, across the two instances.
#[test]
fn call_activity_message_test_with_spiffarena_message_extensions() {
    conformance_or_skip!();
    let m = message_models(true);
    for save in [false, true] {
        let mut caller = start_process(&m, CALLER, json!({}));
        // SpiffWorkflow: one ready task, two started (the call activity and its workflow)
        assert_eq!(ready_ids(&caller), ["Activity_EnterPlan"]);
        assert_eq!(
            task(&caller, "Activity_RequestApproval").state,
            TaskState::Started
        );
        for (plan, approved) in [("Bad", "No"), ("Better", "No"), ("Best", "Yes")] {
            let (request, response) = approval_round(&m, &mut caller, plan, approved);
            assert_eq!(request, json!(plan));
            assert_eq!(response, json!(approved));
            // the called process runs on a copy of the caller's data, merged back at its end
            let call = task(&caller, "Activity_RequestApproval");
            let data = match call.state {
                TaskState::Started => &caller.internal.local_data[&call.guid],
                _ => &caller.data,
            };
            assert_eq!(data["Approved"], json!(approved));
            assert_eq!(data["plan_details"], json!(plan));
            if save {
                save_restore(&mut caller);
            }
        }
        // the terminate end event ended the called process only
        assert_eq!(caller.status, InstanceStatus::UserInputRequired);
        do_named(
            &m,
            &mut caller,
            "Activity_EnablePlan",
            json!({"Done": "OK!"}),
        );
        assert_eq!(
            caller.status,
            InstanceStatus::Complete,
            "{:?}",
            caller.error
        );
        assert_eq!(
            Value::Object(caller.data.clone()),
            json!({"plan_details": "Best", "Approved": "Yes", "Done": "OK!"})
        );
        assert_eq!(
            count(&caller, "Activity_RequestApproval/Activity_EnterPlan"),
            3
        );
    }
}

/// CallActivityMessageTest on the files as they are. Difference: the Camunda dialect's
/// message extensions (`camunda:expression`, `camunda:resultVariable`) are not read (the
/// engine reads SpiffArena's), so the request carries all the task data and the response
/// reaches the catch without naming a variable: `Approved` is never set, and the gateway's
/// `Approved == "Yes"` fails the instance where SpiffWorkflow loops back to Enter Plan.
#[test]
fn call_activity_message_test_camunda_extensions_are_not_read() {
    conformance_or_skip!();
    let m = message_models(false);
    let mut caller = start_process(&m, CALLER, json!({}));
    let (request, response) = approval_round(&m, &mut caller, "Bad", "No");
    assert_eq!(request, json!({"plan_details": "Bad"}));
    assert_eq!(response["approved"], json!("No"));
    assert_eq!(caller.status, InstanceStatus::Error);
    let error = caller.error.clone().unwrap();
    assert!(error.message.contains("Approved"), "{error}");
    assert_eq!(own_id(&error.element_id), "Gateway_Approved", "{error}");
}

// --- ApprovalsTest ------------------------------------------------------------------------
