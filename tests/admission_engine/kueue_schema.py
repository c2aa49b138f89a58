"""Kueue v0.19.2's own CRD schemas (kubesim/crds/kueue-v0.19.2, unchanged from the tag) as a check on
what the compiler writes: the structural schema through jsonschema, and every
``x-kubernetes-validations`` rule (CEL) evaluated with cel-python on the node it is attached to, as the
API server does. Transition rules (``oldSelf``) only apply to updates and are skipped."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml
from celpy import celtypes

CRDS = Path(__file__).resolve().parents[2] / "kubesim" / "crds" / "kueue-v0.19.2"
PLURALS = {
    "AdmissionCheck": "admissionchecks",
    "ClusterQueue": "clusterqueues",
    "Cohort": "cohorts",
    "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors",
    "WorkloadPriorityClass": "workloadpriorityclasses",
}


@cache
def crd(kind: str) -> dict[str, Any]:
    return yaml.safe_load((CRDS / f"kueue.x-k8s.io_{PLURALS[kind]}.yaml").read_text())


def storage_schema(kind: str) -> tuple[str, dict[str, Any]]:
    doc = crd(kind)
    (version,) = [v for v in doc["spec"]["versions"] if v.get("storage")]
    return version["name"], version["schema"]["openAPIV3Schema"]


def _cel(value: Any) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        return celtypes.ListType([_cel(v) for v in value])
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): _cel(v) for k, v in value.items()})
    raise TypeError(type(value))


def _rules(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    errors = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            continue
        env = celpy.Environment()
        program = env.program(env.compile(rule["rule"]))
        result = program.evaluate({"self": _cel(value)})
        if result is not celtypes.BoolType(True) and result != celtypes.BoolType(True):
            errors.append(f"{path}: {rule.get('message') or rule['rule']}")
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                errors.extend(_rules(sub, value[key], f"{path}.{key}"))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                errors.extend(_rules(extra, item, f"{path}.{key}"))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors.extend(_rules(schema["items"], item, f"{path}[{i}]"))
    return errors


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Everything Kueue's CRD (structural schema and CEL rules) says against ``obj``."""
    version, schema = storage_schema(obj["kind"])
    errors = []
    if obj["apiVersion"] != f"kueue.x-k8s.io/{version}":
        errors.append(f"apiVersion {obj['apiVersion']} is not the storage version {version}")
    validator = jsonschema.Draft7Validator(schema)
    errors.extend(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj))
    errors.extend(_rules(schema, obj, obj["kind"]))
    return errors
