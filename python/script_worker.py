"""Script worker: runs SpiffArena-dialect Python for workflow-backend, one request at a time.

The server starts a few of these processes (`python3 -I -S -u -c <this file> PACKAGES MEMORY_MB`)
and talks to each over stdin/stdout, one JSON object per line:

  request  {"op": "exec" | "eval" | "check", "source": str, "data": {...}, "mode": "exec"|"eval"}
  answer   {"ok": true, "data": {...}}            exec: the task data after the script
           {"ok": true, "value": ...}             eval: the expression's value
           {"ok": true}                           check: the source compiles
           {"ok": false, "error": {"class", "message", "line", "column"}, "fatal": bool}

Semantics are SpiffArena's: CPython `exec`/`eval` with its default globals, RestrictedPython's
safe builtins, and an `__import__` that only hands out names present in the globals; its
script functions (`get_current_user()`, `get_secret(key)`, ...) answered from the request's
"env"; a script runs with the task data as its globals, and afterwards the globals, the
functions, `__builtins__` and every callable are removed from the data (SpiffWorkflow's
TaskDataEnvironment rule). Stricter than
SpiffArena in one respect: dunder attributes (`().__class__`) are refused before the code runs.

Limits: the address space is capped at start-up (what the imports use, plus MEMORY_MB), so a
memory bomb raises MemoryError here; the time limit is the server's: it kills the process.
Values that are not JSON cross the pipe tagged: {"__type__": "datetime", "value": iso}, ...
"""

import ast
import calendar
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

sys.path.insert(0, sys.argv[1])
MEMORY_LIMIT_MB = int(sys.argv[2])

import _strptime  # noqa: E402  (a SpiffArena global)

import dateparser  # noqa: E402
import pytz  # noqa: E402
from RestrictedPython import safe_globals  # noqa: E402

FILE_NAME = "<script>"
datetime = _datetime_module.datetime
timedelta = _datetime_module.timedelta


def _import(name, glbls, *args):
    if name not in glbls:
        raise ImportError(f"Import not allowed: {name}", name=name)
    return glbls[name]


def _safe_attribute_setter(original):
    def guarded(obj, name, *rest):
        if isinstance(name, str) and name.startswith("__"):
            raise AttributeError(f'"{name}" is an invalid attribute name because it starts with "__"')
        return original(obj, name, *rest)

    guarded.__name__ = original.__name__
    return guarded


def default_globals():
    """SpiffArena's script globals (process_instance_script_engine.py) with safe builtins."""
    builtins = dict(safe_globals["__builtins__"])
    builtins["__import__"] = _import
    for name in ("setattr", "delattr"):
        builtins[name] = _safe_attribute_setter(builtins[name])
    return {
        "_strptime": _strptime,
        "all": all,
        "any": any,
        "calendar": calendar,
        "dateparser": dateparser,
        "datetime": datetime,
        "decimal": decimal,
        "dict": dict,
        "enumerate": enumerate,
        "filter": filter,
        "format": format,
        "json": json,
        "list": list,
        "map": map,
        "max": max,
        "min": min,
        "pytz": pytz,
        "random": random,
        "re": re,
        "set": set,
        "sum": sum,
        "time": time,
        "timedelta": timedelta,
        "uuid": uuid,
        "__builtins__": builtins,
    }


GLOBALS = default_globals()


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
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise SyntaxError(
                f'"{node.attr}" is an invalid attribute name because it starts with "__"',
                (FILE_NAME, node.lineno, node.col_offset + 1, None),
            )


def compile_checked(source, mode):
    tree = ast.parse(source, FILE_NAME, mode)
    check_attributes(tree)
    return compile(tree, FILE_NAME, mode)


# ---- SpiffArena's script functions (given as its "external context") ----

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

    def get_data_sizes():
        return {"task_data_size": len(json.dumps(encode(data)))}

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
                  get_last_user_completing_task, get_url_for_task_with_bpmn_identifier)
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
    clashes = set(GLOBALS).intersection(data) | set(functions).intersection(data)
    if clashes:
        raise ValueError(
            "You have task data that overwrites a predefined function(s). Please change the "
            f"following variable or field name(s) to something else: {clashes}"
        )


def run_exec(source, data, functions, getters):
    code = compile_checked(source, "exec")
    context = dict(data)
    overwritten_globals(context, functions)
    context.update(GLOBALS)
    context.update(functions)
    # a getter is task data in SpiffArena: a script may replace it (to write the store)
    context.update(getters)
    try:
        exec(code, context)
    finally:
        for key in list(context):
            if (key in ("__builtins__", "__annotations__") or key in GLOBALS or key in functions
                    or callable(context[key])):
                context.pop(key)
    return context


def run_eval(source, data, functions, getters):
    # eval() of a string drops leading spaces and tabs (not newlines); so does this
    code = compile_checked(source.lstrip(" \t"), "eval")
    scope = dict(GLOBALS)
    scope.update(functions)
    scope.update(data)
    scope.update(getters)
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


def main():
    # Nobody reads stderr once the worker is ready: a script's warnings (a SyntaxWarning on each
    # compile, say) must not fill the pipe and stall the worker.
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    in_use = limit_memory()
    out = sys.stdout
    out.write(json.dumps({"ready": True, "baseline_bytes": in_use}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            answer = handle(json.loads(line))
            text = json.dumps(answer, ensure_ascii=False, allow_nan=False)
        except MemoryError:
            text = json.dumps(failure(MemoryError("out of memory")))
        except Exception as error:  # an answer that cannot be encoded
            text = json.dumps(failure(error))
        out.write(text + "\n")
        out.flush()


main()
