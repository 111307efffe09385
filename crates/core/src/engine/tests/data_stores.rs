//! Data stores: SpiffWorkflow's DataStoreReferenceTest models (their test double of a store,
//! `TestDataStore`, run as a `JSONDataStore`), KKV getters and writes, typeahead writes, and
//! what is refused at load.

use super::spiffworkflow::conformance_file;
use super::*;
use crate::bpmn::DataStoreKind;
use std::sync::Arc;

const STORE: &str = "variableTiedToDataStore";

/// A DataStoreReferenceTest model with its test store taken as a JSON store.
fn reference_test_model(path: &str) -> ModelSpec {
    let (name, xml) = conformance_file(path);
    let xml = xml.replace(r#"name="TestDataStore""#, r#"name="JSONDataStore""#);
    build_model(&[(name, xml)], Some("JustDataStoreRef")).unwrap_or_else(|e| panic!("{e}"))
}

fn stores(entries: &[(&str, StoreContent)]) -> DataStoreContents {
    DataStoreContents {
        stores: entries
            .iter()
            .map(|(id, content)| (id.to_string(), content.clone()))
            .collect(),
    }
}

fn start_on(
    m: &ModelSpec,
    process_id: &str,
    contents: DataStoreContents,
) -> (InstanceState, Vec<Effect>) {
    let event = start_event(json!({}));
    let mut context = next_context().with_data_stores(contents);
    super::super::start(m, process_id, event, &mut context).expect("start")
}

fn writes(effects: &[Effect]) -> Vec<(String, Value)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::WriteDataStore { store, value, .. } => Some((store.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

/// testCanInterpretDataStoreReferenceWithInputsAndOutputs: the first task writes "Sue", the
/// last reads it in the same run; its data is then only `x`.
#[test]
fn a_store_written_then_read_in_one_run_gives_the_value() {
    conformance_or_skip!();
    let m = reference_test_model("bpmn/data/data_store.bpmn");
    assert_eq!(m.data_stores[STORE].kind, DataStoreKind::Json);
    let (state, effects) = start_on(
        &m,
        "JustDataStoreRef",
        stores(&[(STORE, StoreContent::Value(json!({})))]),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data), json!({"x": "Sue"}));
    assert_eq!(writes(&effects), [(STORE.to_string(), json!("Sue"))]);
}

/// testSeparateWorkflowInstancesCanShareDataUsingDataStores: one instance writes, another
/// (given what the store now holds) reads.
#[test]
fn separate_instances_share_a_store() {
    conformance_or_skip!();
    let writer = reference_test_model("bpmn/data/data_store_write.bpmn");
    let (state, effects) = start_on(
        &writer,
        "JustDataStoreRef",
        stores(&[(STORE, StoreContent::Value(json!({})))]),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert!(
        state.data.is_empty(),
        "the written value leaves the data: {:?}",
        state.data
    );
    let [(_, written)] = &writes(&effects)[..] else {
        panic!("one write: {effects:?}")
    };
    let reader = reference_test_model("bpmn/data/data_store_read.bpmn");
    let (state, effects) = start_on(
        &reader,
        "JustDataStoreRef",
        stores(&[(STORE, StoreContent::Value(written.clone()))]),
    );
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(Value::Object(state.data), json!({"x": "Sue"}));
    assert!(writes(&effects).is_empty());
}

/// A store the shell did not find fails the reading task with SpiffArena's words.
#[test]
fn reading_a_store_that_does_not_exist_fails_the_task() {
    conformance_or_skip!();
    let reader = reference_test_model("bpmn/data/data_store_read.bpmn");
    let why = StoreContent::Unavailable("no JSONDataStore 'variableTiedToDataStore' exists".into());
    let (state, _) = start_on(&reader, "JustDataStoreRef", stores(&[(STORE, why)]));
    assert_eq!(state.status, InstanceStatus::Error);
    let error = state.error.unwrap();
    assert_eq!(error.element_id, "Activity_1skgyn9");
    assert!(
        error
            .message
            .starts_with("Unable to read from data store 'variableTiedToDataStore'"),
        "{}",
        error.message
    );
}

fn kkv_model(read_script: &str, write_script: &str) -> ModelSpec {
    model_with(
        &format!(
            r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="read"/>
<bpmn:scriptTask id="read"><bpmn:dataInputAssociation id="i"><bpmn:sourceRef>ref</bpmn:sourceRef></bpmn:dataInputAssociation><bpmn:script>{read_script}</bpmn:script></bpmn:scriptTask>
<bpmn:sequenceFlow id="f2" sourceRef="read" targetRef="write"/>
<bpmn:scriptTask id="write"><bpmn:dataOutputAssociation id="o"><bpmn:targetRef>ref</bpmn:targetRef></bpmn:dataOutputAssociation><bpmn:script>{write_script}</bpmn:script></bpmn:scriptTask>
<bpmn:sequenceFlow id="f3" sourceRef="write" targetRef="read_again"/>
<bpmn:scriptTask id="read_again"><bpmn:dataInputAssociation id="i2"><bpmn:sourceRef>ref</bpmn:sourceRef></bpmn:dataInputAssociation><bpmn:script>after = prices("apple", "red")</bpmn:script></bpmn:scriptTask>
<bpmn:sequenceFlow id="f4" sourceRef="read_again" targetRef="e"/><bpmn:endEvent id="e"/>
<bpmn:dataStoreReference id="ref" dataStoreRef="prices"/>"#
        ),
        r#"<bpmn:dataStore id="prices" name="KKVDataStore"/>"#,
    )
}

fn kkv(entries: Value) -> StoreContent {
    StoreContent::Entries(Arc::new(map(entries)))
}

/// A KKV store reads through its getter (one key, or every secondary key under a top-level
/// key; None when absent), is written as a dict of dicts (None deletes), and a later task of
/// the same run sees the write; the getter never reaches the task data.
#[test]
fn a_kkv_store_reads_through_its_getter_and_is_written_as_a_dict_of_dicts() {
    let m = kkv_model(
        r#"one = prices("apple", "green"); under = prices("apple"); missing = prices("pear", "x")"#,
        r#"prices = {"apple": {"red": 3, "green": None}, "plum": None}"#,
    );
    let before = kkv(json!({"apple": {"green": 1, "red": 2}, "plum": {"blue": 5}}));
    let (state, effects) = start_on(&m, "P", stores(&[("prices", before)]));
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        Value::Object(state.data),
        json!({"one": 1, "under": {"green": 1, "red": 2}, "missing": null, "after": 3})
    );
    assert_eq!(
        writes(&effects),
        [(
            "prices".to_string(),
            json!({"apple": {"red": 3, "green": null}, "plum": null})
        )]
    );
}

/// SpiffArena's KKV write checks: a dict, of dicts (or None).
#[test]
fn a_kkv_write_that_is_not_a_dict_of_dicts_fails_the_task() {
    for (script, expected) in [
        (
            "prices = 5",
            "a dictionary is expected as the value for variable 'prices'",
        ),
        (r#"prices = {"apple": 5}"#, r#"for 'prices["apple"]'"#),
    ] {
        let m = kkv_model("x = 1", script);
        let (state, effects) = start_on(&m, "P", stores(&[("prices", kkv(json!({})))]));
        assert_eq!(state.status, InstanceStatus::Error);
        let error = state.error.unwrap();
        assert_eq!(error.element_id, "write");
        assert!(error.message.contains(expected), "{}", error.message);
        assert!(writes(&effects).is_empty());
    }
}

/// A typeahead store is written with categories of `{search_term, result}` items.
#[test]
fn a_typeahead_store_is_written_by_category() {
    let m = model_with(
        r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="write"/>
<bpmn:scriptTask id="write"><bpmn:dataOutputAssociation id="o"><bpmn:targetRef>ref</bpmn:targetRef></bpmn:dataOutputAssociation><bpmn:script>cities = {"city": [{"search_term": "Paris", "result": {"country": "FR"}}]}</bpmn:script></bpmn:scriptTask>
<bpmn:sequenceFlow id="f2" sourceRef="write" targetRef="e"/><bpmn:endEvent id="e"/>
<bpmn:dataStoreReference id="ref" dataStoreRef="cities"/>"#,
        r#"<bpmn:dataStore id="cities" name="TypeaheadDataStore"/>"#,
    );
    let (state, effects) = start_on(&m, "P", DataStoreContents::default());
    assert_eq!(state.status, InstanceStatus::Complete, "{:?}", state.error);
    assert_eq!(
        writes(&effects),
        [(
            "cities".to_string(),
            json!({"city": [{"search_term": "Paris", "result": {"country": "FR"}}]})
        )]
    );
}

fn refusal(body: &str, declarations: &str) -> String {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN_NS}" id="Defs">{declarations}
<bpmn:process id="P" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>{body}
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/></bpmn:process>
</bpmn:definitions>"#
    );
    build_model(&[("t.bpmn".to_string(), xml)], None)
        .expect_err("refused")
        .to_string()
}

const READER: &str = r#"<bpmn:scriptTask id="t"><bpmn:dataInputAssociation id="i"><bpmn:sourceRef>ref</bpmn:sourceRef></bpmn:dataInputAssociation><bpmn:script>x = 1</bpmn:script></bpmn:scriptTask>"#;

/// What SpiffArena cannot run is refused at load, naming the element and the reason.
#[test]
fn stores_that_cannot_be_used_are_refused_at_load() {
    let reference = r#"<bpmn:dataStoreReference id="ref" dataStoreRef="d"/>"#;
    let cases = [
        (
            format!("{READER}{reference}"),
            r#"<bpmn:dataStore id="d" name="RedisDataStore"/>"#,
            "element d: data store name 'RedisDataStore' is no data store kind here",
        ),
        (
            format!("{READER}{reference}"),
            r#"<bpmn:dataStore id="d"/>"#,
            "element d: the data store has no name",
        ),
        (
            format!("{READER}{reference}"),
            r#"<bpmn:dataStore id="d" name="TypeaheadDataStore"/>"#,
            "element t: it reads the data store 'd', a TypeaheadDataStore, which can only be written",
        ),
        (
            format!("{READER}{reference}"),
            "",
            "element t: the data store reference names 'd', which no bpmn:dataStore of the model declares",
        ),
        (
            format!(r#"{READER}<bpmn:dataStoreReference id="ref"/>"#),
            r#"<bpmn:dataStore id="d" name="JSONDataStore"/>"#,
            "element t: data store reference 'ref' has no dataStoreRef",
        ),
    ];
    for (body, declarations, expected) in cases {
        let refused = refusal(&body, declarations);
        assert!(
            refused.contains(expected),
            "{refused}\nexpected: {expected}"
        );
    }
}
