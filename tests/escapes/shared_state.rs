//! Shared state (issue 31, item 9): what one script changes in the libraries' state must not
//! change what the next script sees, on the same worker. Each test runs on a pool of one
//! worker: the probe, the change, the probe again, and both probes must agree. A change the
//! worker cannot undo (an attribute written on a shared object) replaces the worker instead
//! ("fatal": true).

use crate::support::{exec_on, one_worker};
use serde_json::{json, Value};
use workflow_backend::python::WorkerPool;

fn data_of(pool: &WorkerPool, source: &str) -> Value {
    let answer = exec_on(pool, source, json!({}));
    assert_eq!(answer["ok"], json!(true), "{source}: {answer}");
    answer["data"].clone()
}

/// `probe` answers the same before and after `change` ran on the same worker.
fn unchanged_by(change: &str, probe: &str) {
    let pool = one_worker();
    let before = data_of(&pool, probe);
    let answer = exec_on(&pool, change, json!({}));
    assert_eq!(answer["ok"], json!(true), "{change}: {answer}");
    assert_ne!(
        answer["fatal"],
        json!(true),
        "{change}: restored, not replaced"
    );
    let after = data_of(&pool, probe);
    assert_eq!(before, after, "after {change:?}");
}

#[test]
fn decimal_default_context_traps() {
    unchanged_by(
        "decimal.DefaultContext.traps[decimal.Inexact] = True",
        "x = str(decimal.Decimal(1) / decimal.Decimal(3))\ny = str(decimal.DefaultContext)",
    );
}

#[test]
fn decimal_basic_and_extended_contexts() {
    unchanged_by(
        "decimal.BasicContext.traps[decimal.Inexact] = True\n\
         decimal.ExtendedContext.flags[decimal.Rounded] = True\n\
         decimal.DefaultContext.flags[decimal.Inexact] = True",
        "x = str(decimal.BasicContext)\ny = str(decimal.ExtendedContext)\n\
         z = str(decimal.getcontext())",
    );
}

#[test]
fn decimal_current_context_traps() {
    unchanged_by(
        "decimal.getcontext().traps[decimal.Inexact] = True",
        "x = str(decimal.Decimal(2) / decimal.Decimal(3))",
    );
}

/// Written as an attribute, a shared context cannot be told apart from the script's own: the
/// worker is replaced, and the next request does not see the change either.
#[test]
fn decimal_default_context_precision_replaces_the_worker() {
    let pool = one_worker();
    let probe = "x = str(decimal.Decimal(1) / decimal.Decimal(3))";
    let before = data_of(&pool, probe);
    let answer = exec_on(&pool, "decimal.DefaultContext.prec = 3", json!({}));
    assert_eq!(answer["fatal"], json!(true), "{answer}");
    assert_eq!(data_of(&pool, probe), before);
}

#[test]
fn calendar_first_weekday() {
    unchanged_by(
        "calendar.setfirstweekday(3)",
        "x = calendar.firstweekday()\ny = calendar.monthcalendar(2024, 1)[0]",
    );
}

/// A generator left suspended inside `with calendar.different_locale(...)` (and kept alive
/// by a reference cycle) would leave LC_TIME changed for the next request. Behind an OS wall
/// that keeps the worker from loading locale files, the change itself fails; either way the
/// next script sees the locale of start-up.
#[test]
fn locale_left_by_a_suspended_generator() {
    let pool = one_worker();
    let probe = "d = calendar.different_locale('C')\nwith d:\n    pass\nx = d.oldlocale";
    let before = data_of(&pool, probe);
    let answer = exec_on(
        &pool,
        "def g():\n    me = yield\n    with calendar.different_locale('C.utf8'):\n        yield 1\n\
         it = g()\nit.send(None)\nit.send(it)\nit = None",
        json!({}),
    );
    let unloadable = answer["error"]["message"] == "unsupported locale setting";
    assert!(answer["ok"] == json!(true) || unloadable, "{answer}");
    assert_eq!(data_of(&pool, probe), before);
}

/// A seeded generator is reseeded: the next script cannot predict the numbers.
#[test]
fn random_seed() {
    let pool = one_worker();
    let seeded = data_of(
        &pool,
        "random.seed(42)\nx = [random.random() for i in range(3)]",
    );
    let next = data_of(&pool, "x = [random.random() for i in range(3)]");
    assert_ne!(seeded, next);
}

fn audited_state(pool: &WorkerPool) -> Value {
    let answer = pool
        .call(&json!({"op": "audit", "source": ""}))
        .expect("the worker answers");
    answer["state"].clone()
}

/// re's cache (compiled patterns) is emptied after each request.
#[test]
fn re_cache() {
    let pool = one_worker();
    let before = audited_state(&pool);
    data_of(
        &pool,
        "x = re.compile('a+b').pattern + re.sub('c', 'd', 'cc')",
    );
    let after = audited_state(&pool);
    assert_eq!(after["re_cache"], 0, "{after}");
    assert_eq!(before, after);
}

/// The time module's zone: a script can only re-read it from the (unchanged) environment;
/// the worker checks it after each request all the same.
#[test]
fn time_zone() {
    let pool = one_worker();
    let before = audited_state(&pool);
    unchanged_by("time.tzset()", "x = time.tzname\ny = time.timezone");
    data_of(&pool, "time.tzset()");
    assert_eq!(before, audited_state(&pool));
}
