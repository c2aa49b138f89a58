"""The chart rendered by Helm's own engine (Helm 4's Go SDK through helm-python-sdk's C binding; no
cluster is contacted), and each manifest validated: built-in kinds against Kubernetes' OpenAPI
schemas (kubernetes-validate, strict), prometheus-operator's kinds against their vendored CRDs."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from helm_python import Chart

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "chart"
EXAMPLES = sorted((REPO / "deploy" / "examples").glob("values-*.yaml"))
CRDS = Path(__file__).resolve().parent / "crds"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the validator knows.
KUBE_VERSIONS = ("1.32.0", kubernetes_validate.latest_version())
RELEASE, NAMESPACE = "gpuplatform", "gpuplatform"


def values_of(path: Path | None) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) if path else {}


def render(values: dict[str, Any] | None = None, *, upgrade: bool = False) -> list[dict[str, Any]]:
    """Every object the chart makes for these values, hooks included, in template order."""
    chart = Chart.load(CHART)
    chart.validate_schema(values or {})
    manifests = chart.render(
        values or {}, name=RELEASE, namespace=NAMESPACE, is_install=not upgrade, is_upgrade=upgrade
    )
    objects: list[dict[str, Any]] = []
    for path in sorted(manifests):
        if path.endswith(".yaml"):
            objects.extend(doc for doc in yaml.safe_load_all(manifests[path]) if doc)
    return objects


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in by_kind(objects, kind) if o["metadata"]["name"] == name]
    return found


@cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    schemas = {}
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = _strict(version["schema"]["openAPIV3Schema"])
            schemas[(f"{group}/{version['name']}", kind)] = schema
    return schemas


def _strict(schema: Any) -> Any:
    """A structural schema drops unknown fields; refuse them instead, as `kubectl --validate=strict`."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        if "metadata" in schema.get("properties", {}):
            schema["properties"]["metadata"] = {"type": "object"}  # ObjectMeta: the server's own schema
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def validate(obj: dict[str, Any], kube_version: str) -> None:
    """Raises on the first manifest the API server would refuse (unknown fields included)."""
    crd = _crd_schemas().get((obj["apiVersion"], obj["kind"]))
    if crd is not None:
        # OpenAPI v3's schema dialect is JSON Schema draft 4's; its patterns are Go regexps (one uses
        # "(?i)" mid-pattern, which Python's re refuses), so the schema itself is not meta-checked.
        error = jsonschema.exceptions.best_match(jsonschema.Draft4Validator(crd).iter_errors(obj))
        if error is not None:
            raise error
        return
    kubernetes_validate.validate(obj, kube_version, strict=True)
