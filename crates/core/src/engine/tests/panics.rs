//! A panic inside the engine is caught at its edge and puts the instance in error.

use super::*;

/// A live task whose element the model lacks makes the signal path index a missing element:
/// a defect, caught at the engine's edge, that puts the instance in error.
#[test]
fn a_panic_in_a_step_puts_the_instance_in_error() {
    let model = crate::bpmn::build_model(
        &[(
            "p.bpmn".to_string(),
            format!(
                "{}<bpmn:process id=\"P\" isExecutable=\"true\"><bpmn:startEvent id=\"s\" />\
                 <bpmn:sequenceFlow id=\"f\" sourceRef=\"s\" targetRef=\"u\" />\
                 <bpmn:userTask id=\"u\" /><bpmn:sequenceFlow id=\"g\" sourceRef=\"u\" targetRef=\"e\" />\
                 <bpmn:endEvent id=\"e\" /></bpmn:process></bpmn:definitions>",
                r#"<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">"#
            ),
        )],
        Some("P"),
    )
    .expect("model");
    let start = start_event(json!({}));
    let (mut state, _) = super::start(&model, "P", start).expect("started");
    let mut ghost = state.tasks.last().expect("a task").clone();
    ghost.guid = Uuid::new_v4();
    ghost.element_id = "ghost".into();
    ghost.state = TaskState::Waiting;
    state.tasks.push(ghost);
    let effects = super::step(
        &model,
        &mut state,
        Event::Signal {
            name: "x".into(),
            payload: Value::Null,
        },
    )
    .expect("a panic is not a caller mistake");
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.expect("an error");
    assert_eq!(
        error.error_code.as_deref(),
        Some(crate::engine::ENGINE_PANIC)
    );
    assert!(
        error.message.starts_with("internal engine error"),
        "{}",
        error.message
    );
    let _ = effects;
}

/// An instance whose process the model no longer has is failed without the engine knowing its
/// tasks' waits: it asks the shell to close every wait the instance holds, rather than leave
/// receives, connector jobs or timers of a stopped instance open.
#[test]
fn failing_an_instance_whose_process_is_gone_closes_all_its_waits() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e"/>{}"#,
        chain(&["s", "e"])
    ));
    let mut state = InstanceState::new("Gone", Map::new());
    let error = InstanceError {
        element_id: String::new(),
        message: "its process is gone".into(),
        error_code: None,
        file: None,
    };
    let effects = crate::engine::fail(&m, &mut state, None, error);
    assert_eq!(state.status, InstanceStatus::Error);
    assert_eq!(effects, vec![Effect::CloseWaitsOfInstance]);
}
