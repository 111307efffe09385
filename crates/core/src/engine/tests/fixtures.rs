//! SpiffArena fixtures (read from the conformance corpus, never copied): every folder loads and
//! runs as SpiffArena runs it.

use super::*;

fn fixtures_dir() -> std::path::PathBuf {
    let dir = crate::test_support::conformance_root().join("spiffarena-fixtures");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn load_fixture(name: &str) -> ModelSpec {
    let dir = fixtures_dir().join(name);
    let mut files = vec![];
    let mut primary = None;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        if file.ends_with(".bpmn") {
            files.push((file, std::fs::read_to_string(&path).unwrap()));
        } else if file == "process_model.json" {
            let j: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            primary = j["primary_process_id"].as_str().map(str::to_string);
        }
    }
    files.sort();
    build_model(&files, primary.as_deref()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn spiffarena_fixtures_load() {
    conformance_or_skip!();
    let dir = fixtures_dir();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for f in std::fs::read_dir(&path).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "bpmn") {
                let xml = std::fs::read_to_string(&f).unwrap();
                crate::bpmn::parse_file(&f.file_name().unwrap().to_string_lossy(), &xml)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let m = load_fixture(&name);
        let _ = m.summary();
        n += 1;
    }
    assert!(n >= 7, "only {n} fixture folders");
}

fn run_fixture(name: &str, process_id: Option<&str>) -> (ModelSpec, InstanceState, Vec<Effect>) {
    let m = load_fixture(name);
    let pid = process_id.unwrap_or(&m.primary_process_id).to_string();
    let (st, effects) = start(&m, &pid, start_event(json!({}))).unwrap();
    (m, st, effects)
}

#[test]
fn spiffarena_fixtures_run_as_spiffarena_runs_them() {
    conformance_or_skip!();
    // simple-message-send-receive: the primary process sends message_one and completes;
    // the model also starts with message_one.
    let (m, st, effects) = run_fixture("simple-message-send-receive", None);
    assert_eq!(
        m.primary_process_id,
        "Process_simple_message_send_receive_ivod1hz"
    );
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert!(
        matches!(&effects[..], [Effect::SendMessage { name, payload, .. }] if name == "message_one" && payload == &json!({"a": 1}))
    );
    assert_eq!(
        m.message_start("message_one").unwrap().process_id,
        "Process_message_start"
    );
    let (st, _) = start(
        &m,
        "Process_message_start",
        message_start("message_one", json!({"a": 1})),
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["the_message"].clone()),
        (InstanceStatus::Complete, json!({"a": 1}))
    );

    // message folder, manual task with a message boundary: completing the task completes.
    let (m, mut st, effects) = run_fixture("message", Some("Process_1769024890329"));
    assert_eq!(st.status, InstanceStatus::UserInputRequired);
    assert!(matches!(&effects[..], [Effect::WaitForMessage { name, .. }] if name == "A"));
    let manual = task(&st, "Task_1769024890329").guid;
    step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: manual,
            data: Map::new(),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    // ... or the message cancels it
    let (m, mut st, _) = run_fixture("message", Some("Process_1769024890329"));
    let b = task(&st, "Event_0qngnzk").guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: b,
            name: "A".into(),
            payload: json!({}),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete);
    assert_eq!(task(&st, "Task_1769024890329").state, TaskState::Cancelled);

    // receive task in a subprocess, correlated by processVariableCorrelation uid = 1
    let (m, mut st, effects) = run_fixture("message", Some("Process_from_local_tests_nmkz3hh"));
    let r = task(&st, "Activity_0qpzdpu");
    assert_eq!(r.scope, Some(task(&st, "Activity_0ifb3pp").guid));
    assert_eq!(
        effects,
        vec![Effect::WaitForMessage {
            task_guid: r.guid,
            name: "B".into(),
            expected: [("uid".to_string(), json!(1))].into()
        }]
    );
    let r = r.guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: r,
            name: "B".into(),
            payload: json!({"uid": 1}),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["a_var"].clone()),
        (InstanceStatus::Complete, json!({"uid": 1}))
    );

    // invoice conversation: user task, then send with correlation values, then wait for the reply
    let (m, mut st, _) = run_fixture(
        "message_send_one_conversation",
        Some("message_send_process"),
    );
    let form = task(&st, "invoice_form").guid;
    let form_data = json!({"customer_id": "sartography", "po_number": 1001, "amount": "One Billion Dollars", "description": "x"});
    let effects = step(
        &m,
        &mut st,
        Event::CompleteTask {
            task_guid: form,
            data: map(form_data),
        },
    )
    .unwrap();
    let values: BTreeMap<String, Value> = [
        ("customer_id".to_string(), json!("sartography")),
        ("po_number".to_string(), json!(1001)),
    ]
    .into();
    assert!(
        matches!(&effects[0], Effect::SendMessage { name, correlation_values, .. } if name == "Request Approval" && correlation_values == &values)
    );
    assert!(
        matches!(&effects[1], Effect::WaitForMessage { name, expected, .. } if name == "Approval Result" && expected == &values)
    );
    assert_eq!(st.data["the_topic"], json!("first_conversation"));
    // the receiver starts with the message and answers with the invoice
    let payload = match &effects[0] {
        Effect::SendMessage { payload, .. } => payload.clone(),
        _ => unreachable!(),
    };
    let (rst, reffects) = start(
        &m,
        "message_receiver_process",
        message_start("Request Approval", payload.clone()),
    )
    .unwrap();
    assert_eq!(rst.status, InstanceStatus::Complete);
    assert!(
        matches!(&reffects[..], [Effect::SendMessage { name, payload: p, correlation_values, .. }] if name == "Approval Result" && p == &payload && correlation_values == &values)
    );
    let catch = task(&st, "receive_message_response").guid;
    step(
        &m,
        &mut st,
        Event::MessageDelivered {
            task_guid: catch,
            name: "Approval Result".into(),
            payload: payload.clone(),
        },
    )
    .unwrap();
    assert_eq!(
        (st.status, st.data["the_payload"].clone()),
        (InstanceStatus::Complete, payload)
    );

    // service task: the script checks the response
    for (result, status) in [
        (json!({"do_not_fail": 1}), InstanceStatus::Complete),
        (json!({}), InstanceStatus::Error),
    ] {
        let (m, mut st, effects) = run_fixture("service_task", None);
        let svc = task(&st, "Task_1747924731738").guid;
        let signal = task(&st, "Event_0ss1sat").guid;
        assert_eq!(
            effects,
            vec![
                Effect::CallService { task_guid: svc },
                Effect::WaitForSignal {
                    task_guid: signal,
                    name: "CANCEL".into()
                }
            ]
        );
        assert_eq!(
            task(&st, "Event_0ss1sat").state,
            TaskState::Waiting,
            "signal boundary waits"
        );
        let call = service_call(&m, &st, svc).unwrap();
        assert_eq!(
            (call.operator_id.as_str(), call.params.clone()),
            (
                "ed/GetFiles",
                map(json!({"process_id": "a", "encoding": "b"}))
            )
        );
        step(
            &m,
            &mut st,
            Event::ServiceSucceeded {
                task_guid: svc,
                result,
            },
        )
        .unwrap();
        assert_eq!(st.status, status, "{:?}", st.error);
        if status == InstanceStatus::Error {
            let err = st.error.unwrap();
            assert_eq!(err.element_id, "Activity_03sneo2");
            assert!(err.message.contains("KeyError"), "{}", err.message);
        }
    }

    // parallel branch with time.sleep joins after the service task
    let (m, mut st, _) = run_fixture("parallel_service_task_callback", None);
    assert_eq!(st.status, InstanceStatus::Waiting, "{:?}", st.error);
    let svc = task(&st, "Task_parallel_callback_service").guid;
    step(
        &m,
        &mut st,
        Event::ServiceSucceeded {
            task_guid: svc,
            result: json!({"do_not_fail": true}),
        },
    )
    .unwrap();
    assert_eq!(st.status, InstanceStatus::Complete, "{:?}", st.error);
    assert_eq!(count(&st, "Gateway_join"), 1);

    // retries: retry configuration
    let m = load_fixture("retries");
    for (pid, retries, base) in [
        ("Process_Retries", 3, 2.0),
        ("Process_Retries_Backoff_Override", 3, 2.0),
    ] {
        let (st, _) = start(&m, pid, start_event(json!({}))).unwrap();
        let call = service_call(&m, &st, task(&st, "ServiceTask_1").guid).unwrap();
        assert_eq!((call.retries, call.backoff_base), (retries, base));
    }

    // message start + service task
    let m = load_fixture("message_start_service_task");
    let (st, effects) = start(
        &m,
        "message_start_service_task",
        message_start("quick_callback_service_task", json!({"x": 1})),
    )
    .unwrap();
    assert_eq!(st.data["the_message"], json!({"x": 1}));
    assert!(matches!(&effects[..], [Effect::CallService { .. }]));
}
