//! The engine reads no clock, draws no random ids and runs no Python of its own: the step
//! context is its only source of all three, so the same input gives the same output.

use super::*;

fn context_at(now: &str, seed: u128) -> StepContext {
    StepContext::new(
        chrono::DateTime::parse_from_rfc3339(now).unwrap().into(),
        TaskIds::from_seed(Uuid::from_u128(seed)),
        crate::test_support::script_host(),
    )
}

fn clock_model() -> ModelSpec {
    model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}"#,
        script("stamp", "stamped = '%s-%d' % ('at', 7)"),
        chain(&["s", "stamp", "u", "e"])
    ))
}

#[test]
fn task_ids_come_from_the_context_in_creation_order() {
    let (state, _) = crate::engine::start(
        &clock_model(),
        "P",
        start_event(json!({})),
        &mut context_at(NOW, 0),
    )
    .unwrap();
    let ids: Vec<(String, String)> = state
        .tasks
        .iter()
        .map(|t| (t.element_id.clone(), t.guid.to_string()))
        .collect();
    let expected = [
        ("s", "00000000-0000-4000-8000-000000000000"),
        ("stamp", "00000000-0000-4000-8000-000000000001"),
        ("u", "00000000-0000-4000-8000-000000000002"),
    ]
    .map(|(element, guid)| (element.to_string(), guid.to_string()));
    assert_eq!(ids, expected);
}

/// A host that answers every script with fixed data: what the engine does with a script is
/// what its context's host says.
struct FixedScripts;

impl crate::expr::ScriptHost for FixedScripts {
    fn eval(
        &self,
        _: &str,
        _: &Map,
        _: &crate::expr::Context,
    ) -> Result<Value, crate::expr::ExprError> {
        Ok(json!(true))
    }
    fn exec(
        &self,
        source: &str,
        data: &Map,
        _: &crate::expr::Context,
    ) -> Result<Map, crate::expr::ExprError> {
        let mut out = data.clone();
        out.insert("ran".into(), json!(source));
        Ok(out)
    }
    fn check(&self, _: &str, _: bool) -> Result<(), crate::expr::ExprError> {
        Ok(())
    }
}

#[test]
fn scripts_run_on_the_host_of_the_step_context() {
    let mut context = StepContext::new(
        now(),
        TaskIds::from_seed(Uuid::nil()),
        std::sync::Arc::new(FixedScripts),
    );
    let (state, _) =
        crate::engine::start(&clock_model(), "P", start_event(json!({})), &mut context).unwrap();
    assert_eq!(state.data["ran"], "stamped = '%s-%d' % ('at', 7)");
    assert!(state.data.get("stamped").is_none());
}

#[test]
fn the_same_input_gives_the_same_output() {
    let run = || {
        let m = clock_model();
        let (mut state, first) =
            crate::engine::start(&m, "P", start_event(json!({})), &mut context_at(NOW, 9)).unwrap();
        let user = task(&state, "u").guid;
        let complete = Event::CompleteTask {
            task_guid: user,
            data: map(json!({"ok": true})),
        };
        let second =
            crate::engine::step(&m, &mut state, complete, &mut context_at(NOW, 10)).unwrap();
        (snapshot(&state), first, second)
    };
    assert_eq!(run(), run());
}
