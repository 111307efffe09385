//! Timer catch events: durations, Python expressions over the task data, expressions of the
//! wrong kind and values out of range.

use super::*;

#[test]
fn a_timer_catch_waits_until_its_duration_has_passed() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        timer_catch("wait", "timeDuration", "\"PT1H\""),
        chain(&["s", "wait", "e"])
    ));
    let (mut st, effects) = start_with(&m, json!({}));
    let wait = task(&st, "wait").guid;
    assert_eq!(
        started_timers(&effects),
        vec![(wait, "wait".to_string(), now() + Duration::hours(1))]
    );
    assert_eq!(st.status, InstanceStatus::Waiting);
    assert_eq!(task(&st, "wait").state, TaskState::Waiting);

    let effects = fire(&m, &mut st, "wait");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(st.status, InstanceStatus::Complete);
    // a timer fires once: the same event again is refused
    let again = step(&m, &mut st, Event::TimerFired { task_guid: wait });
    assert!(again.is_err());
}

#[test]
fn timer_expressions_are_python_with_the_task_data() {
    for (kind, expression, due) in [
        (
            "timeDate",
            "\"2027-01-01T08:00:00+01:00\"",
            "2027-01-01T07:00:00Z",
        ),
        (
            "timeDate",
            "datetime(2027, 1, 1, 7)",
            "2027-01-01T07:00:00Z",
        ),
        (
            "timeDuration",
            "timedelta(minutes=delay)",
            "2026-11-26T09:35:00Z",
        ),
        ("timeDuration", "f\"PT{delay}M\"", "2026-11-26T09:35:00Z"),
        ("timeCycle", "\"R3/PT10M\"", "2026-11-26T09:40:00Z"),
    ] {
        let m = model(&format!(
            r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
            timer_catch("wait", kind, expression),
            chain(&["s", "wait", "e"])
        ));
        let (st, effects) = start_with(&m, json!({"delay": 5}));
        assert_eq!(
            st.status,
            InstanceStatus::Waiting,
            "{expression}: {:?}",
            st.error
        );
        let due_at: chrono::DateTime<chrono::Utc> =
            chrono::DateTime::parse_from_rfc3339(due).unwrap().into();
        assert_eq!(started_timers(&effects)[0].2, due_at, "{expression}");
    }
}

#[test]
fn a_timer_expression_of_the_wrong_kind_fails_the_instance_naming_the_element() {
    let m = model(&format!(
        r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
        timer_catch("wait", "timeDuration", "5"),
        chain(&["s", "wait", "e"])
    ));
    let (st, _) = start_with(&m, json!({}));
    assert_eq!(st.status, InstanceStatus::Error);
    let error = st.error.unwrap();
    assert_eq!(error.element_id, "wait");
    assert!(
        error.message.contains("timeDuration") && error.message.contains("ISO 8601"),
        "{error}"
    );
}

/// Times no timer can wait for, and endless cycles under a second, are the model's error.
#[test]
fn timers_out_of_range_fail_the_instance() {
    for (kind, expression) in [
        ("timeDuration", "\"P99999999Y\""),
        ("timeDuration", "\"P9000Y\""),
        (
            "timeDuration",
            "{'__type__': 'timedelta', 'days': 10**15, 'seconds': 0, 'microseconds': 0}",
        ),
        ("timeCycle", "\"R/P9000Y\""),
        ("timeDate", "\"10000-01-01T00:00:00Z\""),
        ("timeCycle", "\"R/PT0.5S\""),
    ] {
        let m = model(&format!(
            r#"<bpmn:startEvent id="s"/>{}<bpmn:endEvent id="e"/>{}"#,
            timer_catch("wait", kind, expression),
            chain(&["s", "wait", "e"])
        ));
        let (st, _) = start_with(&m, json!({}));
        assert_eq!(st.status, InstanceStatus::Error, "{expression}");
        assert_eq!(st.error.unwrap().element_id, "wait", "{expression}");
    }
}
