use super::convert::{to_json, to_monty};
use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

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

/// A fixed time: evaluations read no clock of their own.
fn cx() -> Context {
    Context::at(
        chrono::DateTime::parse_from_rfc3339("2026-11-26T09:30:15.250Z")
            .unwrap()
            .into(),
    )
}

fn eval(source: &str, vars: &Map) -> Result<Value, String> {
    let expr = Expression::compile(source).map_err(|e| e.message)?;
    expr.eval(vars, &cx()).map_err(|e| e.message)
}

fn err(message: &str) -> Result<Value, String> {
    Err(message.to_owned())
}

#[test]
fn fast_path_forms_match_python_via_monty() {
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
    // Where monty's message differs from CPython's (the fast path follows CPython).
    let monty_differs = [
        (
            "lst['a']",
            "TypeError: list indices must be integers, not 'str'",
        ),
        (
            "s['a']",
            "TypeError: str indices must be integers, not 'str'",
        ),
    ];
    for (source, expected) in cases {
        let expr = Expression::compile(source).unwrap();
        assert!(expr.fast.is_some(), "{source} should take the fast path");
        assert_eq!(&eval(source, &vars), expected, "fast path: {source}");
        let via_monty = expr
            .program
            .run(&vars, &cx())
            .and_then(to_json)
            .map_err(|e| e.message);
        match monty_differs.iter().find(|(s, _)| s == source) {
            Some((_, message)) => assert_eq!(via_monty, err(message), "monty: {source}"),
            None => assert_eq!(&via_monty, expected, "monty: {source}"),
        }
    }
}

#[test]
fn other_forms_go_to_monty() {
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
        assert!(expr.fast.is_none(), "{source} must not take the fast path");
    }
}

#[test]
fn monty_expressions() {
    let vars = data();
    let cases: &[(&str, Result<Value, String>)] = &[
        ("n * 2 + 1", Ok(json!(7))),
        ("7 // 2", Ok(json!(3))),
        ("7 / 2", Ok(json!(3.5))),
        ("0.1 + 0.2", Ok(json!(0.30000000000000004))),
        ("f * 2", Ok(json!(3.0))),
        ("n > 2 and s == 'abc'", Ok(json!(true))),
        ("n < 2 or s != 'abc'", Ok(json!(false))),
        ("none or 'default'", Ok(json!("default"))),
        ("1 < n <= 3", Ok(json!(true))),
        ("f'{s}-{n}'", Ok(json!("abc-3"))),
        (
            "{'a': n, 'b': [s, flag, none]}",
            Ok(json!({"a": 3, "b": ["abc", true, null]})),
        ),
        (
            "{\n\"a\": n,\n\"b\": s,\n}",
            Ok(json!({"a": 3, "b": "abc"})),
        ),
        ("[x * 2 for x in lst]", Ok(json!([2, 4, 6]))),
        (
            "{k: v for k, v in order.items() if k == 'id'}",
            Ok(json!({"id": 7})),
        ),
        ("len(lst) + len(s)", Ok(json!(6))),
        ("sum(lst)", Ok(json!(6))),
        ("max(lst)", Ok(json!(3))),
        ("s.upper() + s.replace('b', 'x')", Ok(json!("ABCaxc"))),
        ("'b' in s and 4 not in lst", Ok(json!(true))),
        ("order['items'][0]['sku'] + s", Ok(json!("aabc"))),
        ("n if flag else 0", Ok(json!(3))),
        ("(1, 'a')", Ok(json!([1, "a"]))),
        ("{2, 2}", Ok(json!([2]))),
        ("id + 1", Ok(json!(43))),
        ("2 ** 70 // 2 ** 60", Ok(json!(1024))),
        ("big - 1", Ok(json!(u64::MAX - 1))),
        ("-(2 ** 63)", Ok(json!(i64::MIN))),
        (
            "{2: 'a', None: 'b', 1.5: 'c', False: 'd'}",
            Ok(json!({"2": "a", "null": "b", "1.5": "c", "false": "d"})),
        ),
        (
            "2 ** 70",
            err("OverflowError: int too large for a JSON number: 1180591620717411303424"),
        ),
        (
            "float('nan')",
            err("ValueError: Out of range float values are not JSON compliant: NaN"),
        ),
        (
            "{(1, 2): 3}",
            err("TypeError: keys must be str, int, float, bool or None, not tuple"),
        ),
        (
            "len",
            err("TypeError: Object of type builtin_function_or_method is not JSON serializable"),
        ),
        (
            "missing + 1",
            err("NameError: name 'missing' is not defined"),
        ),
        (
            "[missing for x in lst]",
            err("NameError: name 'missing' is not defined"),
        ),
        ("order['nope'] + 1", err("KeyError: 'nope'")),
        ("lst[7] + 1", err("IndexError: list index out of range")),
        ("1 / 0", err("ZeroDivisionError: division by zero")),
        (
            "s + 1",
            err("TypeError: can only concatenate str (not \"int\") to str"),
        ),
        (
            "order.id",
            err("AttributeError: 'dict' object has no attribute 'id'"),
        ),
        ("n(1)", err("TypeError: 'int' object is not callable")),
        (
            "nothing(1)",
            err("NameError: name 'nothing' is not defined"),
        ),
        (
            "time.time()",
            err("AttributeError: module 'time' has no attribute 'time'"),
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(&eval(source, &vars), expected, "{source}");
    }
}

#[test]
fn data_shadows_builtins() {
    let vars = map(json!({"max": 5, "type": "order", "lst": [1, 9]}));
    assert_eq!(eval("max + 1", &vars), Ok(json!(6)));
    assert_eq!(eval("type == 'order'", &vars), Ok(json!(true)));
    assert_eq!(
        eval("[type for x in lst]", &vars),
        Ok(json!(["order", "order"]))
    );
    assert_eq!(
        eval("max(lst)", &vars),
        err("TypeError: 'int' object is not callable")
    );
    // Without the variable, the builtin is back.
    assert_eq!(eval("max(lst)", &map(json!({"lst": [1, 9]}))), Ok(json!(9)));
}

#[test]
fn truthiness() {
    let vars = data();
    let cases = [
        ("none", false),
        ("False", false),
        ("0", false),
        ("0.0", false),
        ("''", false),
        ("[]", false),
        ("{}", false),
        ("empty", false),
        ("set()", false),
        ("()", false),
        ("n - 3", false),
        ("order['items'][5:]", false),
        ("lst", true),
        ("n", true),
        ("s", true),
        ("order", true),
        ("{0}", true),
        ("-1", true),
        ("0.5", true),
        ("'0'", true),
        ("[None]", true),
        ("len", true),
        ("n == 3", true),
    ];
    for (source, expected) in cases {
        let expr = Expression::compile(source).unwrap();
        assert_eq!(expr.eval_bool(&vars, &cx()), Ok(expected), "{source}");
    }
    let missing = Expression::compile("missing").unwrap();
    assert_eq!(
        missing.eval_bool(&vars, &cx()).unwrap_err().message,
        "NameError: name 'missing' is not defined"
    );
}

#[test]
fn compile_errors() {
    for (source, expected) in [
        ("n +", "SyntaxError"),
        ("x = 1", "SyntaxError"),
        ("", "SyntaxError: empty expression"),
        ("   ", "SyntaxError: empty expression"),
        ("(1", "SyntaxError"),
        ("a b", "SyntaxError"),
    ] {
        let message = Expression::compile(source).unwrap_err().message;
        assert!(message.starts_with(expected), "{source:?}: {message}");
    }
    for (source, expected) in [
        ("x = (", "SyntaxError: unexpected EOF while parsing"),
        ("if x\n    y = 1", "SyntaxError"),
        ("  x = 1", "SyntaxError"),
        ("del x", "NotImplementedError"),
    ] {
        let message = Script::compile(source).unwrap_err().message;
        assert!(message.starts_with(expected), "{source:?}: {message}");
    }
}

#[test]
fn compile_once_eval_many() {
    let expr = Expression::compile("{'a': a, 'b': b}").unwrap();
    for i in 0..20 {
        let vars = map(json!({"a": i, "b": format!("v{i}")}));
        assert_eq!(
            expr.eval(&vars, &cx()),
            Ok(json!({"a": i, "b": format!("v{i}")}))
        );
    }
    assert_eq!(
        expr.eval(&map(json!({"a": 1})), &cx()).unwrap_err().message,
        "NameError: name 'b' is not defined"
    );
    assert_eq!(
        expr.eval(&map(json!({"a": 1, "b": 2})), &cx()),
        Ok(json!({"a": 1, "b": 2}))
    );

    let fast = Expression::compile("order['id']").unwrap();
    assert_eq!(
        fast.eval(&map(json!({"order": {"id": 1}})), &cx()),
        Ok(json!(1))
    );
    assert_eq!(
        fast.eval(&map(json!({"order": {"id": "x"}})), &cx()),
        Ok(json!("x"))
    );
}

fn run(source: &str, input: Value) -> Result<Value, String> {
    let script = Script::compile(source).map_err(|e| e.message)?;
    let mut data = map(input);
    script.run(&mut data, &cx()).map_err(|e| e.message)?;
    Ok(Value::Object(data))
}

#[test]
fn scripts_write_back() {
    let cases: &[(&str, Value, Result<Value, String>)] = &[
        ("x = 1", json!({"a": 1}), Ok(json!({"a": 1, "x": 1}))),
        ("n = n + 1", json!({"n": 1}), Ok(json!({"n": 2}))),
        (
            "n += 1\nm = n * 10",
            json!({"n": 1}),
            Ok(json!({"n": 2, "m": 20})),
        ),
        (
            "a, b = 1, 'two'\nc = d = None",
            json!({}),
            Ok(json!({"a": 1, "b": "two", "c": null, "d": null})),
        ),
        (
            "order['id'] = 8",
            json!({"order": {"id": 7}}),
            Ok(json!({"order": {"id": 8}})),
        ),
        (
            "lst.append(4)",
            json!({"lst": [1]}),
            Ok(json!({"lst": [1, 4]})),
        ),
        (
            "items = order['items']\nitems.append('c')",
            json!({"order": {"items": ["a"]}}),
            Ok(json!({"order": {"items": ["a", "c"]}, "items": ["a", "c"]})),
        ),
        (
            "d = {'k': 1}\nd['k'] += 1",
            json!({}),
            Ok(json!({"d": {"k": 2}})),
        ),
        (
            "if n > 2:\n    big_n = True\nelse:\n    small_n = True",
            json!({"n": 3}),
            Ok(json!({"n": 3, "big_n": true})),
        ),
        (
            "total = 0\nfor item in lst:\n    total += item",
            json!({"lst": [1, 2, 3]}),
            Ok(json!({"lst": [1, 2, 3], "total": 6, "item": 3})),
        ),
        (
            "def double(v):\n    return v * 2\nresult = double(n)",
            json!({"n": 4}),
            Ok(json!({"n": 4, "result": 8})),
        ),
        (
            "def f():\n    global g\n    g = 5\nf()",
            json!({}),
            Ok(json!({"g": 5})),
        ),
        (
            "import json\nencoded = json.dumps({'a': 1})",
            json!({}),
            Ok(json!({"encoded": "{\"a\": 1}"})),
        ),
        (
            "f = lambda v: v\nt = (1, 2)",
            json!({"f": 1.5}),
            Ok(json!({"f": 1.5, "t": [1, 2]})),
        ),
        ("x = 2 ** 70\ny = 1", json!({}), Ok(json!({"y": 1}))),
        ("id = id + 1", json!({"id": 42}), Ok(json!({"id": 43}))),
        ("café = 'ok'", json!({}), Ok(json!({"café": "ok"}))),
        (
            "x = 'n is ' + str(n)  # n",
            json!({"n": 1}),
            Ok(json!({"n": 1, "x": "n is 1"})),
        ),
        (
            "print('not on stdout')",
            json!({"a": 1}),
            Ok(json!({"a": 1})),
        ),
        ("", json!({"a": 1}), Ok(json!({"a": 1}))),
        ("time.sleep(0.1)", json!({"a": 1}), Ok(json!({"a": 1}))),
        (
            "response['do_not_fail']",
            json!({"response": {"do_not_fail": 1}}),
            Ok(json!({"response": {"do_not_fail": 1}})),
        ),
        (
            "response['do_not_fail']",
            json!({"response": {}}),
            err("KeyError: 'do_not_fail'"),
        ),
        (
            "y = 1\n1 / 0",
            json!({}),
            err("ZeroDivisionError: division by zero"),
        ),
        (
            "x = missing",
            json!({}),
            err("NameError: name 'missing' is not defined"),
        ),
        (
            "nothing(1)",
            json!({}),
            err("NameError: name 'nothing' is not defined"),
        ),
        (
            "time.sleep(-1)",
            json!({}),
            err("ValueError: sleep length must be non-negative"),
        ),
        (
            "time.sleep('1')",
            json!({}),
            err("TypeError: 'str' object cannot be interpreted as an integer"),
        ),
        (
            "open('/etc/passwd')",
            json!({}),
            err("PermissionError: open is not available in expressions"),
        ),
    ];
    for (source, input, expected) in cases {
        assert_eq!(&run(source, input.clone()), expected, "{source}");
    }
}

#[test]
fn time_sleep_fixture_does_not_block() {
    let script = Script::compile("time.sleep(0.1)").unwrap();
    let started = Instant::now();
    let mut data = map(json!({"a": 1}));
    script.run(&mut data, &cx()).unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );
    // A variable named `time` wins over the module.
    let err = run("time.sleep(0.1)", json!({"time": 3})).unwrap_err();
    assert_eq!(err, "AttributeError: 'int' object has no attribute 'sleep'");
}

#[test]
fn datetime_now_reads_the_clock() {
    let out = run(
        "from datetime import datetime, date\nyear = datetime.now().year\nday = date.today().day",
        json!({}),
    )
    .unwrap();
    assert!(out["year"].as_i64().unwrap() >= 2025, "{out}");
    assert!((1..=31).contains(&out["day"].as_i64().unwrap()), "{out}");
}

#[test]
fn datetime_now_is_the_time_passed_in_not_the_system_clock() {
    let out = run(
        "from datetime import datetime, date\nnow = datetime.now().isoformat()\nday = str(date.today())",
        json!({}),
    )
    .unwrap();
    assert_eq!(out["now"], "2026-11-26T09:30:15.250000", "{out}");
    assert_eq!(out["day"], "2026-11-26", "{out}");
}

#[test]
fn script_runs_do_not_leak_state() {
    let script = Script::compile("if flag:\n    x = 1\ncount = count + 1").unwrap();
    let mut first = map(json!({"flag": true, "count": 0}));
    script.run(&mut first, &cx()).unwrap();
    assert_eq!(
        Value::Object(first),
        json!({"flag": true, "count": 1, "x": 1})
    );
    let mut second = map(json!({"flag": false, "count": 10}));
    script.run(&mut second, &cx()).unwrap();
    assert_eq!(Value::Object(second), json!({"flag": false, "count": 11}));
}

#[test]
fn failed_script_leaves_data_untouched() {
    let script = Script::compile("lst.append(1)\nx = 1\nraise ValueError('boom')").unwrap();
    let mut data = map(json!({"lst": []}));
    assert_eq!(
        script.run(&mut data, &cx()).unwrap_err().message,
        "ValueError: boom"
    );
    assert_eq!(Value::Object(data), json!({"lst": []}));
}

#[test]
fn runs_are_bounded() {
    let cases = [
        ("while True: pass", "TimeoutError"),
        ("x = 0\nwhile True:\n    x += 1", "TimeoutError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("x = 'a' * 10**10", "MemoryError"),
        ("x = 2 ** 1000000000", "MemoryError"),
    ];
    for (source, expected) in cases {
        let started = Instant::now();
        let message = run(source, json!({})).unwrap_err();
        assert!(message.starts_with(expected), "{source}: {message}");
        assert!(
            started.elapsed() < runner::TIME_LIMIT * 3,
            "{source}: {:?}",
            started.elapsed()
        );
    }
    // Host calls pause monty's clock; the wall clock or the call budget still stops the loop.
    let message = run("while True:\n    time.sleep(0)", json!({})).unwrap_err();
    assert!(
        message.starts_with("TimeoutError") || message.starts_with("RuntimeError: more than"),
        "{message}"
    );
    // Recursion below the limit works.
    let deep = format!(
        "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nd = f({})",
        runner::MAX_RECURSION_DEPTH - 10
    );
    assert_eq!(
        run(&deep, json!({})),
        Ok(json!({"d": runner::MAX_RECURSION_DEPTH - 10}))
    );
}

#[test]
fn json_round_trip() {
    let value = json!({
        "null": null, "t": true, "i": -5, "max": u64::MAX, "min": i64::MIN, "f": 0.1,
        "s": "héllo \"q\"", "list": [1, [2, {"x": []}]], "obj": {"nested": {"k": "v"}},
    });
    assert_eq!(to_json(to_monty(&value)), Ok(value));
}

#[test]
fn scan_finds_names_not_strings_or_attributes() {
    let source =
        "x = a.b + f'{c}' + \"d\" + '''e\nf''' # g\nfor h in range(3):\n    i.j(k=1)\nr'\\'l'";
    assert_eq!(scan::names(source), ["x", "a", "h", "range", "i", "k"]);
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
        let iterations = 20_000;
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
    measure("monty {'a': a, 'b': b}", &mut || {
        assert!(dict.eval(&vars, &cx()).is_ok())
    });
    let cond = Expression::compile("a > 0 and b == 'two'").unwrap();
    measure("monty a > 0 and b == 'two'", &mut || {
        assert_eq!(cond.eval_bool(&vars, &cx()), Ok(true))
    });
    let script = Script::compile("c = a + 1").unwrap();
    measure("script c = a + 1", &mut || {
        script.run(&mut data, &cx()).unwrap()
    });
}
