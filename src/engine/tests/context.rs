//! The engine reads no clock and draws no random ids: the step context is its only source of
//! both, so the same input gives the same output.

use super::*;

fn context_at(now: &str, seed: u128) -> StepContext {
    StepContext::new(
        chrono::DateTime::parse_from_rfc3339(now).unwrap().into(),
        TaskIds::from_seed(Uuid::from_u128(seed)),
    )
}

fn clock_model() -> ModelSpec {
    model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:userTask id="u"/><bpmn:endEvent id="e"/>{}"#,
        script(
            "stamp",
            "from datetime import datetime\nstamped = datetime.now().isoformat()"
        ),
        chain(&["s", "stamp", "u", "e"])
    ))
}

fn plain_start() -> Event {
    Event::Start {
        start_event_id: None,
        data: Map::new(),
        message: None,
    }
}

#[test]
fn task_ids_come_from_the_context_in_creation_order() {
    let (state, _) =
        crate::engine::start(&clock_model(), "P", plain_start(), &mut context_at(NOW, 0)).unwrap();
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

#[test]
fn scripts_read_the_time_of_the_step() {
    let (state, _) = crate::engine::start(
        &clock_model(),
        "P",
        plain_start(),
        &mut context_at("2027-01-02T03:04:05Z", 7),
    )
    .unwrap();
    assert_eq!(state.data["stamped"], "2027-01-02T03:04:05");
}

#[test]
fn the_same_input_gives_the_same_output() {
    let run = || {
        let m = clock_model();
        let (mut state, first) =
            crate::engine::start(&m, "P", plain_start(), &mut context_at(NOW, 9)).unwrap();
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
