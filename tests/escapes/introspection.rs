//! Introspection: dunders (`__subclasses__`, `__globals__`, `__reduce_ex__`), the builtins a
//! script is not given (`getattr`, `vars`, `type`, `eval`, `open`), `__builtins__` itself,
//! attribute writes on what scripts share.

use crate::support::{exec_on, refused};
use serde_json::json;

#[test]
fn subclasses_of_object() {
    refused(
        "x = ().__class__.__bases__[0].__subclasses__()",
        "SyntaxError",
        "\"__class__\" is an invalid attribute name",
    );
}

/// `object` is reachable without a dunder (`int.mro()`); its dunders are not.
#[test]
fn subclasses_through_getattr() {
    refused(
        "o = int.mro()[-1]\nx = _getattr_(o, '__subclasses__')()",
        "AttributeError",
        "\"__subclasses__\" is an invalid attribute name",
    );
}

#[test]
fn function_globals() {
    refused(
        "def f():\n    pass\nx = f.__globals__['__builtins__']",
        "SyntaxError",
        "\"__globals__\" is an invalid attribute name",
    );
}

#[test]
fn reduce_ex() {
    refused(
        "x = decimal.Decimal(1).__reduce_ex__(2)",
        "SyntaxError",
        "\"__reduce_ex__\" is an invalid attribute name",
    );
}

#[test]
fn reduce_through_getattr() {
    refused(
        "x = _getattr_(decimal.Decimal(1), '__reduce__')()",
        "AttributeError",
        "\"__reduce__\" is an invalid attribute name",
    );
}

#[test]
fn builtins_scripts_are_not_given() {
    for name in [
        "getattr",
        "vars",
        "dir",
        "globals",
        "locals",
        "type",
        "eval",
        "exec",
        "compile",
        "open",
        "breakpoint",
        "input",
        "memoryview",
        "super",
        "object",
    ] {
        refused(
            &format!("x = {name}"),
            "NameError",
            &format!("name '{name}' is not defined"),
        );
    }
}

/// `__builtins__` is the script's own copy of the safe builtins: RestrictedPython's
/// `_getattr_` in it applies the guard's rules.
#[test]
fn getattr_from_the_builtins_dict() {
    refused(
        "g = __builtins__['_getattr_']\nos = g(calendar, 'sys').modules['os']",
        "AttributeError",
        "gives scripts no access to module 'sys'",
    );
}

/// What one script puts in its `__builtins__` is gone in the next.
#[test]
fn builtins_changes_do_not_outlive_the_script() {
    let pool = crate::support::one_worker();
    let answer = exec_on(&pool, "__builtins__['len'] = None", json!({}));
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let answer = exec_on(&pool, "x = len([1, 2])", json!({}));
    assert_eq!(answer["data"]["x"], 2, "{answer}");
}

#[test]
fn write_to_a_module() {
    refused(
        "dateparser.languages.loader.import_module = None",
        "AttributeError",
        "given to scripts are read-only",
    );
}

#[test]
fn write_to_a_library_class() {
    refused(
        "json.JSONEncoder.item_separator = ';'",
        "AttributeError",
        "cannot set or delete 'item_separator' of class",
    );
}

#[test]
fn setattr_on_a_module() {
    refused(
        "setattr(calendar, 'firstweekday', len)",
        "TypeError",
        "attribute-less object",
    );
}

/// An AttributeError raised by the real module behind a view holds that module (`e.obj`):
/// read through it, the module's view rules apply.
#[test]
fn the_real_module_an_attribute_error_holds() {
    refused(
        "try:\n    calendar.nothing\nexcept AttributeError as e:\n    os = e.obj.sys.modules['os']",
        "AttributeError",
        "gives scripts no access to module 'sys'",
    );
}

/// A class statement calls its metaclass with the class body's namespace: a re-exported
/// callable cannot be named as one.
#[test]
fn metaclass_from_a_reexport() {
    refused(
        "__name__ = 'm'\nclass A(metaclass=dateparser.languages.dictionary.methodcaller):\n    pass",
        "AttributeError",
        "'methodcaller' (a class of 'operator')",
    );
}
