"""The names a script sees in SpiffArena, computed from SpiffArena's own source.

    python spiffarena_names.py SPIFF_ARENA_CHECKOUT

prints {"globals": [...], "builtins": [...], "python_builtins": [...]} as JSON:

- globals: the keys of `default_globals` in CustomBpmnScriptEngine.__init__
  (spiffworkflow-backend/.../services/process_instance_script_engine.py), with the keys of
  JinjaHelpers.get_helper_mapping() (services/jinja_service.py) where it unpacks them;
- builtins: RestrictedPython's `safe_globals["__builtins__"]`, which the engine merges in (with
  its own `__import__`). This
  Python's RestrictedPython must be the version spiffworkflow-backend/uv.lock pins (checked), so
  run it with a venv that has that version (.ci/run builds one);
- python_builtins: every name of CPython's builtins module (the test probes these too).

Read-only and offline: the source is parsed, never imported (it needs Flask and a database).
"""

import ast
import builtins
import json
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

BACKEND = "spiffworkflow-backend"
SERVICES = f"{BACKEND}/src/spiffworkflow_backend/services"


def locked_version(checkout, package):
    lock = tomllib.loads((checkout / BACKEND / "uv.lock").read_text())
    versions = [p["version"] for p in lock.get("package", []) if p["name"].lower() == package]
    if len(versions) != 1:
        sys.exit(f"uv.lock pins {package} {len(versions)} times")
    return versions[0]


def dict_literal(tree, assigned_to):
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == assigned_to for t in node.targets)):
            return node.value
        if (isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Dict)
                and isinstance(node.target, ast.Name) and node.target.id == assigned_to):
            return node.value
    sys.exit(f"no dict literal assigned to {assigned_to}")


def returned_dict_keys(tree, function):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Dict):
                    return [k.value for k in inner.value.keys]
    sys.exit(f"{function} returns no dict literal")


def spiffarena_globals(checkout):
    engine_source = (checkout / SERVICES / "process_instance_script_engine.py").read_text()
    if "default_globals.update(safe_globals)" not in engine_source:
        sys.exit("the script engine no longer merges RestrictedPython's safe_globals")
    literal = dict_literal(ast.parse(engine_source), "default_globals")
    names = []
    for key, value in zip(literal.keys, literal.values):
        if key is not None:
            names.append(key.value)
        elif ast.unparse(value) == "JinjaHelpers.get_helper_mapping()":
            jinja = ast.parse((checkout / SERVICES / "jinja_service.py").read_text())
            names += returned_dict_keys(jinja, "get_helper_mapping")
        else:
            sys.exit(f"unknown unpacking in default_globals: {ast.unparse(value)}")
    return names


def main():
    checkout = Path(sys.argv[1])
    locked = locked_version(checkout, "restrictedpython")
    installed = version("RestrictedPython")
    if installed != locked:
        sys.exit(f"RestrictedPython {installed} here, SpiffArena's uv.lock pins {locked}")
    from RestrictedPython import safe_globals

    safe_builtins = set(safe_globals["__builtins__"])
    engine_source = (checkout / SERVICES / "process_instance_script_engine.py").read_text()
    if 'default_globals["__builtins__"]["__import__"] = _import' in engine_source:
        safe_builtins.add("__import__")
    print(json.dumps({
        "restrictedpython": installed,
        "globals": sorted(set(spiffarena_globals(checkout)) | (set(safe_globals) - {"__builtins__"})),
        "builtins": sorted(safe_builtins),
        "python_builtins": sorted(dir(builtins)),
    }))


if __name__ == "__main__":
    main()
