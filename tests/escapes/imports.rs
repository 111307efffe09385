//! Imports: a module scripts are not given, by `import`, `__import__`, the builtins' own
//! `__import__`, a dotted path into a global package, or a module another module holds.

use crate::support::refused;

#[test]
fn import_statement() {
    refused(
        "import os\nx = os.read(os.open('{PATH}', 0), 100)",
        "ImportError",
        "Import not allowed: os",
    );
}

#[test]
fn dunder_import_call() {
    refused(
        "x = __import__('os', {}).popen('cat {PATH}').read()",
        "ImportError",
        "Import not allowed: os",
    );
}

#[test]
fn builtins_dict_import() {
    refused(
        "imp = __builtins__['__import__']\nx = imp('subprocess', {}).check_output(['cat', '{PATH}'])",
        "ImportError",
        "Import not allowed: subprocess",
    );
}

#[test]
fn dotted_import_into_a_global_package() {
    refused(
        "import dateparser.languages.loader as loader\nos = loader.import_module('os')\n\
         x = os.read(os.open('{PATH}', 0), 100)",
        "ImportError",
        "Import not allowed: dateparser.languages.loader",
    );
}

#[test]
fn from_import_of_a_reexport() {
    refused(
        "from dateparser.languages.loader import import_module\nx = import_module('os')",
        "ImportError",
        "Import not allowed: dateparser.languages.loader",
    );
}

/// `__import__` reads the names from the globals it is given: a script can pass its own, but
/// the names are still read through the guard.
#[test]
fn dunder_import_with_forged_globals() {
    refused(
        "m = __import__('m', {'m': dateparser.languages.loader}, None, ['import_module'])\n\
         x = m.import_module('os').read(0, 1)",
        "ImportError",
        "'import_module' (a function of 'importlib')",
    );
}

#[test]
fn sys_modules_through_calendar() {
    refused(
        "os = calendar.sys.modules['os']\nx = os.read(os.open('{PATH}', 0), 100)",
        "AttributeError",
        "gives scripts no access to module 'sys'",
    );
}

#[test]
fn os_through_uuid() {
    refused(
        "x = uuid.os.environ",
        "AttributeError",
        "gives scripts no access to module 'os'",
    );
}

#[test]
fn importlib_through_dateparser_utils() {
    refused(
        "os = dateparser.utils.strptime.importlib.import_module('os')\n\
         x = os.read(os.open('{PATH}', 0), 100)",
        "AttributeError",
        "gives scripts no access to module 'importlib'",
    );
}

#[test]
fn locale_through_strptime() {
    refused(
        "_strptime.locale.setlocale(_strptime.locale.LC_ALL, 'C.utf8')",
        "AttributeError",
        "gives scripts no access to module 'locale'",
    );
}

#[test]
fn pickle_and_gc_are_not_importable() {
    for module in [
        "pickle",
        "gc",
        "importlib",
        "ctypes",
        "inspect",
        "operator",
        "string",
    ] {
        refused(
            &format!("import {module}"),
            "ImportError",
            &format!("Import not allowed: {module}"),
        );
    }
}
