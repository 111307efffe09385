//! Re-exports (issue 31, routes 1 and 2): a global module's submodule holds a function or
//! class of another module (`from importlib import import_module`); scripts get only a
//! module's own. Last, the scan: every attribute reachable from the script globals.

use crate::support::{assert_nothing_leaks, refused, shared_pool};
use serde_json::json;

/// Route 1: importlib's `import_module`, re-exported by dateparser's loader.
#[test]
fn import_module_from_dateparser_loader() {
    refused(
        "os = dateparser.languages.loader.import_module('os')\n\
         x = os.read(os.open('{PATH}', 0), 100)",
        "AttributeError",
        "'import_module' (a function of 'importlib')",
    );
}

/// Route 2: operator's `methodcaller` reaches a function's globals...
#[test]
fn methodcaller_to_globals() {
    refused(
        "mc = dateparser.languages.dictionary.methodcaller\n\
         g = mc('__getattribute__', '__globals__')(json.loads)\n\
         x = g['__builtins__']['open']('{PATH}').read()",
        "AttributeError",
        "'methodcaller' (a class of 'operator')",
    );
}

/// ... every class ...
#[test]
fn methodcaller_to_subclasses() {
    refused(
        "mc = dateparser.languages.dictionary.methodcaller\n\
         x = str(mc('__subclasses__')(int.mro()[-1]))",
        "AttributeError",
        "'methodcaller' (a class of 'operator')",
    );
}

/// ... and past the format-string guard.
#[test]
fn methodcaller_to_format() {
    refused(
        "mc = dateparser.languages.dictionary.methodcaller\n\
         x = mc('format', json.loads)('{0.__globals__}')",
        "AttributeError",
        "'methodcaller' (a class of 'operator')",
    );
}

#[test]
fn computed_name_through_getattr() {
    refused(
        "f = _getattr_(dateparser.languages.loader, 'import_' + 'module')\nx = f('os').environ",
        "AttributeError",
        "'import_module' (a function of 'importlib')",
    );
}

#[test]
fn reexport_as_a_decorator() {
    refused(
        "@dateparser.languages.loader.import_module\ndef os():\n    pass\n",
        "AttributeError",
        "'import_module' (a function of 'importlib')",
    );
}

#[test]
fn deepcopy_from_copy() {
    refused(
        "x = dateparser.languages.loader.deepcopy",
        "AttributeError",
        "'deepcopy' (a function of 'copy')",
    );
}

#[test]
fn partial_from_functools() {
    refused(
        "p = dateparser.parser.partial(_getattr_, calendar)\nx = p('sys')",
        "AttributeError",
        "'partial' (a class of 'functools')",
    );
}

#[test]
fn wraps_from_functools() {
    refused(
        "x = dateparser.conf.wraps",
        "AttributeError",
        "'wraps' (a function of 'functools')",
    );
}

/// A builtin class the script is not given (`types.ModuleType` makes modules).
#[test]
fn module_type_from_types() {
    refused(
        "m = dateparser.utils.strptime.ModuleType('os')",
        "AttributeError",
        "'ModuleType' (a class of 'builtins')",
    );
}

#[test]
fn mapping_proxy_type() {
    refused(
        "x = dateparser.conf.MappingProxyType",
        "AttributeError",
        "'MappingProxyType' (a class of 'builtins')",
    );
}

#[test]
fn tzlocal_through_dateparser_utils() {
    refused(
        "x = str(dateparser.utils.get_localzone())",
        "AttributeError",
        "'get_localzone' (a function of 'tzlocal.unix')",
    );
}

#[test]
fn dateutil_through_dateparser_date() {
    refused(
        "x = dateparser.date.relativedelta(days=1)",
        "AttributeError",
        "'relativedelta' (a class of 'dateutil.relativedelta')",
    );
}

#[test]
fn itertools_through_calendar() {
    refused(
        "x = list(calendar.repeat(1, 3))",
        "AttributeError",
        "'repeat' (a class of 'itertools')",
    );
}

#[test]
fn enum_through_uuid() {
    refused(
        "__name__ = 'e'\nclass E(uuid.Enum):\n    A = 1\n",
        "AttributeError",
        "'Enum' (a class of 'enum')",
    );
}

#[test]
fn io_through_dateparser_parser() {
    refused(
        "x = dateparser.parser.StringIO('a').read()",
        "AttributeError",
        "'StringIO' (a class of '_io')",
    );
}

#[test]
fn typing_through_dateparser_dictionary() {
    refused(
        "x = dateparser.languages.dictionary.cast(int, 1)",
        "AttributeError",
        "'cast' (a function of 'typing')",
    );
}

/// A script class names its module after the script's `__name__`; naming it after another
/// module does not make that module's functions the class's own.
#[test]
fn forged_module_name_of_a_script_class() {
    refused(
        "__name__ = 'collections'\nclass T(decimal.DecimalTuple):\n    pass\nx = T._asdict",
        "AttributeError",
        "'_asdict' (a function of 'collections')",
    );
}

/// The scan: the worker walks every attribute reachable from the script globals through the
/// guard (views, classes, their attributes, container items; no calls) and reports each
/// module that is not a view and each function, class or other callable of a module outside
/// the globals' packages. None may be found; the walk must have gone far.
#[test]
fn nothing_reachable_is_of_another_module() {
    let answer = shared_pool()
        .call(&json!({"op": "audit", "source": ""}))
        .expect("the worker answers");
    assert_nothing_leaks(&answer);
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let visited = answer["visited"].as_u64().unwrap_or_default();
    assert!(visited > 2_000, "the walk visited only {visited} objects");
    assert_eq!(answer["found"], json!([]), "reachable from the globals");
}

/// What SpiffArena scripts use from the same modules still works.
#[test]
fn a_module_own_functions_and_classes_still_work() {
    let source = "a = json.loads('[1]')\nb = re.compile('a+').match('aa').group(0)\n\
                  c = str.upper('x')\nd = str(decimal.Decimal.from_float(1.5))\n\
                  e = dateparser.parse('2024-01-02').year\nf = calendar.monthrange(2024, 2)[1]\n\
                  g = pytz.timezone('Europe/Paris').zone\nh = random.choice([7])\n\
                  i = _strptime._strptime_datetime(datetime, '2024', '%Y').year\n\
                  j = str(uuid.uuid5(uuid.NAMESPACE_DNS, 'x'))[:8]";
    let answer = crate::support::exec_on(shared_pool(), source, json!({}));
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let data = &answer["data"];
    assert_eq!(data["a"], json!([1]));
    assert_eq!(data["b"], "aa");
    assert_eq!(data["c"], "X");
    assert_eq!(data["d"], "1.5");
    assert_eq!(data["e"], 2024);
    assert_eq!(data["f"], 29);
    assert_eq!(data["g"], "Europe/Paris");
    assert_eq!(data["h"], 7);
    assert_eq!(data["i"], 2024);
    assert_eq!(data["j"], "05b16a01");
}
