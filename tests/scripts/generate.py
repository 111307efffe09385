#!/usr/bin/env python3
"""Generate tests/scripts/cases.json: what SpiffArena's Python does with each case.

The expected values come from SpiffWorkflow itself (its PythonScriptEngine and
TaskDataEnvironment classes, set up with SpiffArena's globals), never from
workflow-backend's runtime. See README.md in this folder for the contract.

Rerun (from the repository root; the venv is .venv-spiff, which git ignores):

    python3 -m venv .venv-spiff
    .venv-spiff/bin/pip install -r tests/scripts/requirements-generator.txt
    .venv-spiff/bin/python tests/scripts/generate.py            # writes cases.json
    .venv-spiff/bin/python tests/scripts/generate.py --check    # fails if cases.json is stale

Input: cases.src.json beside this file. Output: cases.json beside this file,
deterministic (sorted keys, no timestamps): the same inputs and the pinned
versions give a byte-identical file. The generator pins TZ=UTC before anything
reads the clock's zone, and refuses to run when an installed version differs
from requirements-generator.txt.
"""
import os
import time

os.environ["TZ"] = "UTC"  # before dateparser/tzlocal/pytz look at the local zone
time.tzset()

import decimal  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import uuid  # noqa: E402
from datetime import date, datetime, timedelta  # noqa: E402
from datetime import time as dtime  # noqa: E402
from importlib import metadata  # noqa: E402

from SpiffWorkflow.bpmn.exceptions import WorkflowTaskException  # noqa: E402
from SpiffWorkflow.bpmn.script_engine import PythonScriptEngine, TaskDataEnvironment  # noqa: E402
from SpiffWorkflow.bpmn.workflow import BpmnWorkflow  # noqa: E402
from SpiffWorkflow.exceptions import SpiffWorkflowException, WorkflowException  # noqa: E402
from SpiffWorkflow.spiff.parser.process import SpiffBpmnParser  # noqa: E402
from spiffarena_env import spiffarena_globals  # noqa: E402  (beside this file)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "cases.src.json")
OUT = os.path.join(HERE, "cases.json")
REQUIREMENTS = os.path.join(HERE, "requirements-generator.txt")


# ---------------------------------------------------------------------------
# The engine, set up the way SpiffArena's CustomBpmnScriptEngine sets it up
# (spiffworkflow-backend services/process_instance_script_engine.py), less the
# JinjaHelpers and the augmented script functions (get_current_user, ...).
# ---------------------------------------------------------------------------

class ArenaTaskDataEnvironment(TaskDataEnvironment):
    """SpiffArena's TaskDataBasedScriptEngineEnvironment: TaskDataEnvironment, then drop __annotations__."""

    def execute(self, script, context, external_context=None):
        super().execute(script, context, external_context)
        context.pop("__annotations__", None)
        return True


class ArenaScriptEngine(PythonScriptEngine):
    """SpiffArena's CustomBpmnScriptEngine.evaluate/execute wrappers, with no augmented methods."""

    def evaluate(self, task, expression, external_context=None):
        methods = {}
        if external_context:
            methods.update(external_context)
        try:
            return super().evaluate(task, expression, external_context=methods)
        except Exception as exception:
            raise WorkflowTaskException(
                f"Error evaluating expression '{expression}', {str(exception)}", task=task, exception=exception
            ) from exception

    def execute(self, task, script, external_context=None):
        try:
            methods = {}
            if external_context:
                methods.update(external_context)
            if script:
                super().execute(task, script, methods)
            return True
        except WorkflowException:
            raise
        except Exception as e:
            raise self.create_task_exec_exception(task, script, e) from e


# A one-task process: it only gives the engine a real SpiffWorkflow Task to run against.
HOST_BPMN = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="host_definitions"
    targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="host_process" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="host" />
    <bpmn:scriptTask id="host" name="Conformance case"><bpmn:incoming>f1</bpmn:incoming>
      <bpmn:outgoing>f2</bpmn:outgoing><bpmn:script>pass</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="host" targetRef="end" />
    <bpmn:endEvent id="end"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"""


def host_spec():
    parser = SpiffBpmnParser()
    parser.add_bpmn_str(HOST_BPMN, filename="conformance_host.bpmn")
    return parser.get_spec("host_process")


# ---------------------------------------------------------------------------
# Encoding of values (the contract with the Rust test; see README.md)
# ---------------------------------------------------------------------------

def _sort_set(items):
    try:
        ordered = sorted(items)
    except TypeError:
        return sorted((encode(x) for x in items), key=lambda e: json.dumps(e, sort_keys=True))
    return [encode(x) for x in ordered]


def encode(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isfinite(v):
            return float(v)
        return {"__type__": "float", "value": repr(v)}  # 'inf', '-inf', 'nan'
    if isinstance(v, datetime):
        return {"__type__": "datetime", "value": v.isoformat()}
    if isinstance(v, date):
        return {"__type__": "date", "value": v.isoformat()}
    if isinstance(v, dtime):
        return {"__type__": "time", "value": v.isoformat()}
    if isinstance(v, timedelta):
        return {"__type__": "timedelta", "days": v.days, "seconds": v.seconds, "microseconds": v.microseconds}
    if isinstance(v, decimal.Decimal):
        return {"__type__": "Decimal", "value": str(v)}
    if isinstance(v, uuid.UUID):
        return {"__type__": "UUID", "value": str(v)}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return {"__type__": "set", "value": _sort_set(v)}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and "__type__" not in v:
            return {k: encode(x) for k, x in v.items()}
        return {"__type__": "dict", "items": [[encode(k), encode(x)] for k, x in v.items()]}
    return {"__type__": "object", "python_type": type(v).__name__}


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    tag = v.get("__type__")
    if tag is None:
        return {k: decode(x) for k, x in v.items()}
    if tag == "datetime":
        return datetime.fromisoformat(v["value"])
    if tag == "date":
        return date.fromisoformat(v["value"])
    if tag == "time":
        return dtime.fromisoformat(v["value"])
    if tag == "timedelta":
        return timedelta(days=v["days"], seconds=v["seconds"], microseconds=v["microseconds"])
    if tag == "Decimal":
        return decimal.Decimal(v["value"])
    if tag == "UUID":
        return uuid.UUID(v["value"])
    if tag == "set":
        return set(decode(x) for x in v["value"])
    if tag == "float":
        return float(v["value"])
    if tag == "dict":
        return {decode(k): decode(x) for k, x in v["items"]}
    raise ValueError(f"cannot decode input value tagged {tag!r}")


# ---------------------------------------------------------------------------
# Running the cases
# ---------------------------------------------------------------------------

def original_exception(exc):
    """Unwrap SpiffWorkflow's exception wrappers to the exception that caused them."""
    seen = set()
    while isinstance(exc, SpiffWorkflowException) and id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return exc


def error_of(exc):
    exc = original_exception(exc)
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return {"error": {"class": type(exc).__name__, "message": message}}


def type_name(v):
    return type(v).__name__


def run_case(engine, spec, case):
    workflow = BpmnWorkflow(spec, script_engine=engine)
    task = workflow.get_next_task(spec_name="host")
    task.data = decode(case.get("data", {}))
    nondeterministic = case.get("nondeterministic", False)
    try:
        if case["kind"] == "script":
            engine.execute(task, case["source"])
            if nondeterministic:
                return {"type_only": {k: type_name(x) for k, x in task.data.items()}}
            return {"data": encode(task.data)}
        if case["kind"] == "expression":
            value = engine.evaluate(task, case["source"])
            if nondeterministic:
                return {"type_only": type_name(value)}
            return {"value": encode(value)}
        raise AssertionError("unreachable: kinds are validated")
    except BaseException as e:  # noqa: BLE001 - a script may raise anything, even KeyboardInterrupt
        return error_of(e)


def pinned_versions():
    pins = {}
    with open(REQUIREMENTS, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, version = line.split("==")
                pins[name.strip()] = version.strip()
    return pins


def check_versions():
    pins = pinned_versions()
    wrong = []
    for name, version in sorted(pins.items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            wrong.append(f"{name}: pinned {version}, installed {installed}")
    if wrong:
        raise SystemExit("installed versions differ from requirements-generator.txt:\n  " + "\n  ".join(wrong))
    return pins


def validate_src(src):
    ids = set()
    for case in src["cases"]:
        for key in ("id", "kind", "source", "data", "origin"):
            if key not in case:
                raise SystemExit(f"case {case.get('id')!r} lacks {key!r}")
        if case["kind"] not in ("script", "expression"):
            raise SystemExit(f"case {case['id']!r}: kind must be 'script' or 'expression'")
        if case["id"] in ids:
            raise SystemExit(f"duplicate case id {case['id']!r}")
        ids.add(case["id"])
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", case["id"]):
            raise SystemExit(f"case id is not a slug: {case['id']!r}")


def generate():
    pins = check_versions()
    with open(SRC, encoding="utf-8") as f:
        src = json.load(f)
    validate_src(src)
    engine = ArenaScriptEngine(environment=ArenaTaskDataEnvironment(spiffarena_globals()))
    spec = host_spec()
    out_cases = []
    for case in src["cases"]:
        result = dict(case)
        result["expected"] = run_case(engine, spec, case)
        out_cases.append(result)
    return {
        "generator": {
            "python": "%d.%d" % sys.version_info[:2],
            "packages": pins,
            "engine": "SpiffWorkflow PythonScriptEngine + TaskDataEnvironment with SpiffArena's default globals "
                      "and RestrictedPython safe_globals (restricted __import__); no JinjaHelpers, no script functions",
            "tz": "UTC",
        },
        "cases": out_cases,
        "skipped": src.get("skipped", []),
    }


def dump(doc):
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv):
    text = dump(generate())
    if "--check" in argv:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                raise SystemExit("cases.json is stale: rerun generate.py")
        print("cases.json is up to date")
        return
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    doc = json.loads(text)
    errors = sum(1 for c in doc["cases"] if "error" in c["expected"])
    print(f"wrote {OUT}: {len(doc['cases'])} cases ({errors} expect an error), {len(doc['skipped'])} skipped")


if __name__ == "__main__":
    main(sys.argv[1:])
