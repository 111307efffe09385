//! The fast path answers exactly as CPython does (checked against the script workers), and
//! everything else is handed to the script host. Python semantics themselves are checked by
//! the conformance suite (tests/scripts.rs).
use super::*;
use serde_json::json;
use std::time::Instant;

fn map(value: Value) -> Map {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn data() -> Map {
    map(json!({
        "order": {"id": 7, "items": [{"sku": "a"}, {"sku": "b"}], "name": "x"},
        "n": 3, "f": 1.5, "s": "abc", "flag": true, "none": null,
        "lst": [1, 2, 3], "empty": [], "big": u64::MAX, "id": 42,
    }))
}

fn cx() -> Context {
    Context::new(
        chrono::DateTime::parse_from_rfc3339("2026-11-26T09:30:15.250Z")
            .unwrap()
            .into(),
        crate::test_support::script_host(),
    )
}

/// The message without the position the workers add (`(line 1, column 5)`).
fn without_position(message: String) -> String {
    match message.rfind(" (line ") {
        Some(at) if message.ends_with(')') => message[..at].to_string(),
        _ => message,
    }
}

fn eval(source: &str, vars: &Map) -> Result<Value, String> {
    let expr = Expression::compile(source).map_err(|e| e.message)?;
    expr.eval(vars, &cx())
        .map_err(|e| without_position(e.message))
}

fn err(message: &str) -> Result<Value, String> {
    Err(message.to_owned())
}

#[test]
fn fast_path_forms_match_cpython() {
    let vars = data();
    let cases: &[(&str, Result<Value, String>)] = &[
        ("n", Ok(json!(3))),
        ("order", Ok(data()["order"].clone())),
        ("order[\"id\"]", Ok(json!(7))),
        ("order['items'][1]['sku']", Ok(json!("b"))),
        (" order [ \"id\" ] ", Ok(json!(7))),
        ("lst[-1]", Ok(json!(3))),
        ("lst[0]", Ok(json!(1))),
        ("s[1]", Ok(json!("b"))),
        ("big", Ok(json!(u64::MAX))),
        ("id", Ok(json!(42))),
        ("\"hi\"", Ok(json!("hi"))),
        ("'it\"s'", Ok(json!("it\"s"))),
        ("42", Ok(json!(42))),
        ("-7", Ok(json!(-7))),
        ("1.25", Ok(json!(1.25))),
        ("True", Ok(json!(true))),
        ("False", Ok(json!(false))),
        ("None", Ok(Value::Null)),
        ("missing", err("NameError: name 'missing' is not defined")),
        ("order[\"nope\"]", err("KeyError: 'nope'")),
        ("order[\"it's\"]", err("KeyError: \"it's\"")),
        ("order[0]", err("KeyError: 0")),
        ("lst[5]", err("IndexError: list index out of range")),
        ("lst[-4]", err("IndexError: list index out of range")),
        ("s[10]", err("IndexError: string index out of range")),
        (
            "lst['a']",
            err("TypeError: list indices must be integers or slices, not str"),
        ),
        (
            "s['a']",
            err("TypeError: string indices must be integers, not 'str'"),
        ),
        (
            "n['a']",
            err("TypeError: 'int' object is not subscriptable"),
        ),
        (
            "f[0]",
            err("TypeError: 'float' object is not subscriptable"),
        ),
        (
            "none[0]",
            err("TypeError: 'NoneType' object is not subscriptable"),
        ),
        (
            "flag[0]",
            err("TypeError: 'bool' object is not subscriptable"),
        ),
    ];
    let host = crate::test_support::script_host();
    for (source, expected) in cases {
        let expr = Expression::compile(source).unwrap();
        assert!(!expr.needs_python(), "{source} should take the fast path");
        assert_eq!(&eval(source, &vars), expected, "fast path: {source}");
        let by_cpython = host
            .eval(source, &vars, &cx())
            .map_err(|e| without_position(e.message));
        assert_eq!(&by_cpython, expected, "CPython: {source}");
    }
}

#[test]
fn other_forms_go_to_python() {
    for source in [
        "a + b",
        "'a\\n'",
        "1e5",
        "1_000",
        "x.y",
        "f'x'",
        "a[b]",
        "'a' 'b'",
        "{'a': 1}",
        "a[1:2]",
        "not a",
        "a # comment",
        "-x",
        "99999999999999999999",
        "café",
    ] {
        let expr = Expression::compile(source).unwrap();
        assert!(expr.needs_python(), "{source} must not take the fast path");
    }
    assert_eq!(eval("n + 1", &data()), Ok(json!(4)));
}

#[test]
fn a_name_python_predefines_is_left_to_python_when_the_data_lacks_it() {
    let vars = map(json!({"lst": [1, 9]}));
    assert_eq!(eval("max(lst)", &vars), Ok(json!(9)));
    assert_eq!(
        eval("json", &vars).map(|v| v["__type__"].clone()),
        Ok(json!("object"))
    );
    // in an expression the data wins over a global (SpiffArena's evaluate)
    assert_eq!(eval("max + 1", &map(json!({"max": 5}))), Ok(json!(6)));
}

#[test]
fn truthiness_follows_python_also_for_tagged_values() {
    let vars = map(json!({
        "none": null, "zero": 0, "empty": [], "n": 3,
        "no_time": {"__type__": "timedelta", "days": 0, "seconds": 0, "microseconds": 0},
        "some_time": {"__type__": "timedelta", "days": 0, "seconds": 1, "microseconds": 0},
        "nothing": {"__type__": "Decimal", "value": "0.00"},
        "when": {"__type__": "datetime", "value": "2024-01-01T00:00:00"},
    }));
    for (source, expected) in [
        ("none", false),
        ("zero", false),
        ("empty", false),
        ("n", true),
        ("no_time", false),
        ("some_time", true),
        ("nothing", false),
        ("when", true),
        ("set()", false),
        ("n == 3", true),
        ("len", true),
    ] {
        let expr = Expression::compile(source).unwrap();
        assert_eq!(expr.eval_bool(&vars, &cx()), Ok(expected), "{source}");
    }
}

#[test]
fn syntax_is_the_hosts_to_judge_even_of_an_empty_expression() {
    let host = crate::test_support::script_host();
    for source in ["", "   "] {
        let expression = Expression::compile(source).unwrap();
        assert!(expression.needs_python(), "{source:?}");
        let error = host.check(source, false).unwrap_err();
        assert!(
            error.message.starts_with("SyntaxError"),
            "{}",
            error.message
        );
    }
    let error = host.check("n +", false).unwrap_err();
    assert!(
        error.message.starts_with("SyntaxError"),
        "{}",
        error.message
    );
    assert!(host.check("del x", true).is_ok());
}

#[test]
fn a_script_replaces_the_data_and_a_failed_one_leaves_it_untouched() {
    let script = Script::compile("del lst\nlabel = '%s-%d' % ('a', 3)").unwrap();
    let mut data = map(json!({"lst": [1], "keep": true}));
    script.run(&mut data, &cx()).unwrap();
    assert_eq!(Value::Object(data), json!({"keep": true, "label": "a-3"}));

    let failing = Script::compile("lst.append(1)\nx = 1\nraise ValueError('boom')").unwrap();
    let mut data = map(json!({"lst": []}));
    let error = failing.run(&mut data, &cx()).unwrap_err();
    assert_eq!(error.message, "ValueError: boom (line 3, column 1)");
    assert_eq!(Value::Object(data), json!({"lst": []}));
}

#[test]
fn compiled_forms_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Expression>();
    assert_send_sync::<Script>();
}

/// `cargo test --release --lib expr::tests::speed -- --ignored --nocapture`
#[test]
#[ignore]
fn speed() {
    let vars = map(json!({"a": 1, "b": "two", "order": {"id": 7}}));
    let mut data = vars.clone();
    let measure = |label: &str, f: &mut dyn FnMut()| {
        let iterations = 5_000;
        let started = Instant::now();
        for _ in 0..iterations {
            f();
        }
        let per_second = f64::from(iterations) / started.elapsed().as_secs_f64();
        println!("{label}: {per_second:.0}/s");
    };
    let fast = Expression::compile("order['id']").unwrap();
    measure("fast path order['id']", &mut || {
        assert_eq!(fast.eval(&vars, &cx()), Ok(json!(7)))
    });
    let dict = Expression::compile("{'a': a, 'b': b}").unwrap();
    measure("CPython {'a': a, 'b': b}", &mut || {
        assert!(dict.eval(&vars, &cx()).is_ok())
    });
    let script = Script::compile("c = a + 1").unwrap();
    measure("CPython script c = a + 1", &mut || {
        script.run(&mut data, &cx()).unwrap()
    });
}

/// Every script and expression error leaves the host with the secrets it was handed redacted,
/// whatever the step that ran it (start, message, callback, timer all run code through these).
#[test]
fn errors_of_code_handed_secrets_name_the_secret_never_its_value() {
    let env = ScriptEnv {
        secrets: [("X".to_string(), "s3cr3t-value".to_string())].into(),
        ..ScriptEnv::default()
    };
    let cx = cx().with_env(Arc::new(env));
    let script = Script::compile("n = int(get_secret('X'))").unwrap();
    let error = script.run(&mut Map::new(), &cx).unwrap_err();
    assert_eq!(
        without_position(error.message),
        "ValueError: invalid literal for int() with base 10: '[secret X]'"
    );
    let expression = Expression::compile("get_secret('X') + 1").unwrap();
    let error = expression.eval(&Map::new(), &cx).unwrap_err();
    assert!(!error.message.contains("s3cr3t"), "{}", error.message);
    let expression = Expression::compile("1 / 0 if get_secret('X') else 0").unwrap();
    let error = expression.eval(&Map::new(), &cx).unwrap_err();
    assert!(
        error.message.starts_with("ZeroDivisionError"),
        "{}",
        error.message
    );
}
