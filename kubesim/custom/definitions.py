"""From a CustomResourceDefinition to the resource it serves, and the rules kubesim keeps for CRDs.

Each served version gets its structural schema with `apiVersion`, `kind` and `metadata` (as ObjectMeta)
added, which is how the apiextensions server prunes and validates custom objects. Conversion is the
`None` strategy whatever the CRD says: only apiVersion changes between versions (kubesim runs no
conversion webhooks).
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim.errors import field_cause
from kubesim.registry import BY_PLURAL, ResourceInfo

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def storage_version(spec: dict[str, Any]) -> str:
    return next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), "")


def structural_schema(version: dict[str, Any]) -> dict[str, Any]:
    sch = copy.deepcopy(((version.get("schema") or {}).get("openAPIV3Schema")) or {})
    sch.setdefault("type", "object")
    props = sch.setdefault("properties", {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"$ref": f"#/$defs/{OBJECT_META}"}
    return sch


def resource_info(crd: dict[str, Any]) -> ResourceInfo | None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    storage = storage_version(spec)
    if not names.get("plural") or not storage:
        return None
    served = [v for v in spec.get("versions") or [] if v.get("served")]
    others = tuple(v["name"] for v in served if v["name"] != storage)
    status = any("status" in (v.get("subresources") or {}) for v in served)
    return ResourceInfo(
        names["plural"],
        names.get("singular") or names["kind"].lower(),
        names["kind"],
        spec.get("group", ""),
        storage,
        spec.get("scope") == "Namespaced",
        ("status",) if status else (),
        tuple(names.get("shortNames") or ()),
        other_versions=others,
        has_generation=True,
        status_reset_on_create=status,
        categories=tuple(names.get("categories") or ()),
        schemas={v["name"]: structural_schema(v) for v in spec.get("versions") or []},
    )


def default_crd(obj: dict[str, Any]) -> None:
    """SetDefaults_CustomResourceDefinition, and the status the CRD controllers write (kubesim writes it
    with the spec: names accepted and Established at once)."""
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("conversion", {"strategy": "None"})
    status = obj.setdefault("status", {})
    status["acceptedNames"] = copy.deepcopy(names)
    stored = list(status.get("storedVersions") or [])
    storage = storage_version(spec)
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored
    now = (obj.get("metadata") or {}).get("creationTimestamp")
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    for kind, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        conditions.setdefault(
            kind,
            {"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message},
        )
    status["conditions"] = [conditions[k] for k in ("NamesAccepted", "Established")] + [
        c for k, c in conditions.items() if k not in ("NamesAccepted", "Established")
    ]


def crd_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidateCustomResourceDefinition's rules clients trip over (apiextensions/validation)."""
    causes = []
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group", ""), names.get("plural", "")
    name = (obj.get("metadata") or {}).get("name", "")
    if name != f"{plural}.{group}":
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            )
        )
    if group and "." not in group:
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "spec.group",
                f'Invalid value: "{group}": should be a domain with at least one dot',
            )
        )
    versions = spec.get("versions") or []
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "spec.versions",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    if versions and not any(isinstance(v, dict) and v.get("served") for v in versions):
        causes.append(
            field_cause(
                "FieldValueInvalid", "spec.versions", "Invalid value: must have at least one version served"
            )
        )
    for i, version in enumerate(versions):
        if isinstance(version, dict) and not (version.get("schema") or {}).get("openAPIV3Schema"):
            causes.append(
                field_cause(
                    "FieldValueRequired",
                    f"spec.versions[{i}].schema.openAPIV3Schema",
                    "Required value: schemas are required",
                )
            )
    if old is not None:
        for field in ("group", "scope"):
            if (old.get("spec") or {}).get(field) != spec.get(field):
                causes.append(
                    field_cause("FieldValueInvalid", f"spec.{field}", "Invalid value: field is immutable")
                )
    builtin = BY_PLURAL.get(plural)
    if builtin is not None and builtin.group != group:
        # A real server serves both (resources are keyed by group); kubesim keys its tables by plural.
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "spec.names.plural",
                f'Invalid value: "{plural}": kubesim already serves {plural} in group "{builtin.group}"',
            )
        )
    return causes
