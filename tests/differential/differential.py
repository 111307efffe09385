"""The differential test: every model of SpiffWorkflow's test suite runs in SpiffWorkflow 3.2
(with SpiffArena's script environment) and in the service, driven the same way, and the
outcomes are compared.

A model is one .bpmn file of the corpus, with the files it needs (the processes its call
activities call and the decisions its business rule tasks evaluate, found in the corpus). Its
process is the one the service starts: the first process, in the order the files are uploaded,
with a plain (none) start event, else the first process. Both sides are driven without input:
user and manual tasks are completed with `{}`, timers due within TIMER_WINDOW seconds fire (the
reference polls its waiting timers, the service's timer worker fires them), service tasks call
the fake connector (fake_connector.py). The outcome of a side is its status (`complete`,
`waiting`, `error`, or `refused` when the model does not load or start), its data and data
objects when complete, and its error type (compared by Python class where both name one).

Usage: python differential.py SERVER_URL TOKEN CORPUS CONNECTOR_URL ALLOWLIST REPORT [FILTER]
(tests/differential/run starts the server and the fake connector and calls this.)
Exit status 1 when a model's outcomes differ and the allowlist does not name it.
"""

import datetime as datetime_module
import json
import re
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

import pytz
from lxml import etree
from SpiffWorkflow.bpmn.script_engine import PythonScriptEngine, TaskDataEnvironment
from SpiffWorkflow.bpmn.specs.event_definitions.timer import TimerEventDefinition
from SpiffWorkflow.bpmn.workflow import BpmnWorkflow
from SpiffWorkflow.spiff.parser.process import SpiffBpmnParser
from SpiffWorkflow.util.task import TaskState

# SpiffArena's script environment, shared with the generator of tests/scripts/cases.json
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from spiffarena_env import spiffarena_globals  # noqa: E402

MODEL_TIME_LIMIT = 20  # seconds a side may spend on one model (a loop that never waits)
TIMER_WINDOW = 3.0  # seconds: timers due within this long after the start fire
# seconds: a timer due within this long fires before ready user and manual tasks are completed
# (so that a model with a boundary timer of a few milliseconds on a user task, as the corpus has,
# takes the same path on both sides every time)
SETTLE = 0.5
MAX_STEPS = 200  # rounds of driving a side; a model that is still busy then counts as waiting
BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
SPIFF = "http://spiffworkflow.org/bpmn/schema/1.0/core"
ENV_IDENTIFIER = "local"  # what get_env() answers: the service's default

# ---------------------------------------------------------------------------------------------
# The reference: SpiffWorkflow 3.2 with SpiffArena's script environment
# ---------------------------------------------------------------------------------------------


def sanitize_for_md(value):
    """SpiffArena's Jinja helper (also a script global): markdown specials escaped, no newlines."""
    specials = r"_*[]()~`#+-=|{}!"
    escaped = re.sub(f"([{re.escape(specials)}])", r"\\\1", value)
    return escaped.replace("\n", "").replace("\r", "")


class SpiffArenaScriptEngine(PythonScriptEngine):
    """SpiffArena's engine as far as a model without users can tell: its globals, its
    deterministic script functions (the others need its users, database or clock), and service
    tasks sent to a connector proxy."""

    def __init__(self, connector_url):
        super().__init__(environment=TaskDataEnvironment(spiffarena_globals(sanitize_for_md=sanitize_for_md)))
        self.connector_url = connector_url

    def functions(self, task):
        def get_env():
            return ENV_IDENTIFIER

        def get_task_data_value(name, default=None):
            value = task.data.get(name) if task is not None else None
            return default if value is None else value

        def get_localtime(*args, **kwargs):
            """A datetime in a time zone (US/Eastern unless one is named)."""
            if not args and "datetime" not in kwargs:
                raise ValueError("You must include a datetime to convert.")
            moment = kwargs["datetime"] if "datetime" in kwargs else args[0]
            zone = kwargs.get("timezone", args[1] if len(args) > 1 else "US/Eastern")
            return moment.astimezone(pytz.timezone(zone))

        return {"get_env": get_env, "get_task_data_value": get_task_data_value,
                "get_localtime": get_localtime}

    def evaluate(self, task, expression, external_context=None):
        context = self.functions(task)
        context.update(external_context or {})
        return super().evaluate(task, expression, external_context=context)

    def execute(self, task, script, external_context=None):
        context = self.functions(task)
        context.update(external_context or {})
        return super().execute(task, script, external_context=context)

    def call_service(self, task, operation_name=None, operation_params=None, **_):
        """SpiffArena's delegate: each parameter's value posted to the proxy; the result is the
        whole command_response with the operator's id."""
        body = {name: param["value"] for name, param in (operation_params or {}).items()}
        body["spiff__task_data"] = task.data
        answer = post_json(f"{self.connector_url}/v1/do/{operation_name}", body)
        if answer.get("error"):
            raise RuntimeError(f"connector error: {answer['error']}")
        result = dict(answer.get("command_response") or {})
        result["operator_identifier"] = operation_name
        return json.dumps(result)


def post_json(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body, default=str).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def error_type(exception):
    """The Python exception under SpiffWorkflow's wrappers (a script's or expression's
    NameError, TypeError, ...), else the exception's own type (WorkflowDataException, ...)."""
    seen = exception
    for _ in range(5):
        inner = seen.__cause__
        if inner is None:
            break
        seen = inner
    wrapped = getattr(seen, "error_type", None)  # WorkflowTaskException keeps the class's name
    return wrapped if isinstance(wrapped, str) and wrapped != "unknown" else type(seen).__name__


def has_waiting_timer(workflow):
    for task in workflow.get_tasks(state=TaskState.WAITING):
        definition = getattr(task.task_spec, "event_definition", None)
        definitions = [definition] + list(getattr(definition, "event_definitions", []))
        if any(isinstance(d, TimerEventDefinition) for d in definitions):
            return True
    return False


class ModelTimeLimit(Exception):
    """A side spent MODEL_TIME_LIMIT seconds on one model."""


def on_alarm(*_):
    raise ModelTimeLimit(f"still running after {MODEL_TIME_LIMIT} s")


def run_reference(model, connector_url):
    """Loads and drives the model in SpiffWorkflow (for at most MODEL_TIME_LIMIT seconds)."""
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(MODEL_TIME_LIMIT)
    try:
        return drive_reference(model, connector_url)
    except ModelTimeLimit as exception:
        return {"status": "busy", "error_type": "ModelTimeLimit", "detail": str(exception)}
    finally:
        signal.alarm(0)


def drive_reference(model, connector_url):
    try:
        parser = SpiffBpmnParser()
        for path in model["files"]:
            if path.suffix == ".dmn":
                parser.add_dmn_file(str(path))
            else:
                parser.add_bpmn_file(str(path))
        spec = parser.get_spec(model["process_id"])
        subprocesses = parser.get_subprocess_specs(model["process_id"])
        workflow = BpmnWorkflow(spec, subprocesses, script_engine=SpiffArenaScriptEngine(connector_url))
    except ModelTimeLimit:
        raise
    except Exception as exception:  # the model does not load
        return {"status": "refused", "error_type": type(exception).__name__, "detail": str(exception)[:300]}
    deadline = time.monotonic() + TIMER_WINDOW
    settled = False
    try:
        for _ in range(MAX_STEPS):
            workflow.do_engine_steps()
            if workflow.is_completed():
                break
            manual = [t for t in workflow.get_tasks(state=TaskState.READY) if t.task_spec.manual]
            if manual and has_waiting_timer(workflow) and not settled:
                # a timer due at once fires before the tasks are completed (as on the service)
                time.sleep(SETTLE)
                workflow.refresh_waiting_tasks()
                settled = True
                continue
            settled = False
            if manual:
                for task in manual:
                    task.run()
                continue
            before = len(workflow.get_tasks(state=TaskState.WAITING))
            workflow.refresh_waiting_tasks()
            if workflow.get_tasks(state=TaskState.READY):
                continue
            if has_waiting_timer(workflow) and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            if before == len(workflow.get_tasks(state=TaskState.WAITING)):
                break
    except ModelTimeLimit:
        raise
    except Exception as exception:
        return {"status": "error", "error_type": error_type(exception), "detail": str(exception)[:300]}
    if workflow.is_completed():
        data = dict(workflow.data)
        data_objects = data.pop("data_objects", {})  # SpiffWorkflow keeps them in the data
        return {"status": "complete", "data": normalised(data), "data_objects": normalised(data_objects)}
    return {"status": "waiting", "waiting_for": waiting_elements_of(workflow)}


def waiting_elements_of(workflow):
    return sorted({
        t.task_spec.bpmn_id
        for t in workflow.get_tasks(state=TaskState.WAITING | TaskState.READY | TaskState.STARTED)
        if getattr(t.task_spec, "bpmn_id", None)
    })


def normalised(data):
    """Task data as JSON would carry it (dates as ISO strings, tuples as lists)."""
    def default(value):
        if isinstance(value, (datetime_module.date, datetime_module.datetime)):
            return value.isoformat()
        if isinstance(value, (set, frozenset)):
            return sorted(value, key=repr)
        return str(value)

    return json.loads(json.dumps(data, default=default, sort_keys=True))


# ---------------------------------------------------------------------------------------------
# The service, over HTTP
# ---------------------------------------------------------------------------------------------


class Service:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method, path, body=None, content_type="application/json"):
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, {"detail": raw[:300].decode(errors="replace")}


HUMAN_TASKS = ("userTask", "manualTask")
LIVE = {"running", "waiting", "user_input_required", "suspended"}


def run_service(service, model, identifier):
    """Uploads the model, starts it and drives it; its outcome. The model is deleted after."""
    url_id = identifier.replace("/", ":")
    try:
        files = list(zip(model["files"], model["upload_names"]))
        ordered = [f for f in reversed(files) if f[0].suffix == ".bpmn"] + [f for f in files if f[0].suffix == ".dmn"]
        for path, name in ordered:
            status, answer = service.call(
                "PUT", f"/v1.0/process-models/{url_id}/files/{urllib.parse.quote(name)}",
                path.read_text(encoding="utf-8"), content_type="application/xml",
            )
            if status >= 300:
                return {"status": "refused", "error_type": (answer or {}).get("error_code"),
                        "detail": str((answer or {}).get("detail"))[:300], "stage": "upload"}
        status, answer = service.call("POST", f"/v1.0/process-instances/{url_id}", {})
        if status >= 300:
            return {"status": "refused", "error_type": (answer or {}).get("error_code"),
                    "detail": str((answer or {}).get("detail"))[:300], "stage": "start"}
        instance_id = answer["process_instance"]["id"]
        return drive_service(service, instance_id)
    finally:
        clean_up(service, url_id)


def drive_service(service, instance_id):
    deadline = time.monotonic() + TIMER_WINDOW
    detail = None
    for _ in range(MAX_STEPS):
        _, detail = service.call("GET", f"/v1.0/process-instances/{instance_id}")
        status = detail["status"]
        if status not in LIVE:
            break
        live = [t for t in detail["tasks"] if t["state"] in ("READY", "WAITING", "STARTED")]
        manual = [t for t in live if t["element_type"] in HUMAN_TASKS]
        if manual and any(due_in(t["due_at"]) < SETTLE for t in detail["pending_timers"]):
            time.sleep(0.05)  # a timer due at once fires before the tasks are completed
            continue
        if manual:
            for task in manual:
                service.call("PUT", f"/v1.0/tasks/{instance_id}/{task['guid']}", {})
            continue
        # the timer worker fires timers, the connector worker calls the connector: wait for them
        timers_soon = [t for t in detail["pending_timers"]
                       if due_in(t["due_at"]) < TIMER_WINDOW + 1]
        calls = [t for t in live if t["element_type"] == "serviceTask"
                 and (t["retry_at"] is None or due_in(t["retry_at"]) < TIMER_WINDOW + 1)]
        if (timers_soon or calls) and time.monotonic() < deadline + 2:
            time.sleep(0.1)
            continue
        break
    status = detail["status"]
    if status == "complete":
        return {"status": "complete", "data": detail["data"], "data_objects": detail["data_objects"]}
    if status == "error":
        error = detail.get("error") or {}
        message = str(error.get("message"))
        # a script's or expression's error names its Python class first ("NameError: ...")
        python_class = re.match(r"([A-Za-z_]\w*(?:Error|Exception)): ", message)
        kind = error.get("error_code") or (python_class.group(1) if python_class else "engine_error")
        return {"status": "error", "error_type": kind, "detail": message[:300]}
    if status in LIVE:
        waiting = sorted({t["element_id"] for t in detail["tasks"]
                          if t["state"] in ("READY", "WAITING", "STARTED")})
        return {"status": "waiting", "waiting_for": waiting}
    return {"status": status}


def due_in(timestamp):
    due = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (due - datetime.now(datetime_module.timezone.utc)).total_seconds()


def clean_up(service, url_id):
    _, answer = service.call("GET", f"/v1.0/process-instances?process_model_identifier={url_id}&per_page=500")
    for instance in (answer or {}).get("results", []):
        if instance.get("status") not in ("complete", "terminated"):
            service.call("POST", f"/v1.0/process-instances/{instance['id']}/terminate")
    service.call("DELETE", f"/v1.0/process-models/{url_id}")


# ---------------------------------------------------------------------------------------------
# The models of the corpus
# ---------------------------------------------------------------------------------------------


def read_definitions(path):
    """What a file defines and needs: its processes (id, has a none start), the processes its
    call activities call, the decisions it evaluates."""
    try:
        root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    except etree.XMLSyntaxError:
        return None
    processes = []
    for process in root.iter(f"{{{BPMN}}}process"):
        starts = [s for s in process if s.tag == f"{{{BPMN}}}startEvent"]
        none_start = any(
            not any(child.tag.endswith("EventDefinition") for child in s) for s in starts
        )
        processes.append((process.get("id"), none_start))
    calls = {c.get("calledElement") for c in root.iter(f"{{{BPMN}}}callActivity") if c.get("calledElement")}
    decisions = {d.text.strip() for d in root.iter(f"{{{SPIFF}}}calledDecisionId") if d.text}
    decision_ids = {d.get("id") for d in root.iter() if isinstance(d.tag, str) and d.tag.endswith("}decision")}
    return {"processes": processes, "calls": calls, "decisions": decisions, "decision_ids": decision_ids}


def models_of(corpus):
    """Every .bpmn file of the corpus as a model: the file, what it needs, its process."""
    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".bpmn", ".dmn"))
    defined = {p: read_definitions(p) for p in files}
    models = []
    for path in files:
        if path.suffix != ".bpmn":
            continue
        relative = str(path.relative_to(corpus))
        if defined[path] is None:
            models.append({"name": relative, "files": [path], "process_id": None})
            continue
        needed = dependencies(path, defined)
        process_id = primary_process([defined[p] for p in needed])
        models.append({"name": relative, "files": needed, "process_id": process_id})
    for model in models:
        model["upload_names"] = upload_names(model["files"])
    return models


def dependencies(path, defined):
    """The file, then the files that define what it calls, transitively: the nearest file
    (same folder first) that defines each called process or decision."""
    needed = [path]
    wanted_processes = set(defined[path]["calls"])
    wanted_decisions = set(defined[path]["decisions"])
    have_processes = {pid for pid, _ in defined[path]["processes"]}
    have_decisions = set(defined[path]["decision_ids"])
    while True:
        missing_p = wanted_processes - have_processes
        missing_d = wanted_decisions - have_decisions
        candidate = None
        for other in sorted(defined, key=lambda p: (p.parent != path.parent, str(p))):
            info = defined[other]
            if other in needed or info is None:
                continue
            if missing_p & {pid for pid, _ in info["processes"]} or missing_d & info["decision_ids"]:
                candidate = other
                break
        if candidate is None:
            return needed
        needed.append(candidate)
        info = defined[candidate]
        have_processes |= {pid for pid, _ in info["processes"]}
        have_decisions |= info["decision_ids"]
        wanted_processes |= info["calls"]
        wanted_decisions |= info["decisions"]


def primary_process(definitions):
    """The service's rule: the first process (file order) with a none start, else the first."""
    processes = [p for d in definitions for p in d["processes"]]
    for pid, none_start in processes:
        if none_start:
            return pid
    return processes[0][0] if processes else None


def upload_names(paths):
    """Names the service accepts, in an order that keeps the model's own file first."""
    names = []
    for index, path in enumerate(paths):
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)
        names.append(f"{index:02d}-{stem}{path.suffix}")
    return names


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------


def differences(reference, served, ignore_keys=()):
    """What differs between two outcomes: the status, and the data and data objects of a
    complete run (but for the keys an allowlist entry says hold values of the moment)."""
    found = []
    if reference["status"] != served["status"]:
        found.append(f"status: reference {reference['status']}, service {served['status']}")
        return found
    if reference["status"] == "error":
        # the Python class of a script's or expression's error; SpiffWorkflow's own checks
        # (WorkflowDataException) and the service's (engine_error) say the same in other words
        python_classes = [o.get("error_type") for o in (reference, served)]
        if all(c and c.endswith("Error") for c in python_classes) and python_classes[0] != python_classes[1]:
            found.append(f"error type: reference {python_classes[0]}, service {python_classes[1]}")
        return found
    if reference["status"] != "complete":
        return found
    for part in ("data", "data_objects"):
        ours = {k: v for k, v in (reference.get(part) or {}).items() if k not in ignore_keys}
        theirs = {k: v for k, v in (served.get(part) or {}).items() if k not in ignore_keys}
        changed = [k for k in sorted(set(ours) | set(theirs))
                   if ours.get(k, "<absent>") != theirs.get(k, "<absent>")]
        if changed:
            found.append(f"{part} differs in {changed}")
    return found


def load_allowlist(path):
    """`{model: entry}` from the allowlist: a JSON list of {"model", "reason"}, or
    {"model", "reason", "ignore_keys"} for a model whose data holds values of the moment (the
    time of the run): compared without those keys, and any other difference fails."""
    entries = json.loads(Path(path).read_text())
    allowed = {}
    for entry in entries:
        if not entry.get("reason") or not entry.get("model"):
            raise SystemExit(f"allowlist entry without a model or a reason: {entry}")
        allowed[entry["model"]] = entry
    return allowed


def verdict_of(model, reference, served, allowed):
    entry = allowed.get(model["name"])
    if entry and entry.get("ignore_keys"):
        if differences(reference, served):
            diff = differences(reference, served, entry["ignore_keys"])
            return ("DIFFERENT" if diff else "allowlisted"), diff or differences(reference, served)
        return "identical", []
    diff = differences(reference, served)
    if not diff:
        return "identical", []
    return ("allowlisted" if entry else "DIFFERENT"), diff


def main():
    server_url, token, corpus, connector_url, allowlist_path, report_path = sys.argv[1:7]
    only = sys.argv[7] if len(sys.argv) > 7 else None
    corpus = Path(corpus)
    allowed = load_allowlist(allowlist_path)
    service = Service(server_url, token)
    models = models_of(corpus)
    total = len(models)
    if only:
        models = [m for m in models if only in m["name"]]
    rows = []
    for index, model in enumerate(models):
        reference = run_reference(model, connector_url)
        served = run_service(service, model, f"differential/m{index}")
        verdict, diff = verdict_of(model, reference, served, allowed)
        rows.append({"model": model["name"], "process_id": model["process_id"],
                     "files": [str(p.relative_to(corpus)) for p in model["files"]],
                     "verdict": verdict, "differences": diff, "reason": (allowed.get(model["name"]) or {}).get("reason"),
                     "reference": reference, "service": served})
        print(f"{verdict:11} {model['name']}" + (f"  ({'; '.join(diff)})" if diff else ""), flush=True)
    write_report(rows, allowed, report_path)
    return summarise(rows, allowed, total, filtered=bool(only))


def write_report(rows, allowed, report_path):
    """The JSON report (every model, both outcomes in full) and a table beside it (.md)."""
    Path(report_path).write_text(json.dumps(rows, indent=1, sort_keys=True, default=str) + "\n")
    lines = ["| model | verdict | SpiffWorkflow | service | differences, reason |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        cells = [row["model"], row["verdict"], outcome_cell(row["reference"]), outcome_cell(row["service"]),
                 "; ".join(row["differences"] + ([row["reason"]] if row["reason"] else []))]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    Path(report_path).with_suffix(".md").write_text("\n".join(lines) + "\n")


def outcome_cell(outcome):
    """status, error type, and the data's keys of a complete run."""
    text = outcome["status"]
    if outcome.get("error_type"):
        text += f" ({outcome['error_type']})"
    if outcome["status"] == "complete":
        text += f" {sorted(outcome.get('data') or {})}"
    return text


def summarise(rows, allowed, total, filtered):
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in ("identical", "allowlisted", "DIFFERENT")}
    by_reason = {}
    for row in rows:
        if row["verdict"] == "allowlisted":
            by_reason[row["reason"]] = by_reason.get(row["reason"], 0) + 1
    stale = sorted(set(allowed) - {r["model"] for r in rows if r["verdict"] == "allowlisted"})
    print(f"\nmodels in corpus: {total}; compared: {len(rows)}; identical: {counts['identical']}; "
          f"allowlisted: {counts['allowlisted']}; different (not allowlisted): {counts['DIFFERENT']}")
    for reason, count in sorted(by_reason.items(), key=lambda kv: -kv[1]):
        print(f"  {count:3} allowlisted: {reason}")
    if stale and not filtered:
        print("allowlist entries that no longer differ (prune them):")
        for name in stale:
            print(f"  {name}")
    failed = counts["DIFFERENT"]
    print(f"differential: {len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
