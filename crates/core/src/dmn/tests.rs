//! Decision tables: SpiffWorkflow's own DMN tests (`dmn/` of its suite) say what each table
//! decides; hit policies beyond SpiffWorkflow's follow DMN 1.3.
use super::parse::entry_test;
use super::*;
use crate::expr::{Context, Map};
use crate::test_support::conformance_file;
use serde_json::{json, Value};

fn context() -> Context {
    Context::new(chrono::Utc::now(), crate::test_support::script_host())
}

fn decision_in(path: &str) -> Decision {
    let (name, xml) = conformance_file(path);
    let mut decisions = parse_dmn_file(&name, &xml).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decisions.len(), 1, "{path}");
    decisions.remove(0)
}

fn data(value: Value) -> Map {
    value.as_object().expect("an object").clone()
}

fn run(decision: &Decision, vars: Value) -> Result<Evaluation, crate::expr::ExprError> {
    evaluate(decision, &data(vars), &context())
}

/// The description of the first rule that matched (SpiffWorkflow's `DecisionRunner.decide`).
fn decided(decision: &Decision, vars: Value) -> String {
    let evaluation = run(decision, vars).unwrap_or_else(|e| panic!("{e}"));
    let first = evaluation.matched.first().expect("a rule matched");
    decision.table.rules[*first]
        .description
        .clone()
        .unwrap_or_default()
}

fn python_engine(file: &str) -> Decision {
    decision_in(&format!("dmn/python_engine/data/{file}"))
}

#[test]
fn entries_become_the_python_spiffworkflow_runs() {
    assert_eq!(entry_test("Gender", "\"m\""), "(Gender) == (\"m\")");
    assert_eq!(entry_test("Age", "< 25"), "(Age) < 25");
    assert_eq!(entry_test("Age", ">= 25"), "(Age) >= 25");
    assert_eq!(entry_test("x", "== 1"), "(x) == 1");
    assert_eq!(entry_test("Age", "100 <= ? < 110"), "100 <= (Age) < 110");
    assert_eq!(entry_test("a", "\"why?\" == ?"), "\"why?\" == (a)");
    assert_eq!(entry_test("a", "not in [1, 2]"), "(a) not in [1, 2]");
    assert_eq!(entry_test("a", "in (1, 2)"), "(a) in (1, 2)");
    assert_eq!(entry_test("a", "is None"), "(a) is None");
    assert_eq!(entry_test("a", "not b"), "(a) == (not b)");
    assert_eq!(entry_test("a", "inside"), "(a) == (inside)");
    assert_eq!(entry_test("a", "[1, 2]"), "(a) == ([1, 2])");
    assert_eq!(entry_test("a", ".5"), "(a) == (.5)");
    assert_eq!(entry_test("a", ".upper() == 'X'"), "(a) .upper() == 'X'");
}

#[test]
fn spiffworkflow_bool_string_and_integer_tables() {
    conformance_or_skip!();
    let bools = python_engine("bool_decision.dmn");
    assert_eq!(decided(&bools, json!({"input": true})), "Y Row Annotation");
    assert_eq!(decided(&bools, json!({"input": false})), "N Row Annotation");
    assert_eq!(
        decided(&bools, json!({"input": null})),
        "ELSE Row Annotation"
    );

    let strings = python_engine("string_decision.dmn");
    for (gender, row) in [("m", "m"), ("f", "f"), ("y", "NOT x"), ("x", "ELSE")] {
        let expected = format!("{row} Row Annotation");
        assert_eq!(decided(&strings, json!({"Gender": gender})), expected);
    }

    let integers = python_engine("integer_decision_comparison.dmn");
    assert_eq!(decided(&integers, json!({"Age": 30})), "30 Row Annotation");
    assert_eq!(decided(&integers, json!({"Age": 24})), "L Row Annotation");
    assert_eq!(decided(&integers, json!({"Age": 25})), "H Row Annotation");

    let both = python_engine("string_integer_decision.dmn");
    for (gender, age, row) in [
        ("m", 30, "m30"),
        ("m", 24, "mL"),
        ("m", 25, "mH"),
        ("f", -1, "fL"),
        ("x", 0, "ELSE"),
    ] {
        let vars = json!({"Gender": gender, "Age": age});
        assert_eq!(decided(&both, vars), format!("{row} Row Annotation"));
    }
}

/// Ages, and whether each falls in the range.
type RangeCase<'a> = (&'a str, &'a str, [(i64, bool); 4]);

#[test]
fn spiffworkflow_integer_ranges() {
    conformance_or_skip!();
    let cases: [RangeCase; 4] = [
        (
            "inclusive",
            "100-110 Inclusive",
            [(100, true), (99, false), (110, true), (111, false)],
        ),
        (
            "exclusive",
            "100-110 Exclusive",
            [(100, false), (101, true), (110, false), (109, true)],
        ),
        (
            "excl_inclusive",
            "100-110 ExclInclusive",
            [(100, false), (101, true), (110, true), (111, false)],
        ),
        (
            "incl_exclusive",
            "100-110 InclExclusive",
            [(100, true), (99, false), (110, false), (109, true)],
        ),
    ];
    for (file, inside, ages) in cases {
        let decision = python_engine(&format!("integer_decision_range_{file}.dmn"));
        for (age, in_range) in ages {
            let expected = if in_range {
                format!("{inside} Annotation")
            } else {
                "ELSE Row Annotation".to_string()
            };
            assert_eq!(
                decided(&decision, json!({"Age": age})),
                expected,
                "{file} {age}"
            );
        }
    }
}

#[test]
fn spiffworkflow_lists_dicts_and_decimals() {
    conformance_or_skip!();
    let lists = python_engine("list_decision.dmn");
    let peanuts = json!({"allergies": ["PEANUTS", "SPAM"]});
    assert_eq!(decided(&lists, peanuts), "They are allergic to peanuts");
    let spam = json!({"allergies": ["SPAM", "SPAM"]});
    assert_eq!(decided(&lists, spam), "They are not allergic to peanuts");

    let dicts = python_engine("dict_decision.dmn");
    let peanuts =
        json!({"allergies": {"PEANUTS": {"delicious": true}, "SPAM": {"delicious": false}}});
    assert_eq!(decided(&dicts, peanuts), "They are allergic to peanuts");
    let spam = json!({"allergies": {"SpAm": {"delicious": false}, "SPAM": {"delicious": false}}});
    assert_eq!(decided(&dicts, spam), "They are not allergic to peanuts");

    // Decimal inputs (tagged across the pipe) against float entries, as in LongDoubleComparisonTest
    let decimals = python_engine("long_or_double_decision_comparison.dmn");
    let age = |value: &str| json!({"Age": {"__type__": "Decimal", "value": value}});
    assert_eq!(decided(&decimals, age("30.5")), "30.5 Row Annotation");
    assert_eq!(decided(&decimals, age("25.3")), "L Row Annotation");
    assert_eq!(decided(&decimals, age("25.4")), "H Row Annotation");
}

#[test]
fn spiffworkflow_dash_and_collect_and_unique() {
    conformance_or_skip!();
    // ParserTest: `-` matches anything
    let dash = decision_in("dmn/data/input_dash.dmn");
    let evaluation = run(&dash, json!({"a": ""})).unwrap();
    assert_eq!(
        Value::Object(evaluation.result),
        json!({"b": "anything goes"})
    );

    // HitPolicyTest
    let unique = decision_in("dmn/data/unique_hit.dmn");
    assert_eq!(unique.table.hit_policy, HitPolicy::Unique);
    let evaluation = run(&unique, json!({"name": "Larry"})).unwrap();
    assert_eq!(evaluation.result["result"], json!(1));

    let collect = decision_in("dmn/data/collect_hit.dmn");
    assert_eq!(collect.table.hit_policy, HitPolicy::Collect);
    let stooges = run(&collect, json!({"type": "stooge"})).unwrap();
    assert_eq!(stooges.result["name"].as_array().unwrap().len(), 4);
    let farmers = run(&collect, json!({"type": "farmer"})).unwrap();
    assert_eq!(farmers.result["name"], json!(["Elmer Fudd"]));
}

#[test]
fn a_failing_input_expression_names_the_row_and_python_error() {
    conformance_or_skip!();
    // InvalidBusinessRuleNameErrorTest: `sparm` is not defined, `spam` is
    let decision = python_engine("invalid_decision_name_error.dmn");
    let error = run(&decision, json!({"spam": 1})).unwrap_err();
    assert!(error.message.contains("NameError"), "{}", error.message);
    assert!(error.message.contains("row 1"), "{}", error.message);
    assert!(
        error.message.contains("Did you mean 'spam'"),
        "{}",
        error.message
    );
}

#[test]
fn a_near_miss_name_lists_the_close_ones() {
    conformance_or_skip!();
    // NearMissNameTest
    let decision = python_engine("exclusive.dmn");
    let vars = json!({
        "Exclusive": [{"ExclusiveSpaceRoomID": "121"}],
        "eXclusive": [{"ExclusiveSpaceRoomID": "121"}],
        "EXCLUSIVE": [{"ExclusiveSpaceRoomID": "121"}],
        "personnel": [{"PersonnelType": "Faculty", "label": "Steven K Funkhouser (sf4d)", "value": "sf4d"}],
        "shared": []
    });
    let error = run(&decision, vars).unwrap_err();
    assert!(
        error
            .message
            .contains("['Exclusive', 'eXclusive', 'EXCLUSIVE']"),
        "{}",
        error.message
    );
}

#[test]
fn dmn_versions_load_as_spiffworkflow_loads_them() {
    conformance_or_skip!();
    for file in [
        "dmn_version_20151101_test.dmn",
        "dmn_version_20191111_test.dmn",
    ] {
        decision_in(&format!("dmn/data/dmn_version_test/{file}"));
    }
    // a decision service, a file with only input data: nothing a business rule task can run
    for file in [
        "v1_2_unsupported/diagram-interchange-decision-service.dmn",
        "v1_3_unsupported/diagram-interchange-decision-service.dmn",
        "v1_3_unsupported/financial.dmn",
        "v1_2_unsupported/chapter-11-example-financial.dmn",
    ] {
        let (name, xml) = conformance_file(&format!("dmn/data/dmn_version_test/{file}"));
        let error = parse_dmn_file(&name, &xml).unwrap_err();
        assert!(
            error.reason.contains("no decision table"),
            "{file}: {error}"
        );
    }
}

/// A table of one input `x` and one output `out`, rules as (entry, output, more outputs).
fn table(hit_policy: &str, extra: &str, outputs: &str, rules: &[(&str, &[&str])]) -> Decision {
    let output_count = rules.first().map_or(1, |r| r.1.len());
    let output_elements: String = if outputs.is_empty() {
        (0..output_count)
            .map(|i| format!(r#"<output id="o{i}" name="out{i}"/>"#))
            .collect()
    } else {
        outputs.to_string()
    };
    let rule_elements: String = rules
        .iter()
        .enumerate()
        .map(|(i, (entry, outs))| {
            let outs: String = outs
                .iter()
                .map(|o| format!("<outputEntry><text>{o}</text></outputEntry>"))
                .collect();
            format!(r#"<rule id="r{i}"><inputEntry><text>{entry}</text></inputEntry>{outs}</rule>"#)
        })
        .collect();
    let xml = format!(
        r#"<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/" id="d">
  <decision id="D"><decisionTable id="t" hitPolicy="{hit_policy}" {extra}>
    <input id="i"><inputExpression><text>x</text></inputExpression></input>
    {output_elements}{rule_elements}
  </decisionTable></decision></definitions>"#
    );
    parse_dmn_file("t.dmn", &xml)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0)
}

fn result(decision: &Decision, x: i64) -> Value {
    Value::Object(run(decision, json!({"x": x})).unwrap().result)
}

#[test]
fn single_hit_policies() {
    let rules: &[(&str, &[&str])] = &[
        ("&lt; 10", &["\"low\""]),
        ("&lt; 100", &["\"medium\""]),
        ("-", &["\"high\""]),
    ];
    for policy in ["UNIQUE", "FIRST"] {
        let decision = table(policy, "", "", rules);
        assert_eq!(result(&decision, 5), json!({"out0": "low"}), "{policy}");
        assert_eq!(result(&decision, 50), json!({"out0": "medium"}), "{policy}");
        assert_eq!(result(&decision, 500), json!({"out0": "high"}), "{policy}");
    }
    // PRIORITY: the output values list ranks the matches
    let ranked = r#"<output id="o" name="out0"><outputValues><text>"high","medium","low"</text></outputValues></output>"#;
    let decision = table("PRIORITY", "", ranked, rules);
    assert_eq!(result(&decision, 5), json!({"out0": "high"}));
    let evaluation = run(&decision, json!({"x": 5})).unwrap();
    assert_eq!(evaluation.matched, vec![0, 1, 2]);
    assert_eq!(evaluation.selected, vec![2]);
    // ANY: matches must agree
    let agreeing: &[(&str, &[&str])] = &[("&lt; 10", &["1"]), ("&lt; 20", &["1"]), ("-", &["2"])];
    let decision = table("ANY", "", "", &agreeing[..2]);
    assert_eq!(result(&decision, 5), json!({"out0": 1}));
    let decision = table("ANY", "", "", agreeing);
    let error = run(&decision, json!({"x": 5})).unwrap_err();
    assert!(error.message.contains("rows 1 and 3"), "{}", error.message);
    // nothing matched: nothing written
    let decision = table("FIRST", "", "", &rules[..1]);
    assert_eq!(result(&decision, 50), json!({}));
}

#[test]
fn multiple_hit_policies() {
    let rules: &[(&str, &[&str])] = &[
        ("&gt; 1", &["\"b\"", "2"]),
        ("&gt; 2", &["\"a\"", "3"]),
        ("&gt; 100", &["\"c\"", "4"]),
    ];
    for policy in ["COLLECT", "RULE ORDER"] {
        let decision = table(policy, "", "", rules);
        assert_eq!(
            result(&decision, 5),
            json!({"out0": ["b", "a"], "out1": [2, 3]}),
            "{policy}"
        );
        assert_eq!(result(&decision, 0), json!({}), "{policy}");
    }
    let ranked = r#"<output id="o0" name="out0"><outputValues><text>"a", "b", "c"</text></outputValues></output><output id="o1" name="out1"/>"#;
    let decision = table("OUTPUT ORDER", "", ranked, rules);
    assert_eq!(
        result(&decision, 5),
        json!({"out0": ["a", "b"], "out1": [3, 2]})
    );
}

#[test]
fn collect_aggregations() {
    let rules: &[(&str, &[&str])] = &[
        ("&gt; 1", &["2"]),
        ("&gt; 2", &["3.5"]),
        ("&gt; 3", &["-1"]),
    ];
    let cases = [
        ("SUM", json!(4.5)),
        ("MIN", json!(-1)),
        ("MAX", json!(3.5)),
        ("COUNT", json!(3)),
    ];
    for (aggregation, expected) in cases {
        let decision = table(
            "COLLECT",
            &format!("aggregation=\"{aggregation}\""),
            "",
            rules,
        );
        assert_eq!(
            result(&decision, 5),
            json!({"out0": expected}),
            "{aggregation}"
        );
    }
    let integers: &[(&str, &[&str])] = &[("&gt; 1", &["2"]), ("&gt; 2", &["3"])];
    let decision = table("COLLECT", "aggregation=\"SUM\"", "", integers);
    assert_eq!(result(&decision, 5), json!({"out0": 5}));
    assert_eq!(result(&decision, 0), json!({}));
    let decision = table("COLLECT", "aggregation=\"COUNT\"", "", integers);
    assert_eq!(result(&decision, 0), json!({"out0": 0}));
    let strings: &[(&str, &[&str])] = &[("-", &["\"x\""])];
    let decision = table("COLLECT", "aggregation=\"SUM\"", "", strings);
    let error = run(&decision, json!({"x": 1})).unwrap_err();
    assert!(
        error.message.contains("SUM of output 'out0'"),
        "{}",
        error.message
    );
}

#[test]
fn unique_stops_at_the_first_match_before_a_failing_rule() {
    let rules: &[(&str, &[&str])] = &[("1", &["\"one\""]), ("? . missing", &["\"never\""])];
    let decision = table("UNIQUE", "", "", rules);
    assert_eq!(result(&decision, 1), json!({"out0": "one"}));
    let error = run(&decision, json!({"x": 2})).unwrap_err();
    assert!(error.message.contains("row 2"), "{}", error.message);
}

#[test]
fn dotted_output_names_nest() {
    let outputs = r#"<output id="o0" name="item.y"/><output id="o1" name="item.z.w"/>"#;
    let decision = table("FIRST", "", outputs, &[("-", &["\"D\"", "1"])]);
    assert_eq!(
        result(&decision, 1),
        json!({"item": {"y": "D", "z": {"w": 1}}})
    );
}

#[test]
fn dotted_output_names_nest_to_the_limit_and_no_deeper() {
    let name = |levels: usize| vec!["a"; levels].join(".");
    let outputs = format!(r#"<output id="o0" name="{}"/>"#, name(64));
    let decision = table("FIRST", "", &outputs, &[("-", &["1"])]);
    let mut value = &result(&decision, 1);
    for _ in 0..63 {
        value = &value["a"];
    }
    assert_eq!(value, &json!({"a": 1}));
    // one level more is refused when the file is read; 100,000 levels overflowed the stack
    // when a rule matched
    for levels in [65, 100_000] {
        let xml = format!(
            r#"<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/"><decision id="D"><decisionTable><input id="i"><inputExpression><text>x</text></inputExpression></input><output id="o" name="{}"/></decisionTable></decision></definitions>"#,
            name(levels)
        );
        let error = parse_dmn_file("t.dmn", &xml).unwrap_err();
        assert!(
            error.reason.contains("nests more than 64 levels"),
            "{error}"
        );
    }
}

#[test]
fn malformed_tables_are_refused_with_the_decision_and_reason() {
    let refused = |table: &str, expected: &str| {
        let xml = format!(
            r#"<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/"><decision id="D">{table}</decision></definitions>"#
        );
        let error = parse_dmn_file("t.dmn", &xml).unwrap_err();
        assert_eq!(error.element_id.as_deref(), Some("D"));
        assert!(error.reason.contains(expected), "{error}");
    };
    let input = r#"<input id="i"><inputExpression><text>x</text></inputExpression></input>"#;
    refused(
        &format!(
            r#"<decisionTable hitPolicy="SOMETIMES">{input}<output id="o" name="o"/></decisionTable>"#
        ),
        "unknown hit policy 'SOMETIMES'",
    );
    refused(
        &format!(
            r#"<decisionTable hitPolicy="FIRST" aggregation="SUM">{input}<output id="o" name="o"/></decisionTable>"#
        ),
        "an aggregation needs the hit policy COLLECT",
    );
    refused(
        &format!(
            r#"<decisionTable>{input}<output id="o" name="o"/><rule id="r"><outputEntry><text>1</text></outputEntry></rule></decisionTable>"#
        ),
        "row 1 has 0 input and 1 output entries",
    );
    refused(
        &format!(r#"<decisionTable>{input}</decisionTable>"#),
        "no output",
    );
    let error = parse_dmn_file("t.dmn", "<definitions xmlns=\"urn:x\"/>").unwrap_err();
    assert!(error.reason.contains("not a DMN file"), "{error}");
}
