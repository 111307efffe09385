#!/usr/bin/env python3
"""List every piece of Python found in the BPMN models of the conformance corpus.

Usage:
    python3 extract_models.py [MODELS_DIR]            # print the snippets as JSON
    python3 extract_models.py [MODELS_DIR] --check    # check cases.src.json covers them all

MODELS_DIR is the conformance corpus folder (the one holding spiffworkflow-tests/ and
spiffarena-fixtures/); without the argument, WORKFLOW_BACKEND_CONFORMANCE_DIR names it, and
with neither the script stops with its usage line. Standard library only.

A snippet is Python that SpiffWorkflow/SpiffArena hands to the script engine:
  script      bpmn:script (scriptTask), spiffworkflow:preScript, spiffworkflow:postScript
  expression  bpmn:conditionExpression (sequenceFlow), bpmn:condition (conditional event),
              spiffworkflow:messagePayload, spiffworkflow:payloadExpression (signal/error/escalation),
              camunda:expression (message payload), correlation retrieval expressions
              (bpmn:formalExpression / bpmn:messagePath, evaluated against the message payload),
              spiffworkflow:processVariableCorrelation/spiffworkflow:expression (against task data),
              spiffworkflow:parameter/@value (service task), spiffworkflow:taskMetadataValue/@value,
              bpmn:timeDate / timeDuration / timeCycle, bpmn:loopCardinality,
              bpmn:completionCondition, bpmn:loopCondition.
Each snippet gets an origin "relative/path.bpmn#ElementId[:part]" that is unique in the corpus.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
SPIFF = "http://spiffworkflow.org/bpmn/schema/1.0/core"
CAMUNDA = "http://camunda.org/schema/1.0/bpmn"

BPMN_TEXT = {  # local name -> (kind, element label)
    "conditionExpression": ("expression", "conditionExpression"),
    "condition": ("expression", "conditionalEventDefinition.condition"),
    "timeDate": ("expression", "timer.timeDate"),
    "timeDuration": ("expression", "timer.timeDuration"),
    "timeCycle": ("expression", "timer.timeCycle"),
    "loopCardinality": ("expression", "loopCardinality"),
    "completionCondition": ("expression", "completionCondition"),
    "loopCondition": ("expression", "loopCondition"),
}
SPIFF_TEXT = {
    "preScript": ("script", "preScript"),
    "postScript": ("script", "postScript"),
    "messagePayload": ("expression", "messagePayload"),
    "payloadExpression": ("expression", "payloadExpression"),
}


def local(tag):
    return tag.split("}", 1)[1] if "}" in tag else tag


def ns(tag):
    return tag[1:].split("}", 1)[0] if tag.startswith("{") else ""


def owner_id(chain):
    """Id of the nearest BPMN element in the chain (innermost first) that has an id."""
    for el in reversed(chain):
        if ns(el.tag) == BPMN and el.get("id"):
            return el.get("id")
    return "?"


def snippets_of(path, rel):
    tree = ET.parse(path)
    out = []

    def add(kind, element, origin, source):
        if source is None or not source.strip():
            return
        out.append({"origin": origin, "kind": kind, "element": element, "source": source})

    def walk(el, chain):
        chain = chain + [el]
        tag_ns, name = ns(el.tag), local(el.tag)
        parent = chain[-2] if len(chain) > 1 else None
        if tag_ns == BPMN and name == "script" and parent is not None and local(parent.tag) == "scriptTask":
            add("script", "scriptTask.script", f"{rel}#{parent.get('id')}", el.text)
        elif tag_ns == BPMN and name in BPMN_TEXT:
            kind, label = BPMN_TEXT[name]
            oid = owner_id(chain[:-1])
            suffix = "" if name in ("conditionExpression", "condition") or name.startswith("time") else f":{name}"
            add(kind, label, f"{rel}#{oid}{suffix}", el.text)
        elif tag_ns == BPMN and name in ("formalExpression", "messagePath") and parent is not None \
                and local(parent.tag) == "correlationPropertyRetrievalExpression":
            prop = chain[-3].get("id")
            add("expression", "correlationPropertyRetrievalExpression", f"{rel}#{prop}@{parent.get('messageRef')}", el.text)
        elif tag_ns == SPIFF and name in SPIFF_TEXT:
            kind, label = SPIFF_TEXT[name]
            oid = owner_id(chain[:-1])
            add(kind, label, f"{rel}#{oid}:{name}", el.text)
        elif tag_ns == SPIFF and name == "processVariableCorrelation":
            prop = el.find(f"{{{SPIFF}}}propertyId")
            expr = el.find(f"{{{SPIFF}}}expression")
            oid = owner_id(chain[:-1])
            add("expression", "processVariableCorrelation",
                f"{rel}#{oid}:processVariableCorrelation={prop.text if prop is not None else '?'}",
                expr.text if expr is not None else None)
        elif tag_ns == SPIFF and name == "parameter" and "value" in el.attrib:
            add("expression", "serviceTask.parameter", f"{rel}#{owner_id(chain[:-1])}:parameter={el.get('id')}", el.get("value"))
        elif tag_ns == SPIFF and name == "taskMetadataValue" and el.get("value") is not None:
            add("expression", "taskMetadataValue", f"{rel}#{owner_id(chain[:-1])}:taskMetadataValue={el.get('name')}", el.get("value"))
        if f"{{{CAMUNDA}}}expression" in el.attrib and local(el.tag) == "messageEventDefinition":
            add("expression", "camunda:expression", f"{rel}#{owner_id(chain)}:camundaExpression", el.get(f"{{{CAMUNDA}}}expression"))
        for child in el:
            walk(child, chain)

    walk(tree.getroot(), [])
    return out


def extract(models_dir):
    found = []
    for dirpath, dirnames, filenames in os.walk(models_dir):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".bpmn"):
                path = os.path.join(dirpath, fn)
                found.extend(snippets_of(path, os.path.relpath(path, models_dir)))
    found.sort(key=lambda s: s["origin"])
    origins = [s["origin"] for s in found]
    dupes = {o for o in origins if origins.count(o) > 1}
    if dupes:
        raise SystemExit(f"non-unique origins: {sorted(dupes)}")
    return found


def check(found, src_path):
    with open(src_path, encoding="utf-8") as f:
        src = json.load(f)
    covered = {}
    for case in src["cases"]:
        covered.setdefault(case["origin"], []).append(case)
    skipped = {s["origin"]: s for s in src.get("skipped", [])}
    problems = []
    for s in found:
        o = s["origin"]
        if o in skipped:
            if skipped[o]["source"] != s["source"]:
                problems.append(f"skipped source differs from model: {o}")
            continue
        cases = covered.get(o)
        if not cases:
            problems.append(f"not covered: {o}")
        elif not any(c["source"] == s["source"] and c["kind"] == s["kind"] for c in cases):
            problems.append(f"source/kind differs from model: {o}")
    known = {s["origin"] for s in found}
    for o in list(covered) + list(skipped):
        if not o.startswith("handwritten:") and o not in known:
            problems.append(f"origin not found in models: {o}")
    for p in problems:
        print(p)
    print(f"{len(found)} snippets in models, {len(found) - len(problems)} covered or skipped, {len(problems)} problems")
    return not problems


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    models_dir = args[0] if args else os.environ.get("WORKFLOW_BACKEND_CONFORMANCE_DIR", "")
    if not models_dir:
        print(
            "usage: extract_models.py MODELS_DIR [--check] "
            "(or set WORKFLOW_BACKEND_CONFORMANCE_DIR to the conformance corpus folder)",
            file=sys.stderr,
        )
        sys.exit(2)
    found = extract(models_dir)
    if "--check" in argv:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.exit(0 if check(found, os.path.join(here, "cases.src.json")) else 1)
    json.dump(found, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
