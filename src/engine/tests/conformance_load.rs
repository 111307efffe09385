//! Every BPMN model of SpiffWorkflow's test suite, loaded alone: each loads, or is refused
//! for the reason listed here. A model that starts loading (or is refused for another reason)
//! fails the test, so the list stays the measured state of compatibility.

use super::*;
use std::path::{Path, PathBuf};

/// The models refused at load, with the reason (a fragment of the error) and why that is right.
const REFUSED: &[(&str, &str)] = &[
    // Invalid models SpiffWorkflow's parser refuses too (its tests assert the refusal).
    (
        "bpmn/data/invalid_cancel.bpmn",
        "a cancel boundary event attaches to a transaction",
    ),
    (
        "bpmn/data/parallel_multiinstance_invalid.bpmn",
        "exactly one of loopCardinality and loopDataInputRef",
    ),
    (
        "bpmn/data/standard_loop_invalid.bpmn",
        "needs a loopCondition or a loopMaximum",
    ),
    // A process that calls itself unconditionally (SpiffWorkflow's ProcessDependencyTest only
    // lists its dependencies; run, it would recurse for ever).
    (
        "bpmn/data/call_activity_nested/call_activity_level_3.bpmn",
        "process 'Level3' calls itself",
    ),
    // A generic service task for SpiffWorkflow's own script engine: ours call connectors,
    // named by spiffworkflow:serviceTaskOperator.
    (
        "bpmn/data/service_task.bpmn",
        "without spiffworkflow:serviceTaskOperator",
    ),
    // The Camunda dialect's multi-instance attributes (camunda:collection): not SpiffArena's.
    (
        "camunda/data/parallel_multiinstance_collection.bpmn",
        "must specify a loopCardinality or a loopDataInputRef",
    ),
    // A data association naming a data object reference of another process: SpiffWorkflow's
    // parser refuses it too.
    (
        "bpmn/data/data_object_invalid.bpmn",
        "neither a data object reference nor a data store reference",
    ),
    // Data stores: issue 13.
    (
        "bpmn/data/data_store.bpmn",
        "data stores are not supported yet",
    ),
    (
        "bpmn/data/data_store_read.bpmn",
        "data stores are not supported yet",
    ),
    (
        "bpmn/data/data_store_write.bpmn",
        "data stores are not supported yet",
    ),
    // Business rule (DMN) tasks: issue 13.
    (
        "bpmn/data/call_activity_nested/call_activity_nested.bpmn",
        "business rule (DMN)",
    ),
    ("camunda/data/DMNMultiInstance.bpmn", "business rule (DMN)"),
    (
        "camunda/data/ExclusiveGatewayIfElseAndDecision.bpmn",
        "business rule (DMN)",
    ),
    (
        "camunda/data/invalid/InvalidDecision.bpmn",
        "business rule (DMN)",
    ),
    ("spiff/data/business_rule_task.bpmn", "business rule (DMN)"),
];

#[test]
fn every_spiffworkflow_model_loads_or_is_refused_for_its_listed_reason() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/spiffworkflow-tests");
    let mut files = bpmn_files(&root);
    files.sort();
    assert!(
        files.len() >= 116,
        "../shared must be beside the checkout: {} models found",
        files.len()
    );
    let mut surprises = vec![];
    for path in files {
        let name = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let xml = std::fs::read_to_string(&path).unwrap();
        let expected = REFUSED
            .iter()
            .find(|(file, _)| *file == name)
            .map(|(_, reason)| *reason);
        match (build_model(&[(name.clone(), xml)], None), expected) {
            (Ok(_), None) => {}
            (Err(e), Some(reason)) if e.to_string().contains(reason) => {}
            (Ok(_), Some(reason)) => {
                surprises.push(format!("{name} loads (listed as refused: {reason})"))
            }
            (Err(e), _) => surprises.push(format!("{name}: {e}")),
        }
    }
    assert!(surprises.is_empty(), "{}", surprises.join("\n"));
}

fn bpmn_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![];
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(bpmn_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "bpmn") {
            found.push(path);
        }
    }
    found
}
