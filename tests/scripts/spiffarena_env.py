"""SpiffArena's script environment, written from its CustomBpmnScriptEngine: the globals every
script and expression gets, and its `__import__` (a module a script may import must be one of
those globals). Shared by the generator of cases.json (generate.py) and the differential test
(tests/differential/differential.py), so that both judge against the same environment.

Import it after the caller has pinned TZ (dateparser, tzlocal and pytz read the local zone).
"""
import _strptime
import calendar
import decimal
import json
import random
import re
import time
import uuid
from datetime import datetime, timedelta

import dateparser
import pytz
from RestrictedPython import safe_globals


# SpiffArena's name and parameters: a script calling `__import__` wrongly sees them in its
# TypeError ("_import() missing 1 required positional argument: 'glbls'")
def _import(name, glbls, *args):
    """SpiffArena's `__import__`: a module a script may import is one of its globals."""
    if name not in glbls:
        raise ImportError(f"Import not allowed: {name}", name=name)
    return glbls[name]


def spiffarena_globals(**extra):
    """SpiffArena's default globals (plus `extra`, e.g. its Jinja helpers), then RestrictedPython's
    safe globals, whose builtins' `__import__` only hands out those globals. As in SpiffArena,
    the builtins dict is RestrictedPython's own, shared by every script of the process."""
    names = {
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
    }
    names.update(extra)
    names.update(safe_globals)  # {'__builtins__': safe_builtins}
    names["__builtins__"]["__import__"] = _import  # mutates safe_builtins, as SpiffArena does
    return names
