//! Script conformance: every case of `tests/scripts/cases.json` (scripts and expressions from
//! the conformance models and hand-written ones, with what SpiffWorkflow itself answered, see
//! tests/scripts/README.md) run through our script workers, which must answer the same: the
//! same task data or value, or the same exception class and message.
//!
//! The few deliberate differences are listed in `DEVIATIONS` with their reason, and must still
//! differ (so the list cannot go stale).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use workflow_backend::python::{PoolSettings, WorkerPool, DEFAULT_PACKAGES};

/// Cases where we answer differently from SpiffArena on purpose.
const DUNDER: &str = "dunder attributes are refused before the code runs (SpiffArena runs \
                      plain exec, so `().__class__.__bases__` reaches object's subclasses)";
const WRAPPER_BUG: &str = "SpiffWorkflow's error wrapper crashes on an exception whose first \
                           argument is not a str and reports TypeError; we report the exception";
const DEVIATIONS: &[(&str, &str)] = &[
    ("intro-class-bases", DUNDER),
    ("intro-class-name", DUNDER),
    ("intro-base-name", DUNDER),
    ("intro-subclasses-nonempty", DUNDER),
    ("intro-func-globals", DUNDER),
    ("allowed-class-bases-script", DUNDER),
    ("err-key-int", WRAPPER_BUG),
    ("err-raise-non-str-arg", WRAPPER_BUG),
];

fn pool() -> WorkerPool {
    // two cases read the local time zone; SpiffArena's servers run in UTC
    std::env::set_var("TZ", "UTC");
    WorkerPool::start(PoolSettings {
        python: "python3".into(),
        packages: DEFAULT_PACKAGES.into(),
        workers: 2,
        time_limit: Duration::from_secs(10),
        memory_limit_mb: 256,
        queue_timeout: Duration::from_secs(60),
    })
    .expect("the script worker starts (python3 and the packages build.rs installs)")
}

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/cases.json");
    let text = std::fs::read_to_string(path).expect("tests/scripts/cases.json");
    let all: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    all["cases"].as_array().expect("a cases array").clone()
}

/// Python's type name of an answer value (tagged values carry theirs).
fn type_name(value: &Value) -> Value {
    let name = match value.get("__type__").and_then(Value::as_str) {
        Some("object") => value["python_type"].as_str().unwrap_or("object"),
        Some(tag) => tag,
        None => match value {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_f64() => "float",
            Value::Number(_) => "int",
            Value::String(_) => "str",
            Value::Array(_) => "list",
            Value::Object(_) => "dict",
        },
    };
    json!(name)
}

/// What our worker answered, in the shape of the case's `expected`.
fn our_answer(pool: &WorkerPool, case: &Value) -> Value {
    let script = case["kind"] == "script";
    let request = json!({
        "op": if script { "exec" } else { "eval" },
        "source": case["source"],
        "data": case.get("data").cloned().unwrap_or(json!({})),
    });
    let answer = match pool.call(&request) {
        Ok(answer) => answer,
        Err(e) => return json!({"pool_error": format!("{e:?}")}),
    };
    if answer["ok"] != json!(true) {
        let error = &answer["error"];
        return json!({"error": {"class": error["class"], "message": error["message"]}});
    }
    let type_only = case["expected"].get("type_only").is_some();
    match (script, type_only) {
        (true, false) => json!({"data": answer["data"]}),
        (false, false) => json!({"value": answer["value"]}),
        (true, true) => {
            let types: BTreeMap<String, Value> = answer["data"]
                .as_object()
                .map(|data| {
                    data.iter()
                        .map(|(k, v)| (k.clone(), type_name(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({"type_only": types})
        }
        (false, true) => json!({"type_only": type_name(&answer["value"])}),
    }
}

#[test]
fn every_case_answers_as_spiffworkflow_does() {
    let pool = pool();
    let cases = cases();
    assert!(cases.len() >= 200, "only {} cases", cases.len());
    let mut mismatches = Vec::new();
    let mut deviations_seen = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap_or("?");
        let ours = our_answer(&pool, case);
        let same = ours == case["expected"];
        match (same, DEVIATIONS.iter().find(|(d, _)| *d == id)) {
            (true, None) => {}
            (false, Some(_)) => deviations_seen.push(id.to_string()),
            (true, Some((_, why))) => mismatches.push(format!(
                "{id}: listed as a deviation ({why}) but answers as SpiffWorkflow now"
            )),
            (false, None) => mismatches.push(format!(
                "{id} ({}):\n    source:   {}\n    expected: {}\n    ours:     {}",
                case["origin"].as_str().unwrap_or_default(),
                case["source"],
                case["expected"],
                ours
            )),
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ from SpiffWorkflow:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
    assert_eq!(deviations_seen.len(), DEVIATIONS.len());
}

/// Every BPMN file under `../shared/conformance` (SpiffWorkflow's test models and SpiffArena's
/// fixtures), loaded alone: no refusal may be about Python any more (the parser no longer
/// compiles it), and every script and expression of the models that load must compile as
/// CPython compiles it, as an upload checks.
#[test]
fn conformance_models_are_never_refused_for_their_python() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    assert!(root.is_dir(), "{} is missing", root.display());
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "bpmn") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 100, "only {} models", files.len());
    let pool = pool();
    let (mut loaded, mut python_refusals, mut compile_errors) = (0, Vec::new(), Vec::new());
    for path in &files {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let xml = std::fs::read_to_string(path).unwrap();
        let model = match workflow_backend::bpmn::build_model(&[(name.clone(), xml)], None) {
            Ok(model) => model,
            Err(e) => {
                if std::env::var_os("SHOW_REFUSED").is_some() {
                    println!("refused {e}");
                }
                if e.reason.contains("Python") {
                    python_refusals.push(format!("{name}: {e}"));
                }
                continue;
            }
        };
        loaded += 1;
        for source in model.python_sources().iter().filter(|s| s.needs_python) {
            let mode = if source.is_script { "exec" } else { "eval" };
            let answer = pool
                .call(&json!({"op": "check", "source": source.source, "mode": mode}))
                .unwrap();
            if answer["ok"] != json!(true) {
                compile_errors.push(format!(
                    "{name} {} {}: {}",
                    source.element_id, source.what, answer["error"]
                ));
            }
        }
    }
    println!("{loaded} of {} conformance models load alone", files.len());
    assert!(python_refusals.is_empty(), "{python_refusals:#?}");
    assert!(compile_errors.is_empty(), "{compile_errors:#?}");
}
