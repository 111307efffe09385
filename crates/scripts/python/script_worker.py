"""Script worker: runs SpiffArena-dialect Python for workflow-backend, one request at a time.

The server starts a few of these processes (`python3 -I -S -u -c <this file> PACKAGES MEMORY_MB`)
and talks to each over stdin/stdout, one JSON object per line:

  request  {"op": "exec" | "eval" | "check", "source": str, "data": {...}, "mode": "exec"|"eval"}
  answer   {"ok": true, "data": {...}}            exec: the task data after the script
           {"ok": true, "value": ...}             eval: the expression's value
           {"ok": true}                           check: the source compiles
           {"ok": false, "error": {"class", "message", "line", "column"}, "fatal": bool}
  "fatal": true (on any answer) asks the pool to replace this process: after a MemoryError,
  or after a script changed an object later requests could share.
  {"op": "audit"} (the escape tests' only; the server never sends it) answers
  {"ok": true, "found": [...], "visited": n, "state": {...}}: what a script could reach that
  it must not (see `audit`), and the shared library state.

Semantics are SpiffArena's: CPython `exec`/`eval` with its default globals, RestrictedPython's
safe builtins, and an `__import__` that only hands out names present in the globals; its
script functions (`get_current_user()`, `get_secret(key)`, ...) answered from the request's
"env"; a script runs with the task data as its globals, and afterwards the globals, the
functions, `__builtins__` and every callable are removed from the data (SpiffWorkflow's
TaskDataEnvironment rule).

Stricter than SpiffArena, so that a script cannot leave its sandbox nor change what later
scripts in this process see (the section "the sandbox" below): dunder attributes
(`().__class__`) and frame/code attributes (`gen.gi_frame`) are refused before the code runs;
the global modules are read-only views that hand out no private names, no other modules and
no functions or classes re-exported from other modules; attribute loads, `str.format` fields,
`from x import y` and attribute writes go through guards; the libraries' shared state
(decimal's template contexts, calendar's first weekday, ...) is put back after each request.

Limits: the address space is capped at start-up (what the imports use, plus MEMORY_MB), so a
memory bomb raises MemoryError here; the time limit is the server's: it kills the process.
Values that are not JSON cross the pipe tagged: {"__type__": "datetime", "value": iso}, ...
"""

import ast
import builtins as builtins_module
import calendar
import copy
import ctypes
import functools
import operator
import types
import datetime as _datetime_module
import decimal
import json
import math
import os
import random
import re
import resource
import sys
import time
import traceback
import uuid
from _string import formatter_field_name_split, formatter_parser

sys.path.insert(0, sys.argv[1])
MEMORY_LIMIT_MB = int(sys.argv[2])
# tests of the OS wall only (the server's test switch): `exec_unguarded` runs plain exec
UNGUARDED_FOR_TESTS = "--unguarded-for-tests" in sys.argv[3:]

import _strptime  # noqa: E402  (a SpiffArena global)

import dateparser  # noqa: E402
import pytz  # noqa: E402
from RestrictedPython import safe_globals  # noqa: E402
from RestrictedPython.transformer import INSPECT_ATTRIBUTES  # noqa: E402

FILE_NAME = "<script>"
# the worker's own (scripts cannot change the json module, but the protocol must not depend on it)
dumps, loads = json.dumps, json.loads
datetime = _datetime_module.datetime
timedelta = _datetime_module.timedelta


# ---- the sandbox ----
#
# SpiffArena runs scripts with plain exec and RestrictedPython's builtins only; its global
# modules are the real ones, so `calendar.sys.modules['os']` reaches everything. Here:
# - the global modules are read-only views (`module_view`): no names starting with "_", no
#   modules but their own package's (as views), no functions, classes or other callables but
#   the package's own (`vetted`: `dateparser.languages.loader.import_module` is importlib's,
#   so it is refused), no assignment; mutable containers are copied;
# - every attribute load in a script is `guarded_getattr(obj, name)` (an AST rewrite): "_"
#   names only on what the script made itself, modules only as views, `str.format` checked,
#   and the same rule: a callable must come from the module of the object's class (or of one
#   of its bases), be a method bound to the object itself, or be one the script already has;
# - every attribute write (`obj.x = v`, `del obj.x`, `obj.x += v`) goes through
#   `write_target`: modules, classes, functions and builtins the script did not make are
#   refused; other objects it did not make (a pytz zone, a decimal context) may be shared
#   with later requests, so the write is allowed, as in SpiffArena, and this worker is
#   replaced after the request ("fatal": true);
# - frame and code attributes (`gi_frame`, `f_globals`, ...) and dunders are refused before
#   the code runs;
# - what a script can change in the libraries' shared state without an attribute write (the
#   decimal contexts' traps, calendar's first weekday, the locale, random's generator, re's
#   cache) is restored after each request (`SharedState`), or the worker is replaced.

# RestrictedPython's list (generator, coroutine, frame, traceback and code attributes)
# (RestrictedPython 8.1's, as SpiffArena pins it), with what later versions added (the async
# generators' `ag_*`) and a few it never listed: the set does not depend on the version installed
INSPECT_NAMES = frozenset(INSPECT_ATTRIBUTES) | {
    "ag_await", "ag_code", "ag_frame", "ag_running", "f_lasti", "f_lineno", "f_trace_lines",
    "f_trace_opcodes", "gi_running", "gi_suspended", "cr_running", "cr_suspended", "tb_lasti",
    "tb_lineno",
}
MUTABLE_CONTAINERS = (list, dict, set, bytearray)
FORMAT_METHODS = frozenset(("format", "format_map"))
# private names of a global module that are its point (SpiffArena scripts call them)
PRIVATE_ALLOWED = {"_strptime": frozenset(("_strptime", "_strptime_time", "_strptime_datetime"))}
# what Python's own machinery reads from a module (repr, import errors)
MODULE_MACHINERY = frozenset(("__name__", "__doc__", "__file__", "__spec__", "__loader__",
                              "__package__", "__class__", "__dict__"))


class ScriptRefusal(AttributeError):
    """What the sandbox refuses; shown as the AttributeError it is."""


ScriptRefusal.__name__ = ScriptRefusal.__qualname__ = "AttributeError"


def refuse_private(name):
    return ScriptRefusal(f'"{name}" is an invalid attribute name because it starts with "_"')


def refuse_inspect(name):
    return ScriptRefusal(f'"{name}" is an invalid attribute name because it gives access to '
                         "running code (frames, code objects)")


class RequestState:
    """What the sandbox tracks during one request."""

    def __init__(self):
        self.classes = set()      # ids of the classes the script defined
        self.keep = []            # ... and the classes themselves (ids stay unique)
        self.tainted = False      # a shared object was written: replace this worker


STATE = RequestState()
_VIEWS = {}       # id(real module) -> its view (which keeps the module alive: ids stay unique)
_VIEW_IDS = set()
SAFE_IDS = frozenset()  # ids of what the script globals hold (set once they are made)
_real_build_class = builtins_module.__build_class__


def build_class(*args, **kwargs):
    cls = _real_build_class(*args, **kwargs)
    if isinstance(cls, type):
        STATE.classes.add(id(cls))
        STATE.keep.append(cls)
    return cls


def script_made(obj):
    """A class the script defined, an instance of one, a function it defined (or one of
    those bound as a method)."""
    if STATE.classes and (id(obj) in STATE.classes or id(type(obj)) in STATE.classes):
        return True
    if type(obj) is types.MethodType:
        obj = obj.__func__
    return type(obj) is types.FunctionType and obj.__code__.co_filename == FILE_NAME


def copied(value):
    try:
        return copy.deepcopy(value)
    except Exception:  # something in it cannot be copied: the top level at least
        return copy.copy(value)


def module_view(real, packages):
    """The read-only view of `real` given to scripts (one per module, made on first use)."""
    real_name = real.__name__
    root = real_name.partition(".")[0]
    if root not in packages:
        return None
    view = _VIEWS.get(id(real))
    if view is not None:
        return view
    private_allowed = PRIVATE_ALLOWED.get(real_name, frozenset())
    roots = {root}
    cache = {}
    text = repr(real)

    def resolve(name):
        if name.startswith("_") and name not in private_allowed:
            if name == "__all__":
                return [n for n in public_names() if accessible(n)]
            raise refuse_private(name)
        value = getattr(real, name)
        if isinstance(value, types.ModuleType):
            inner = module_view(value, (root,))
            if inner is None:
                raise ScriptRefusal(f"module {real_name!r} gives scripts no access to module "
                                    f"{value.__name__!r}")
            cache[name] = inner
            return inner
        if isinstance(value, MUTABLE_CONTAINERS):
            return copied(value)  # shared: each use gets its own copy
        if callable(value) and not acceptable(real, name, value, roots):
            raise refuse_foreign(f"module {real_name!r}", name, value)
        cache[name] = value
        return value

    def public_names():
        names = getattr(real, "__all__", None)
        if names is None:
            names = [n for n in vars(real) if not n.startswith("_")]
        return list(names)

    def accessible(name):
        try:
            resolve(name)
            return True
        except AttributeError:
            return False

    class module(types.ModuleType):  # noqa: N801  (scripts see type(json).__name__ == "module")
        def __getattribute__(self, name):
            try:
                return cache[name]
            except KeyError:
                pass
            if name in MODULE_MACHINERY:
                return types.ModuleType.__getattribute__(self, name)
            return resolve(name)

        def __setattr__(self, name, value):
            raise ScriptRefusal(f"cannot set {name!r} of module {real_name!r}: the modules given "
                                "to scripts are read-only")

        def __delattr__(self, name):
            raise ScriptRefusal(f"cannot delete {name!r} of module {real_name!r}: the modules "
                                "given to scripts are read-only")

        def __repr__(self):
            return text

        def __dir__(self):
            return sorted(n for n in public_names() if accessible(n))

    view = module(real_name, real.__doc__)
    if isinstance(getattr(real, "__file__", None), str):
        # import errors name the file, as for the real module (PyModule_GetFilenameObject)
        types.ModuleType.__getattribute__(view, "__dict__")["__file__"] = real.__file__
    _VIEWS[id(real)] = view
    _VIEW_IDS.add(id(view))
    return view


def view_of(module):
    view = module_view(module, GLOBAL_PACKAGES)
    if view is None:
        raise ScriptRefusal(f"scripts have no access to module {module.__name__!r}")
    return view


def guarded_getattr(obj, name):
    """`obj.name` in a script."""
    if name[:1] == "_" and name != "_" and id(obj) not in _VIEW_IDS and not script_made(obj):
        raise refuse_private(name)
    if isinstance(obj, types.ModuleType) and id(obj) not in _VIEW_IDS:
        obj = view_of(obj)  # a module some library function returned: read through its view
    value = getattr(obj, name)
    if id(obj) in _VIEW_IDS:
        return value  # the view has vetted it
    return vetted(obj, name, value)


def vetted(obj, name, value):
    """`value` (which is `obj.name`) as a script may have it, or a refusal."""
    if isinstance(value, types.ModuleType):
        return value if id(value) in _VIEW_IDS else view_of(value)
    if name in FORMAT_METHODS and (isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))):
        return checked_format(obj, name)
    if callable(value) and not acceptable(obj, name, value, None):
        raise refuse_foreign(describe(obj), name, value)
    if isinstance(value, MUTABLE_CONTAINERS) and not script_made(obj):
        return copied(value)  # perhaps shared with later requests (a class's, a cached object's)
    return value


# ---- which callables an attribute load may hand out ----
#
# A function, class, method or other callable is handed out only if it is the object's own:
# it comes from the package of the module viewed (for a module view), or of the object's class
# or one of its bases (for anything else), or it is a C method bound to the object itself
# ("x".upper, datetime.now), or the script already has it (its globals and builtins), or the
# script made it. Everything else was re-exported from elsewhere (`import_module`,
# `methodcaller`, `partial`, `ModuleType`) and is refused, however harmless it looks.

_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: C types, whose dict no code can change
_C_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType,
                  types.ClassMethodDescriptorType, types.MethodWrapperType)
_class_module = type.__dict__["__module__"].__get__  # not a metaclass's idea of it


def package_of(module_name):
    return module_name.partition(".")[0] if isinstance(module_name, str) else ""


def home(value):
    """The module a function, class, method or other callable comes from ("" if unknown)."""
    for _ in range(8):  # a method of a method of ...: unwrapped a few times at most
        if isinstance(value, type):
            return _class_module(value)
        if isinstance(value, types.FunctionType):
            return value.__module__ if isinstance(value.__module__, str) else ""
        if isinstance(value, types.MethodType):
            value = value.__func__
            continue
        if isinstance(value, types.BuiltinFunctionType):
            owner = value.__self__
            if owner is None or isinstance(owner, types.ModuleType):
                return value.__module__ if isinstance(value.__module__, str) else ""
            value = owner if isinstance(owner, type) else type(owner)
            continue
        if isinstance(value, _C_DESCRIPTORS):
            value = value.__objclass__
            continue
        value = type(value)
    return ""


def mro_roots(obj):
    """The packages of the classes `obj` is made of (its own class and bases, or its mro if
    it is a class); not "builtins", and not the script's classes (which name their module
    after whatever `__name__` the script set)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return {package_of(_class_module(c)) for c in type.__dict__["__mro__"].__get__(cls)
            if not script_made(c)} - {"builtins"}


def acceptable(obj, name, value, roots):
    """Whether `value` (= obj.name) is the object's own; `roots`: the packages it may come
    from (None: those of the object's classes)."""
    if id(value) in SAFE_IDS or script_made(value):
        return True
    if isinstance(value, types.BuiltinFunctionType) and value.__self__ is obj:
        return True  # a C method of the object itself: "x".upper, datetime.now, time.time
    origin = package_of(home(value))
    if origin in (mro_roots(obj) if roots is None else roots):
        return True
    return origin in ("builtins", "") and own_c_method(obj, name, value)


def own_c_method(obj, name, value):
    """`str.upper`, `str.maketrans`: what a C class of the object's defines under that name
    (`X.getter = object.__getattribute__` in a library is not)."""
    if getattr(value, "__name__", None) != name:
        return False
    cls = obj if isinstance(obj, type) else type(obj)
    return any(c.__flags__ & _IMMUTABLE_TYPE and name in c.__dict__
               for c in type.__dict__["__mro__"].__get__(cls))


def describe(obj):
    if isinstance(obj, type):
        return f"class {_class_module(obj)}.{obj.__qualname__}"
    return f"a {type(obj).__name__} object"


def refuse_foreign(owner, name, value):
    what = ("module" if isinstance(value, types.ModuleType) else "class" if isinstance(value, type)
            else "function" if isinstance(value, (types.FunctionType, types.BuiltinFunctionType))
            else "callable")
    origin = home(value) or "elsewhere"
    return ScriptRefusal(f"{owner} gives scripts no access to {name!r} (a {what} of {origin!r}): "
                         "only a module's or class's own functions and classes are given to scripts")


def check_format_string(text):
    """Refuses `{0._x}` and `{0.gi_frame}` fields (at any depth of nested specs) before
    str.format looks anything up; a malformed string is left for str.format to report."""
    try:
        for _, field, spec, _ in formatter_parser(text):
            if field:
                _, rest = formatter_field_name_split(field)
                for is_attribute, key in rest:
                    if is_attribute and key.startswith("_"):
                        raise refuse_private(key)
                    if is_attribute and key in INSPECT_NAMES:
                        raise refuse_inspect(key)
            if spec and "{" in spec:
                check_format_string(spec)
    except ValueError:
        pass


def checked_format(obj, name):
    if isinstance(obj, str):
        method = getattr(obj, name)

        @functools.wraps(method)
        def bound(*args, **kwargs):
            check_format_string(obj)
            return method(*args, **kwargs)

        return bound
    unbound = getattr(obj, name)

    @functools.wraps(unbound)
    def method(self, *args, **kwargs):
        if isinstance(self, str):
            check_format_string(self)
        return unbound(self, *args, **kwargs)

    return method


_UNWRITABLE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
               types.MethodWrapperType, types.WrapperDescriptorType, types.MethodDescriptorType,
               types.ClassMethodDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType)


def write_target(obj, name):
    """The object of `obj.name = v` / `del obj.name` in a script."""
    if script_made(obj):
        return obj
    if isinstance(obj, _UNWRITABLE):
        what = type(obj).__name__ if not isinstance(obj, type) else "class"
        label = getattr(obj, "__name__", None)
        label = f"{what} {label!r}" if isinstance(label, str) else what
        raise ScriptRefusal(f"cannot set or delete {name!r} of {label}: the modules, classes and "
                            "functions given to scripts are read-only")
    if type(obj).__module__ != "builtins":
        STATE.tainted = True  # perhaps shared with later requests: this worker is replaced
    return obj


AUGMENTED = {
    ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
    ast.MatMult: operator.imatmul, ast.Div: operator.itruediv, ast.FloorDiv: operator.ifloordiv,
    ast.Mod: operator.imod, ast.Pow: operator.ipow, ast.LShift: operator.ilshift,
    ast.RShift: operator.irshift, ast.BitOr: operator.ior, ast.BitXor: operator.ixor,
    ast.BitAnd: operator.iand,
}
AUGMENTED_BY_NAME = {op.__name__: function for op, function in AUGMENTED.items()}


def augmented_attribute(obj, name, op, value):
    """`obj.name op= value` in a script."""
    target = write_target(obj, name)
    setattr(target, name, AUGMENTED_BY_NAME[op](guarded_getattr(obj, name), value))


def from_import(obj, module_name, fromlist):
    """What `from x import a, b` reads its names from: the names looked up through the
    guard now (CPython would fall back to sys.modules for a name the object lacks)."""
    found = types.ModuleType(module_name)
    for name in fromlist:
        if name == "*":
            names = getattr(obj, "__all__", None) if id(obj) in _VIEW_IDS else None
            if names is None:
                names = [n for n in getattr(obj, "__dict__", {}) if not n.startswith("_")]
            for each in names:
                setattr(found, each, import_one(obj, module_name, each))
            found.__all__ = list(names)
        else:
            setattr(found, name, import_one(obj, module_name, name))
    return found


def import_one(obj, module_name, name):
    try:
        # what the source cannot name (`x.__class__`, `gen.gi_frame`) it cannot import either
        if name.startswith("__"):
            raise refuse_private(name)
        if name in INSPECT_NAMES:
            raise refuse_inspect(name)
        return guarded_getattr(obj, name)
    except ScriptRefusal as refusal:
        raise ImportError(f"cannot import name {name!r} from {module_name!r}: {refusal}") from None
    except AttributeError:
        package = getattr(obj, "__name__", None)
        if not isinstance(package, str):
            package = "<unknown module name>"
        path = vars(obj).get("__file__") if isinstance(obj, types.ModuleType) else None
        where = path if isinstance(path, str) else "unknown location"
        raise ImportError(f"cannot import name {name!r} from {package!r} ({where})") from None


def _import(name, glbls, *args):
    if name not in glbls:
        raise ImportError(f"Import not allowed: {name}", name=name)
    found = glbls[name]
    fromlist = args[1] if len(args) > 1 else None
    if fromlist:
        return from_import(found, name, fromlist)
    return found


def _safe_attribute_setter(original):
    def guarded(obj, name, *rest):
        if isinstance(name, str) and name.startswith("__"):
            raise AttributeError(f'"{name}" is an invalid attribute name because it starts with "__"')
        return original(obj, name, *rest)

    guarded.__name__ = original.__name__
    return guarded


def _safe_getattr(original):
    """RestrictedPython's `_getattr_` (no "_" names, no str.format), then the guard's rules."""
    def _getattr_(obj, name, default=None):
        value = original(obj, name, default)
        if isinstance(obj, types.ModuleType):
            try:  # a refusal is an error, not the default
                return getattr(obj if id(obj) in _VIEW_IDS else view_of(obj), name)
            except ScriptRefusal:
                raise
            except AttributeError:
                return default
        return vetted(obj, name, value)

    return _getattr_


GLOBAL_MODULES = {
    "_strptime": _strptime, "calendar": calendar, "dateparser": dateparser, "decimal": decimal,
    "json": json, "pytz": pytz, "random": random, "re": re, "time": time, "uuid": uuid,
}
GLOBAL_PACKAGES = frozenset(m.__name__.partition(".")[0] for m in GLOBAL_MODULES.values())


# RestrictedPython 8.1's safe builtins (the version SpiffArena's lock file pins) whatever version
# is installed: 9.0 dropped these four and added Ellipsis.
SAFE_BUILTINS_ONLY_IN_8_1 = ("bytes", "sorted", "tuple", "zip")
SAFE_BUILTINS_NOT_IN_8_1 = ("Ellipsis",)


def safe_builtins_8_1():
    builtins = {name: value for name, value in safe_globals["__builtins__"].items()
                if name not in SAFE_BUILTINS_NOT_IN_8_1}
    builtins.update({name: getattr(builtins_module, name) for name in SAFE_BUILTINS_ONLY_IN_8_1})
    return builtins


def default_globals():
    """SpiffArena's script globals (process_instance_script_engine.py) with safe builtins."""
    builtins = safe_builtins_8_1()
    builtins["__import__"] = _import
    builtins["__build_class__"] = build_class
    builtins["_getattr_"] = _safe_getattr(builtins["_getattr_"])
    for name in ("setattr", "delattr"):
        builtins[name] = _safe_attribute_setter(builtins[name])
    views = {name: module_view(module, GLOBAL_PACKAGES) for name, module in GLOBAL_MODULES.items()}
    return {
        "_strptime": views["_strptime"],
        "all": all,
        "any": any,
        "calendar": views["calendar"],
        "dateparser": views["dateparser"],
        "datetime": datetime,
        "decimal": views["decimal"],
        "dict": dict,
        "enumerate": enumerate,
        "filter": filter,
        "format": format,
        "json": views["json"],
        "list": list,
        "map": map,
        "max": max,
        "min": min,
        "pytz": views["pytz"],
        "random": views["random"],
        "re": views["re"],
        "set": set,
        "sum": sum,
        "time": views["time"],
        "timedelta": timedelta,
        "uuid": views["uuid"],
        "__builtins__": builtins,
    }


GLOBALS = default_globals()
SAFE_IDS = frozenset(id(value) for value in [*GLOBALS.values(), *GLOBALS["__builtins__"].values()]
                     if not isinstance(value, types.ModuleType))
# The guards the rewritten code calls: names no source can spell (nor assign), set last.
HELPERS = {
    ".getattr": guarded_getattr,
    ".target": write_target,
    ".augattr": augmented_attribute,
}


# ---- shared state, restored after every request ----

import locale  # noqa: E402  (loaded by calendar anyway)


class SharedState:
    """What a script can change in the libraries' state without an attribute write (which
    replaces the worker) and without leaving the sandbox: the decimal module's template
    contexts (`decimal.DefaultContext.traps[decimal.Inexact] = True`: every later
    `Context()` would trap), calendar's first weekday, the locale (a generator suspended in
    `with calendar.different_locale(...)`), random's generator (`random.seed(1)`), re's cache.
    Taken at start-up, restored after every request; the time module's zone (which a script
    can only re-read, with `time.tzset()`) is checked. What cannot be put back replaces the
    worker."""

    CONTEXTS = (decimal.DefaultContext, decimal.BasicContext, decimal.ExtendedContext)

    def __init__(self):
        self.contexts = [(context, context.copy(), repr(context)) for context in self.CONTEXTS]
        self.first_weekday = calendar.firstweekday()
        self.locale = locale.setlocale(locale.LC_ALL)
        self.time_zone = time_zone()
        re.purge()

    def restore(self):
        """True when everything is as at start-up again (each check costs about a
        microsecond; only what differs is put back)."""
        try:
            for context, saved, text in self.contexts:
                if repr(context) != text:
                    restore_context(context, saved)
                    if repr(context) != text:
                        return False
            if calendar.firstweekday() != self.first_weekday:
                calendar.setfirstweekday(self.first_weekday)
            if locale.setlocale(locale.LC_ALL) != self.locale:
                locale.setlocale(locale.LC_ALL, self.locale)
            # whether or not the script seeded it or read enough numbers to work its state out:
            # no later script's numbers can be predicted (128 fresh bits: a quarter of the
            # cost of seed(), which draws 2.5 KB)
            random.seed(int.from_bytes(os.urandom(16), "little"))
            re.purge()
            return (calendar.firstweekday() == self.first_weekday
                    and locale.setlocale(locale.LC_ALL) == self.locale
                    and time_zone() == self.time_zone)
        except Exception:  # noqa: BLE001  (whatever went wrong, a fresh worker is right)
            return False

    def snapshot(self):
        """The state as it is (what the audit reports)."""
        return {
            "decimal": [repr(context) for context in self.CONTEXTS],
            "calendar_first_weekday": calendar.firstweekday(),
            "locale": locale.setlocale(locale.LC_ALL),
            "time_zone": time_zone(),
            "re_cache": len(re._cache),
        }


def restore_context(context, saved):
    for name in ("prec", "rounding", "Emin", "Emax", "capitals", "clamp"):
        if getattr(context, name) != getattr(saved, name):
            setattr(context, name, getattr(saved, name))
    context.traps = dict(saved.traps.items())
    context.flags = dict(saved.flags.items())


def time_zone():
    return [list(time.tzname), time.timezone, time.altzone, time.daylight]


SHARED_STATE = SharedState()


# ---- the audit (op "audit": the server never sends it; the escape tests do) ----

# What scripts are given, whose functions and classes a script may hold: the global modules'
# packages, and datetime (whose classes are globals).
_AUDIT_PACKAGES = GLOBAL_PACKAGES | {"datetime"}


def audit():
    """Walks every attribute reachable from the script globals through the guard (no calls;
    container items included; bounded) and reports what no script should hold: a module that
    is not a view, a frame, code object, traceback or cell, or a function, class or other
    callable of a module outside the globals' packages, or a builtin the script is not given
    (`getattr`, `open`, `ModuleType`). Also
    reports the shared state, for the tests that check it is restored."""
    found, visited = [], 0
    seen = {}  # id -> the object, kept alive so that no id is reused (copies are temporaries)
    queue = [(name, value, None, 0) for name, value in sorted(GLOBALS.items()) if name != "__builtins__"]
    queue += [(f"__builtins__[{name!r}]", value, None, 0) for name, value in sorted(GLOBALS["__builtins__"].items())]
    queue += [(name, value, None, 0) for name, value in sorted(script_functions({}, {}).items())]
    while queue and visited < 60000:
        path, value, parent, depth = queue.pop()
        if id(value) in seen or isinstance(value, (str, bytes, int, float, complex, type(None))):
            continue
        seen[id(value)] = value
        visited += 1
        problem = foreign_to_scripts(value, parent) if depth else ""  # the globals are given
        if problem:
            found.append(f"{path}: {problem}")
            continue
        if depth >= 8:
            continue
        for label, child in audit_children(value):
            queue.append((path + label, child, value, depth + 1))
    return {"ok": True, "found": sorted(found), "visited": visited, "state": SHARED_STATE.snapshot()}


def audit_children(value):
    if isinstance(value, (list, tuple, set, frozenset)):
        return [(f"[{i}]", item) for i, item in enumerate(list(value)[:2000])]
    if isinstance(value, (dict, types.MappingProxyType)):
        return [(f"[{key!r}]", item) for key, item in list(value.items())[:2000]]
    children = []
    try:
        names = dir(value)
    except Exception:  # noqa: BLE001
        return children
    if id(value) in _VIEW_IDS:
        names += sorted(PRIVATE_ALLOWED.get(value.__name__, ()))
    for name in names:
        if (name.startswith("_") and id(value) not in _VIEW_IDS) or name.startswith("__") or name in INSPECT_NAMES:
            continue
        try:
            children.append((f".{name}", guarded_getattr(value, name)))
        except Exception:  # noqa: BLE001  (refused, or the attribute itself fails)
            pass
    return children


# the C halves of the globals' modules
_ACCELERATORS = {"_random": "random", "_json": "json", "_decimal": "decimal", "_datetime": "datetime",
                 "_sre": "re", "_calendar": "calendar"}


def audit_package(module_name):
    package = package_of(module_name)
    return _ACCELERATORS.get(package, package)


_RUNNING_CODE = (types.FrameType, types.CodeType, types.TracebackType, types.CellType)


def foreign_to_scripts(value, parent):
    """Why a script must not hold `value`, an attribute or item of `parent` ("" when it may)."""
    if isinstance(value, types.ModuleType):
        return "" if id(value) in _VIEW_IDS else f"the real module {value.__name__!r}"
    if isinstance(value, _RUNNING_CODE):
        return f"a {type(value).__name__} object"
    if not callable(value) or id(value) in SAFE_IDS:
        return ""
    if isinstance(value, types.BuiltinFunctionType) and value.__self__ is parent:
        return ""  # a C method of the object it was read from (a pattern's .match)
    if isinstance(value, (types.MethodType, types.BuiltinFunctionType)) and not (
            value.__self__ is None or isinstance(value.__self__, types.ModuleType)):
        # a method bound to an object is judged by the object (it is its first argument)
        owner = value.__self__ if isinstance(value.__self__, type) else type(value.__self__)
        if audit_package(_class_module(owner)) in _AUDIT_PACKAGES | {"builtins"}:
            return ""
    origin = home(value)
    if audit_package(origin) in _AUDIT_PACKAGES or origin == __name__:  # (the guard's wrappers)
        return ""
    if package_of(origin) in ("builtins", "") and isinstance(value, _C_DESCRIPTORS):
        return ""  # a method of a builtin type (str.upper)
    if (package_of(origin) in ("builtins", "") and isinstance(value, types.BuiltinFunctionType)
            and value.__self__ is None and "." in getattr(value, "__qualname__", "")):
        return ""  # a static method of a builtin type (str.maketrans)
    kind = "class" if isinstance(value, type) else type(value).__name__
    return f"a {kind} of {origin or 'an unknown module'!r}"


# ---- values across the pipe ----

def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get("__type__")
    if tag is None:
        return {k: decode(v) for k, v in value.items()}
    if tag == "datetime":
        return datetime.fromisoformat(value["value"])
    if tag == "date":
        return _datetime_module.date.fromisoformat(value["value"])
    if tag == "time":
        return _datetime_module.time.fromisoformat(value["value"])
    if tag == "timedelta":
        return timedelta(days=value["days"], seconds=value["seconds"], microseconds=value["microseconds"])
    if tag == "Decimal":
        return decimal.Decimal(value["value"])
    if tag == "UUID":
        return uuid.UUID(value["value"])
    if tag == "set":
        return set(decode(value["value"]))
    if tag == "float":
        return float(value["value"])
    if tag == "dict":
        return {decode(k): decode(v) for k, v in value["items"]}
    return {k: decode(v) for k, v in value.items()}


def encode(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__type__": "float", "value": repr(value)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and "__type__" not in value:
            return {k: encode(v) for k, v in value.items()}
        return {"__type__": "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, datetime):
        return {"__type__": "datetime", "value": value.isoformat()}
    if isinstance(value, _datetime_module.date):
        return {"__type__": "date", "value": value.isoformat()}
    if isinstance(value, _datetime_module.time):
        return {"__type__": "time", "value": value.isoformat()}
    if isinstance(value, timedelta):
        return {"__type__": "timedelta", "days": value.days, "seconds": value.seconds,
                "microseconds": value.microseconds}
    if isinstance(value, decimal.Decimal):
        return {"__type__": "Decimal", "value": str(value)}
    if isinstance(value, uuid.UUID):
        return {"__type__": "UUID", "value": str(value)}
    if isinstance(value, (set, frozenset)):
        try:
            return {"__type__": "set", "value": [encode(v) for v in sorted(value)]}
        except TypeError:
            encoded = sorted((encode(v) for v in value), key=lambda e: json.dumps(e, sort_keys=True))
            return {"__type__": "set", "value": encoded}
    return {"__type__": "object", "python_type": type(value).__name__}


# ---- running code ----

class Refused(Exception):
    """Code refused before it runs (dunder attribute access)."""


def check_attributes(tree):
    """Refuses dunder and frame/code attributes; the first one in the source (the innermost of
    `gen.gi_frame.f_back`) is named."""
    refused = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and (node.attr.startswith("__") or node.attr in INSPECT_NAMES)]
    if not refused:
        return
    node = min(refused, key=lambda n: (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
    because = ('it starts with "__"' if node.attr.startswith("__")
               else "it gives access to running code (frames, code objects)")
    raise SyntaxError(f'"{node.attr}" is an invalid attribute name because {because}',
                      (FILE_NAME, node.lineno, node.col_offset + 1, None))


def _helper(name, node):
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)


class Guard(ast.NodeTransformer):
    """Attribute loads, writes and augmented writes through the sandbox's guards."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            call = ast.Call(_helper(".getattr", node), [node.value, ast.Constant(node.attr)], [])
            return ast.copy_location(call, node)
        target = ast.Call(_helper(".target", node), [node.value, ast.Constant(node.attr)], [])
        node.value = ast.copy_location(target, node.value)
        return node

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Attribute):
            return self.generic_visit(node)
        obj = self.visit(node.target.value)
        value = self.visit(node.value)
        call = ast.Call(_helper(".augattr", node),
                        [obj, ast.Constant(node.target.attr), ast.Constant(type(node.op).__name__), value], [])
        return ast.copy_location(ast.Expr(ast.copy_location(call, node)), node)


@functools.lru_cache(maxsize=512)
def compile_checked(source, mode):
    tree = ast.parse(source, FILE_NAME, mode)
    check_attributes(tree)
    tree = ast.fix_missing_locations(Guard().visit(tree))
    return compile(tree, FILE_NAME, mode)


# ---- SpiffArena's script functions (given as its "external context") ----

# what SpiffArena's sanitize_for_md escapes with a backslash (">" left out there on purpose)
MARKDOWN_SPECIALS = r"_*[]()~`#+-=|{}!"


def script_functions(env, data):
    """The functions a script may call, answered from the step's environment."""
    task = env.get("task")

    def get_current_user():
        user = env.get("user")
        return None if user is None else {"username": user, "service_id": user}

    def get_process_initiator_user():
        user = env.get("initiator")
        return None if user is None else {"username": user, "service_id": user}

    def get_toplevel_process_info():
        return {
            "process_instance_id": env.get("process_instance_id"),
            "process_model_identifier": env.get("process_model_identifier"),
        }

    def get_current_task_info():
        return dict(task) if task else {}

    def get_localtime(*args, **kwargs):
        if not args and "datetime" not in kwargs:
            raise ValueError("You must include a datetime to convert.")
        date_time = kwargs["datetime"] if "datetime" in kwargs else args[0]
        zone = kwargs.get("timezone", args[1] if len(args) > 1 else "US/Eastern")
        return date_time.astimezone(pytz.timezone(zone))

    def get_env():
        return env.get("env_identifier")

    def get_frontend_url():
        return env.get("frontend_url")

    def get_secret(key):
        secrets = env.get("secrets") or {}
        if key not in secrets:
            raise KeyError(f"no secret named {key!r}")
        return secrets[key]

    lookup = env.get("lookup") or {"tasks": [], "completed_by": {}}

    def get_last_user_completing_task(*args, **kwargs):
        # SpiffArena's signature: (bpmn_process_identifier, task_bpmn_identifier), this instance.
        if len(args) == 2:
            process, task_name = args
        else:
            process, task_name = kwargs["bpmn_process_identifier"], kwargs["task_bpmn_identifier"]
        user = lookup["completed_by"].get(process, {}).get(task_name)
        return None if user is None else {"username": user, "service_id": user}

    def get_url_for_task_with_bpmn_identifier(*args, **kwargs):
        bpmn_identifier = args[0] if args else None
        if bpmn_identifier is None:
            raise Exception("Bpmn identifier is required for get_url_for_task_with_bpmn_identifier")
        found = [t for t in lookup["tasks"] if t["bpmn_identifier"] == bpmn_identifier]
        # the task that is (or was last) live: the one a person can open
        found.sort(key=lambda t: t["live"])
        if not found:
            raise Exception(
                f"Could not find a task with bpmn identifier '{bpmn_identifier}' in "
                "get_url_for_task_with_bpmn_identifier"
            )
        desired = found[-1]
        if not desired["human"]:
            raise Exception(
                f"Given bpmn identifier ({bpmn_identifier}) represents a task that cannot be completed by "
                "people and therefore it does not have a url to retrieve"
            )
        public_segment = "/public" if kwargs.get("public", True) is True else ""
        return (f"{env.get('frontend_url')}{public_segment}/tasks/"
                f"{env.get('process_instance_id')}/{desired['id']}")

    def get_task_data_value(var_name, default=None):
        return data.get(var_name, default)

    def get_data_sizes(*_args, **_kwargs):
        # SpiffArena's shape. It measures the data of every finished task of the workflow; the
        # worker sees the data of this task only (what the previous one left): that counts as
        # the one task with data. Data json cannot dump (a datetime) counts 0, as there. The
        # Python environment is SpiffArena's default TaskDataEnvironment's: it keeps no state.
        try:
            task_data_size = len(json.dumps([data] if data else []))
        except Exception:
            task_data_size = 0
        name = (task or {}).get("bpmn_identifier")
        return {
            "python_env_size": len(json.dumps({})),
            "python_env_keys": [],
            "task_data_size": task_data_size,
            "task_data_keys_by_task": {name: sorted(data)} if data and name else {},
        }

    def sanitize_for_md(value):
        # SpiffArena's JinjaHelpers.sanitize_for_md (a script global there too)
        escaped = re.sub(f"([{re.escape(MARKDOWN_SPECIALS)}])", r"\\\1", value)
        return escaped.replace("\n", "").replace("\r", "")

    def unavailable(name):
        def refuse(*args, **kwargs):
            raise NotImplementedError(
                f"{name}() needs SpiffArena's user and group directory, which workflow-backend "
                "does not have"
            )

        refuse.__name__ = name
        return refuse

    functions = {
        f.__name__: f
        for f in (get_current_user, get_process_initiator_user, get_toplevel_process_info, get_current_task_info, get_localtime,
                  get_env, get_frontend_url, get_secret, get_task_data_value, get_data_sizes,
                  get_last_user_completing_task, get_url_for_task_with_bpmn_identifier, sanitize_for_md)
    }
    for name in ("get_group_members", "get_groups_for_user", "get_user", "get_all_permissions",
                 "get_users_assigned_to_task",
                 "get_usernames_waiting_for_task", "add_permission", "add_user_to_group"):
        functions[name] = unavailable(name)
    return functions


def kkv_getters(env):
    """SpiffArena's KKV data store reads: `store(top_level_key, secondary_key)` is the value
    (None when absent); `store(top_level_key)` (or a None secondary key) the dict of every
    secondary key under it. The entries come loaded in the request's env."""
    def getter_of(entries):
        def getter(top_level_key, secondary_key=None):
            under = entries.get(top_level_key) or {}
            if secondary_key is not None:
                return decode(under[secondary_key]) if secondary_key in under else None
            return decode(dict(under))

        return getter

    return {name: getter_of(entries) for name, entries in (env.get("kkv") or {}).items()}


def overwritten_globals(data, functions):
    clashes = (set(GLOBALS).intersection(data) | set(functions).intersection(data)
               | set(HELPERS).intersection(data))
    if clashes:
        raise ValueError(
            "You have task data that overwrites a predefined function(s). Please change the "
            f"following variable or field name(s) to something else: {clashes}"
        )


def fresh_globals():
    """The globals, with a copy of the builtins (a script may change its dict)."""
    scope = dict(GLOBALS)
    scope["__builtins__"] = dict(GLOBALS["__builtins__"])
    return scope


def run_exec(source, data, functions, getters):
    code = compile_checked(source, "exec")
    context = dict(data)
    overwritten_globals(context, functions)
    context.update(fresh_globals())
    context.update(functions)
    # a getter is task data in SpiffArena: a script may replace it (to write the store)
    context.update(getters)
    context.update(HELPERS)
    try:
        exec(code, context)
    finally:
        for key in list(context):
            if (key in ("__builtins__", "__annotations__") or key in GLOBALS or key in functions
                    or key in HELPERS or callable(context[key])):
                context.pop(key)
    return context


def run_eval(source, data, functions, getters):
    # eval() of a string drops leading spaces and tabs (not newlines); so does this
    code = compile_checked(source.lstrip(" \t"), "eval")
    scope = fresh_globals()
    scope.update(functions)
    scope.update(data)
    scope.update(getters)
    scope.update(HELPERS)
    return eval(code, scope)


def position(error):
    if isinstance(error, SyntaxError):
        return error.lineno, error.offset
    line = column = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == FILE_NAME:
            line, column = frame.lineno, (frame.colno + 1 if frame.colno is not None else None)
    return line, column


def failure(error):
    line, column = position(error)
    message = error.msg if isinstance(error, SyntaxError) else str(error)
    if isinstance(error, KeyError) and error.args:
        message = repr(error.args[0])
    return {
        "ok": False,
        "error": {"class": type(error).__name__, "message": message, "line": line, "column": column},
        # after a MemoryError the process may be short of memory for good: start afresh
        "fatal": isinstance(error, MemoryError),
    }


def edit_distance(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def did_you_mean(error, names):
    """SpiffWorkflow's hint on a NameError: the (at most three) closest names the data holds,
    compared without regard to case first (then with it, then by name: the order does not
    depend on the order of the data's keys)."""
    match = re.match(r"name '(.+)' is not defined", str(error))
    if not match:
        return ""
    wanted = match.group(1)
    limit = len(wanted) // 3
    scored = sorted(
        (edit_distance(wanted.lower(), name.lower()), edit_distance(wanted, name), name) for name in names
    )
    close = [name for distance, _, name in scored if distance <= limit][:3]
    if len(close) == 1:
        return f" Did you mean '{close[0]}'?"
    if len(close) > 1:
        return f" Did you mean one of '{close}'?"
    return ""


def handle(request):
    global STATE
    STATE = RequestState()
    # the decimal context of this thread is shared by every request: each starts afresh
    decimal.setcontext(decimal.Context())
    answer = audit() if request.get("op") == "audit" else answer_to(request)
    restored = SHARED_STATE.restore()
    if STATE.tainted or not restored:
        answer["fatal"] = True  # a shared object was changed: the pool replaces this worker
    return answer


def answer_to(request):
    op = request["op"]
    source = request["source"]
    data = decode(request.get("data") or {})
    functions = script_functions(request.get("env") or {}, data)
    getters = kkv_getters(request.get("env") or {})
    try:
        if op == "exec":
            return {"ok": True, "data": encode(run_exec(source, data, functions, getters))}
        if op == "eval":
            return {"ok": True, "value": encode(run_eval(source, data, functions, getters))}
        if op == "check":
            mode = request.get("mode", "exec")
            compile_checked(source if mode == "exec" else source.lstrip(" \t"), mode)
            return {"ok": True}
        return {"ok": False, "error": {"class": "RuntimeError", "message": f"unknown op {op}", "line": None,
                                        "column": None}, "fatal": False}
    except BaseException as error:  # noqa: B902  (SystemExit from a script is its failure too)
        answer = failure(error)
        if isinstance(error, NameError):
            answer["error"]["message"] += did_you_mean(error, [k for k in data if isinstance(k, str)])
        return answer


def limit_memory():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                in_use = int(line.split()[1]) * 1024
                break
    limit = in_use + MEMORY_LIMIT_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return in_use


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seal(wall):
    """The OS wall (the server's src/python/wall.rs): after the imports, before the first
    request. No new privileges, then the Landlock ruleset the server left at descriptor
    `landlock_fd`, then the seccomp program it sent (struct sock_filter[], 8 bytes each).
    Raises OSError when the kernel refuses: the worker then does not start."""
    if wall is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    ulong = ctypes.c_ulong
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)), "no_new_privs")
    fd = wall["landlock_fd"]
    check(libc.syscall(ctypes.c_long(wall["sys_landlock_restrict_self"]), fd, 0), "Landlock")
    os.close(fd)
    program = ctypes.create_string_buffer(bytes.fromhex(wall["seccomp"]))
    fprog = SockFprog(len(program.raw) // 8, ctypes.cast(program, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ulong(0), ulong(0)),
          "seccomp")


def run_unguarded(source):
    """Tests of the OS wall: the script with every builtin and no guard, as an escaped script
    would run. Its string variables are the answer."""
    namespace = {"__builtins__": builtins_module}
    exec(compile(source, FILE_NAME, "exec"), namespace)  # noqa: S102
    return {k: v for k, v in namespace.items() if isinstance(v, str) and not k.startswith("__")}


def main():
    # Nobody reads stderr once the worker is ready: a script's warnings (a SyntaxWarning on each
    # compile, say) must not fill the pipe and stall the worker.
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    # Answers go out on a copy of stdout; stdout itself is /dev/null, so that what a script
    # makes print (calendar.prmonth(), calendar.main()) cannot garble the answers.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    in_use = limit_memory()
    try:
        seal(loads(sys.stdin.readline())["wall"])
    except Exception as error:  # the server refuses to run scripts without the wall it asked
        out.write(dumps({"ready": False, "error": f"the OS wall could not be applied: {error}"}) + "\n")
        out.flush()
        return
    out.write(dumps({"ready": True, "baseline_bytes": in_use}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = loads(line)
            if request["op"] == "exec_unguarded" and UNGUARDED_FOR_TESTS:
                try:
                    answer = {"ok": True, "data": run_unguarded(request["source"])}
                except BaseException as error:  # noqa: B902
                    answer = failure(error)
            else:
                answer = handle(request)
            text = dumps(answer, ensure_ascii=False, allow_nan=False)
        except MemoryError:
            text = dumps(failure(MemoryError("out of memory")))
        except Exception as error:  # an answer that cannot be encoded
            text = dumps(failure(error))
        out.write(text + "\n")
        out.flush()


main()
