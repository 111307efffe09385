//! Models as large and as deep as the limits allow run within a blocking thread's stack, in
//! time proportional to their size.
use super::*;
use crate::bpmn::limits::model_tests::{call_chain, call_chain_to};
use std::time::{Duration, Instant};

/// start -> `tasks` none tasks in a row -> end.
fn chain(tasks: usize) -> String {
    let mut body = String::from(
        r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t1"/>"#,
    );
    for i in 1..=tasks {
        let next = if i == tasks {
            "e".to_string()
        } else {
            format!("t{}", i + 1)
        };
        body.push_str(&format!(
            r#"<bpmn:task id="t{i}"/><bpmn:sequenceFlow id="f{i}" sourceRef="t{i}" targetRef="{next}"/>"#
        ));
    }
    body.push_str(r#"<bpmn:endEvent id="e"/>"#);
    body
}

#[test]
fn subprocesses_nested_to_the_limit_run_on_a_blocking_threads_stack() {
    on_a_blocking_threads_stack(|| {
        let model = call_chain(3, 20).expect("62 levels load");
        let ran = start_process(&model, "P0", json!({}));
        assert_eq!(ran.status, InstanceStatus::Complete);
    });
}

/// Runs `test` on a thread with the stack of tokio's blocking threads (2 MiB), where the
/// engine's steps run.
fn on_a_blocking_threads_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(test)
        .unwrap()
        .join()
        .expect("no stack overflow");
}

#[test]
fn a_task_waiting_at_the_deepest_level_completes_fails_and_is_terminated() {
    on_a_blocking_threads_stack(|| {
        let model = call_chain_to(3, 20, r#"<bpmn:userTask id="c"/>"#).expect("62 levels");
        let waiting = start_process(&model, "P0", json!({}));
        assert_eq!(waiting.status, InstanceStatus::UserInputRequired);
        let guid = task(&waiting, "c/c/c").guid;
        let mut completed = waiting.clone();
        complete_guid(&model, &mut completed, guid, json!({}));
        assert_eq!(completed.status, InstanceStatus::Complete);
        let mut terminated = waiting.clone();
        terminate(&model, &mut terminated).unwrap();
        assert_eq!(terminated.status, InstanceStatus::Terminated);
        let failing =
            r#"<bpmn:scriptTask id="c"><bpmn:script>x = 1 / 0</bpmn:script></bpmn:scriptTask>"#;
        let model = call_chain_to(3, 20, failing).expect("62 levels");
        let failed = start_process(&model, "P0", json!({}));
        assert_eq!(failed.status, InstanceStatus::Error);
    });
}

#[test]
fn a_step_costs_time_in_proportion_to_the_tasks_it_runs() {
    let time = |tasks: usize| {
        let model = model(&chain(tasks));
        let began = Instant::now();
        let (state, _) = start_with(&model, json!({}));
        assert_eq!(state.status, InstanceStatus::Complete);
        began.elapsed()
    };
    time(100); // warm up
    let (small, large) = (time(1000), time(9000));
    // linear: 9x the tasks; a quadratic step would take about 81x
    assert!(
        large < small * 30 + Duration::from_millis(50),
        "1,000 tasks: {small:?}, 9,000 tasks: {large:?}"
    );
}
