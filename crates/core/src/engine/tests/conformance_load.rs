//! Every BPMN model (and every DMN decision file) of SpiffWorkflow's test suite, loaded
//! alone: each loads, or is refused for the reason listed here. A model that starts loading (or is refused for another reason)
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
    (
        "camunda/data/DMNMultiInstance.bpmn",
        "must specify a loopCardinality or a loopDataInputRef",
    ),
    // A data association naming a data object reference of another process: SpiffWorkflow's
    // parser refuses it too.
    (
        "bpmn/data/data_object_invalid.bpmn",
        "neither a data object reference nor a data store reference",
    ),
    // The suite's test double of a data store (a class its tests register); SpiffArena has no
    // such kind either. `engine::tests::data_stores` runs these models with it as a
    // JSONDataStore, with what DataStoreReferenceTest asserts.
    (
        "bpmn/data/data_store.bpmn",
        "data store name 'TestDataStore' is no data store kind here",
    ),
    (
        "bpmn/data/data_store_read.bpmn",
        "data store name 'TestDataStore' is no data store kind here",
    ),
    (
        "bpmn/data/data_store_write.bpmn",
        "data store name 'TestDataStore' is no data store kind here",
    ),
];

#[test]
fn every_spiffworkflow_model_loads_or_is_refused_for_its_listed_reason() {
    conformance_or_skip!();
    check_suite("bpmn", 116, REFUSED, |name, xml| {
        build_model(&[(name.to_string(), xml)], None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
}

/// The decision files refused at upload, with the reason: what SpiffWorkflow cannot run
/// either (its `VersionTest` asserts those of `*_unsupported` fail to load).
const REFUSED_DECISIONS: &[(&str, &str)] = &[
    // FEEL, not Python: SpiffWorkflow evaluates entries as Python and would fail at run time
    (
        "dmn/data/dmn_version_test/v1_2_unsupported/chapter-11-example.dmn",
        "has neither a name nor a label",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/chapter-11-example.dmn",
        "has neither a name nor a label",
    ),
    (
        "dmn/data/dmn_version_test/v1_2_unsupported/diagram-interchange-dish-example.dmn",
        "SyntaxError",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/diagram-interchange-dish-example.dmn",
        "SyntaxError",
    ),
    // decision services, literal expressions, tables inside business knowledge models, input
    // data only: no decision table a business rule task can run
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/recommended-loan-products.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/loan-info.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_2_unsupported/chapter-11-example-financial.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_2_unsupported/diagram-interchange-decision-service.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/diagram-interchange-decision-service.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_unsupported/financial.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_2_supported/diagram-interchange-decision-with-listed-input-data.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_2_supported/diagram-interchange-shape-with-label-text.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_supported/diagram-interchange-decision-with-listed-input-data.dmn",
        "no decision table",
    ),
    (
        "dmn/data/dmn_version_test/v1_3_supported/diagram-interchange-shape-with-label-text.dmn",
        "no decision table",
    ),
    // `spam= 1`: SpiffWorkflow fails when the rule runs (InvalidBusinessRuleTaskParserTest);
    // the upload's syntax check finds it first (a warning: the model is saved, the rule errs)
    ("camunda/data/dmn/invalid_decision.dmn", "SyntaxError"),
];

/// Every decision file of the suite, checked as an upload checks it: it parses, and each
/// rule's Python compiles.
#[test]
fn every_spiffworkflow_decision_loads_or_is_refused_for_its_listed_reason() {
    conformance_or_skip!();
    let host = crate::test_support::script_host();
    check_suite("dmn", 40, REFUSED_DECISIONS, |name, xml| {
        let decisions = crate::dmn::parse_dmn_file(name, &xml).map_err(|e| e.to_string())?;
        decisions.iter().try_for_each(|decision| {
            decision
                .python_sources()
                .into_iter()
                .try_for_each(|(what, source)| {
                    host.check(source, false)
                        .map_err(|e| format!("{}: {what}: {}", decision.id, e.message))
                })
        })
    });
}

/// Loads every file of the suite with this extension (at least `minimum` of them): each
/// must load, or be refused for its listed reason (a fragment of the error).
fn check_suite(
    extension: &str,
    minimum: usize,
    refused: &[(&str, &str)],
    load: impl Fn(&str, String) -> Result<(), String>,
) {
    let root = crate::test_support::conformance_root().join("spiffworkflow-tests");
    let mut files = files_ending(&root, extension);
    files.sort();
    assert!(
        files.len() >= minimum,
        "{}: {} .{extension} files found",
        root.display(),
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
        let expected = refused
            .iter()
            .find(|(file, _)| *file == name)
            .map(|(_, reason)| *reason);
        match (load(&name, xml), expected) {
            (Ok(()), None) => {}
            (Err(e), Some(reason)) if e.contains(reason) => {}
            (Ok(()), Some(reason)) => {
                surprises.push(format!("{name} loads (listed as refused: {reason})"))
            }
            (Err(e), _) => surprises.push(format!("{name}: {e}")),
        }
    }
    assert!(surprises.is_empty(), "{}", surprises.join("\n"));
}

fn files_ending(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = vec![];
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_ending(&path, extension));
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
    found
}
