//! A run that needs a process or decision of another model stops where a token reaches the
//! element, before the element does anything, and goes on from there once it is linked:
//! nothing that ran before it runs again.

use super::*;
use crate::bpmn::Callee;
use crate::engine::{continue_start, continue_step, start_run, step_run, PausedRun, Run};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Runs every script as a no-op and counts them.
#[derive(Default)]
struct CountedScripts(AtomicUsize);

impl crate::expr::ScriptHost for CountedScripts {
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
        _: &str,
        data: &Map,
        _: &crate::expr::Context,
    ) -> Result<Map, crate::expr::ExprError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(data.clone())
    }
    fn check(&self, _: &str, _: bool) -> Result<(), crate::expr::ExprError> {
        Ok(())
    }
}

fn counted_context(scripts: &Arc<CountedScripts>) -> StepContext {
    StepContext::new(now(), TaskIds::from_seed(Uuid::nil()), scripts.clone())
}

fn linked(caller: &ModelSpec) -> ModelSpec {
    caller
        .with_callees(
            &[(Callee::Process("other".into()), &other_model())],
            Default::default(),
        )
        .unwrap()
}

fn asked(run: Run<impl std::fmt::Debug>) -> (Callee, Box<PausedRun>) {
    match run {
        Run::AsksFor(callee, paused) => (callee, paused),
        Run::Done(done) => panic!("the run should ask for the callee, it ended: {done:?}"),
    }
}

#[test]
fn a_start_that_reaches_a_call_to_another_model_goes_on_where_it_stopped() {
    let caller = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:callActivity id="call" calledElement="other"/><bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}"#,
        script("before", "x = 1"),
        chain(&["s", "before", "call", "u", "e"]),
    ));
    let scripts = Arc::new(CountedScripts::default());
    let mut context = counted_context(&scripts);
    let run = start_run(&caller, "P", start_event(json!({})), &mut context).unwrap();
    let (callee, paused) = asked(run);
    assert_eq!(callee, Callee::Process("other".into()));
    assert_eq!(paused.process_id(), "P");
    assert_eq!(
        scripts.0.load(Ordering::SeqCst),
        1,
        "the script before the call ran"
    );

    let linked = linked(&caller);
    let run = continue_start(&linked, paused, &mut context, Default::default()).unwrap();
    let Run::Done((state, _)) = run else {
        panic!("nothing else is missing")
    };
    assert_eq!(
        state.status,
        InstanceStatus::UserInputRequired,
        "{:?}",
        state.error
    );
    // `before` once, the callee's `work` once: the run went on, it was not made again
    assert_eq!(scripts.0.load(Ordering::SeqCst), 2);
    assert_eq!(count(&state, "before"), 1);
    assert_eq!(count(&state, "call/work"), 1);
    // task ids went on from where the paused run left them
    let mut guids: Vec<Uuid> = state.tasks.iter().map(|t| t.guid).collect();
    guids.sort();
    guids.dedup();
    assert_eq!(guids.len(), state.tasks.len(), "every task has its own id");
}

#[test]
fn a_step_that_reaches_a_call_leaves_the_state_alone_until_it_goes_on() {
    let caller = model(&format!(
        r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/>{}<bpmn:callActivity id="call" calledElement="other"/><bpmn:endEvent id="e"/>{}"#,
        script("before", "x = 1"),
        chain(&["s", "u", "before", "call", "e"]),
    ));
    let (mut state, _) = start_with(&caller, json!({}));
    let u = task(&state, "u").guid;
    let before = state.clone();
    let scripts = Arc::new(CountedScripts::default());
    let mut context = counted_context(&scripts);
    let complete = Event::CompleteTask {
        task_guid: u,
        data: map(json!({"answer": 42})),
    };
    let (_, paused) = asked(step_run(&caller, &mut state, complete, &mut context).unwrap());
    assert_eq!(
        state.tasks.len(),
        before.tasks.len(),
        "the state is untouched"
    );
    assert_eq!(state.status, before.status);

    let linked = linked(&caller);
    let run = continue_step(
        &linked,
        &mut state,
        paused,
        &mut context,
        Default::default(),
    );
    assert!(matches!(run, Ok(Run::Done(_))));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(state.data["answer"], json!(42));
    assert_eq!(
        scripts.0.load(Ordering::SeqCst),
        2,
        "before and work, once each"
    );
}

#[test]
fn a_decision_of_another_model_is_asked_for_before_its_task_runs() {
    let caller = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:businessRuleTask id="rule"><bpmn:extensionElements><spiffworkflow:calledDecisionId>elsewhere</spiffworkflow:calledDecisionId></bpmn:extensionElements></bpmn:businessRuleTask><bpmn:endEvent id="e"/>{}"#,
        script("before", "x = 1"),
        chain(&["s", "before", "rule", "e"]),
    ));
    let scripts = Arc::new(CountedScripts::default());
    let mut context = counted_context(&scripts);
    let run = start_run(&caller, "P", start_event(json!({})), &mut context).unwrap();
    let (callee, paused) = asked(run);
    assert_eq!(callee, Callee::Decision("elsewhere".into()));
    // the task of the rule does not exist yet: the element did nothing
    let Run::AsksFor(_, paused) =
        continue_start(&caller, paused, &mut context, Default::default()).unwrap()
    else {
        panic!("still missing: it asks again");
    };
    // known missing, it fails the instance when it runs
    let missing = caller
        .with_callees(
            &[],
            [("decision:elsewhere".to_string(), "not found".to_string())].into(),
        )
        .unwrap();
    let Run::Done((state, _)) =
        continue_start(&missing, paused, &mut context, Default::default()).unwrap()
    else {
        panic!("a callee known missing is not asked for");
    };
    assert_eq!(state.status, InstanceStatus::Error);
    assert_eq!(state.error.as_ref().unwrap().element_id, "rule");
    assert_eq!(count(&state, "before"), 1);
    assert_eq!(scripts.0.load(Ordering::SeqCst), 1);
}
