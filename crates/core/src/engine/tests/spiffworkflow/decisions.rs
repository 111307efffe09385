//! SpiffWorkflow's business rule task models: decision tables, Camunda's form, a rule that
//! does not run, and a decision of another model.

use super::*;

/// BusinessRuleTaskTest (spiff): a script sets the question, the table answers it, and the
/// process completes with the answer merged into the task data.
#[test]
fn a_business_rule_task_answers_from_its_decision_table() {
    conformance_or_skip!();
    let m = spiffworkflow_models(
        &[
            "spiff/data/business_rule_task.bpmn",
            "spiff/data/dmn/business_rules.dmn",
        ],
        "Process_bd2e724",
    );
    let state = start_process(&m, "Process_bd2e724", json!({}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"question": "X", "answer": "Y"})
    );
}

/// BusinessRuleTaskParserTest (camunda): x = 3 takes the gateway's default flow to the
/// decision (Camunda's `decisionRef`), which gives y = "A".
#[test]
fn a_camunda_business_rule_task_decides_after_the_gateway() {
    conformance_or_skip!();
    let m = spiffworkflow_models(
        &[
            "camunda/data/ExclusiveGatewayIfElseAndDecision.bpmn",
            "camunda/data/dmn/test_integer_decision.dmn",
        ],
        "Process_1",
    );
    let state = start_process(&m, "Process_1", json!({"x": 3}));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data), json!({"x": 3, "y": "A"}));
}

/// InvalidBusinessRuleTaskParserTest: `spam= 1` fails the task when its rule runs, naming
/// the row (the upload's syntax check refuses the file before that can happen).
#[test]
fn a_decision_whose_rule_does_not_run_fails_the_task_with_its_row() {
    conformance_or_skip!();
    let m = spiffworkflow_models(
        &[
            "camunda/data/invalid/InvalidDecision.bpmn",
            "camunda/data/dmn/invalid_decision.dmn",
        ],
        "Process_1",
    );
    let state = start_process(&m, "Process_1", json!({"x": 3}));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.unwrap();
    assert_eq!(error.element_id, "InvalidDecisionTaskId");
    assert!(error.message.contains("SyntaxError"), "{}", error.message);
    assert!(error.message.contains("row 1"), "{}", error.message);
}

/// A decision that is not in the model is asked for (the shell finds it in another model);
/// one no model defines fails the task with the reason.
#[test]
fn a_decision_the_model_lacks_is_asked_for_then_fails_when_missing() {
    conformance_or_skip!();
    let m = spiffworkflow_models(&["spiff/data/business_rule_task.bpmn"], "Process_bd2e724");
    assert!(m.calls_elsewhere);
    let event = start_event(json!({}));
    let asked = start(&m, "Process_bd2e724", event).expect_err("the step needs the decision");
    assert_eq!(
        asked,
        EngineError::CalleeNeeded(Callee::Decision("decision_1".into()))
    );
    let dmn = spiffworkflow_models(
        &[
            "spiff/data/business_rule_task.bpmn",
            "spiff/data/dmn/business_rules.dmn",
        ],
        "Process_bd2e724",
    );
    let linked = m
        .with_callees(
            &[(Callee::Decision("decision_1".into()), &dmn)],
            Default::default(),
        )
        .unwrap();
    let state = start_process(&linked, "Process_bd2e724", json!({}));
    assert_eq!(state.data["answer"], json!("Y"));
    let reason = "The decision 'decision_1' was not found: no process model defines it";
    let missing = m
        .with_callees(
            &[],
            [("decision:decision_1".to_string(), reason.to_string())].into(),
        )
        .unwrap();
    let state = start_process(&missing, "Process_bd2e724", json!({}));
    assert_eq!(state.status, InstanceStatus::Error);
    assert_eq!(state.error.unwrap().message, reason);
}
