"""Admission rules -> ValidatingAdmissionPolicy + ValidatingAdmissionPolicyBinding manifests (pure).

The cluster itself refuses a pod that breaks its tenant's rules (issue 12 item 4), with the CEL of
admissionregistration.k8s.io/v1:

- one policy and binding per tenant (``gpuplatform-tenant-<slug>``), bound to the tenant's own
  namespaces by ``kubernetes.io/metadata.name``: on each pool it has a rule for, its pods may ask
  only for the resources of the allowed flavors, at most ``max_per_pod`` units of the pool in all,
  and only with an allowed priority class;
- one policy and binding per reserved pool (``gpuplatform-reserved-<pool>``), bound to every
  namespace but its owner's: no pod there may ask for the pool's resources.

Only pods that ask for one of the pools' resources are evaluated (``matchConditions``), so a
failure of ours never blocks other pods; then ``failurePolicy: Fail`` (a rule that cannot be
evaluated refuses). Pod resources and priority are immutable after creation (in-place resize goes
through the ``pods/resize`` subresource, not matched here), so CREATE is the operation that matters.
Kubernetes' CEL ``sum()`` is not part of core CEL; the pod's total is unrolled over its first
``MAX_GPU_CONTAINERS`` containers, and a pod with more GPU containers than that is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_GPU_CONTAINERS",
    "PoolRule",
    "ReservedPool",
    "TenantRules",
    "cel_expressions",
    "compile_admission",
    "manifest_name",
]

MAX_GPU_CONTAINERS = 8
LABELS = {"app.kubernetes.io/managed-by": "gpuplatform"}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True)
class PoolRule:
    pool: str
    pool_resources: tuple[str, ...]  # every resource name the pool's flavors use
    allowed_resources: tuple[str, ...] = ()  # of the allowed flavors; empty: every pool resource
    allowed_flavors: tuple[str, ...] = ()  # names, for the messages
    max_per_pod: int | None = None
    priority_classes: tuple[str, ...] = ()  # empty: any


@dataclass(frozen=True, slots=True)
class TenantRules:
    tenant: str  # slug
    namespaces: tuple[str, ...]
    rules: tuple[PoolRule, ...]


@dataclass(frozen=True, slots=True)
class ReservedPool:
    pool: str
    resources: tuple[str, ...]
    owner: str  # tenant slug
    owner_namespaces: tuple[str, ...] = field(default_factory=tuple)


def manifest_name(prefix: str, text: str) -> str:
    """A DNS-subdomain object name for ``text`` (pool names are often upper case, as GFD's product)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"
    name = f"{prefix}-{slug}"
    if len(name) <= 63 and slug == text:
        return name
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{prefix}-{slug[: 63 - len(prefix) - 10].strip('-')}-{digest}"


def _list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in sorted(values)) + "]"


def _asks_for(names: tuple[str, ...]) -> str:
    """Some container (init containers too) asks for one of ``names``."""
    n = _list(names)
    return (
        "variables.containers.exists(c, has(c.resources) && "
        f"((has(c.resources.limits) && c.resources.limits.exists(r, r in {n})) || "
        f"(has(c.resources.requests) && c.resources.requests.exists(r, r in {n}))))"
    )


def _units(container: str, names: tuple[str, ...]) -> str:
    """How many units of ``names`` one container's limits ask for (extended resources are whole)."""
    terms = [
        f"(has({container}.resources) && has({container}.resources.limits) && "
        f"{json.dumps(name)} in {container}.resources.limits ? "
        f"int({container}.resources.limits[{json.dumps(name)}]) : 0)"
        for name in sorted(names)
    ]
    return " + ".join(terms)


def cel_expressions(rule: PoolRule) -> dict[str, str]:
    """The CEL of one pool rule, by purpose (also compiled with cel-python in the tests)."""
    pool = rule.pool_resources
    out: dict[str, str] = {"asks": _asks_for(pool)}
    allowed = set(rule.allowed_resources) if rule.allowed_resources else set(pool)
    forbidden = tuple(sorted(set(pool) - allowed))
    if forbidden:
        f = _list(forbidden)
        out["flavors"] = (
            "variables.containers.all(c, !has(c.resources) || "
            f"((!has(c.resources.limits) || !c.resources.limits.exists(r, r in {f})) && "
            f"(!has(c.resources.requests) || !c.resources.requests.exists(r, r in {f}))))"
        )
    if rule.max_per_pod is not None:
        k = MAX_GPU_CONTAINERS
        total = " + ".join(
            f"(size(object.spec.containers) > {i} ? ({_units(f'object.spec.containers[{i}]', pool)}) : 0)"
            for i in range(k)
        )
        out["max_per_pod"] = (
            f"object.spec.containers.filter(c, {_units('c', pool)} > 0).size() <= {k} && "
            f"({total}) <= {rule.max_per_pod} && "
            f"(!has(object.spec.initContainers) || object.spec.initContainers.all(c, "
            f"({_units('c', pool)}) <= {rule.max_per_pod}))"
        )
    if rule.priority_classes:
        classes = _list(rule.priority_classes)
        out["priority"] = f"has(object.spec.priorityClassName) && object.spec.priorityClassName in {classes}"
    return out


_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
_MATCH = {
    "resourceRules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    ]
}


def _policy(name: str, match_any: tuple[str, ...], validations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _MATCH,
            "variables": [{"name": "containers", "expression": _CONTAINERS}],
            "matchConditions": [{"name": "asks-for-governed-gpus", "expression": _asks_for(match_any)}],
            "validations": validations,
        },
    }


def _binding(name: str, operator: str, namespaces: tuple[str, ...]) -> dict[str, Any]:
    # A selector's In/NotIn needs values; NotIn nothing is every namespace: the empty selector.
    selector: dict[str, Any] = (
        {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": operator, "values": sorted(namespaces)}
            ]
        }
        if namespaces
        else {}
    )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": selector},
        },
    }


def _in_namespace(text: str) -> str:
    # namespaceObject is the pod's Namespace (pods are namespaced, so it is never null here).
    return f"'namespace ' + namespaceObject.metadata.name + ': ' + {json.dumps(text)}"


def _tenant(t: TenantRules) -> list[dict[str, Any]]:
    validations: list[dict[str, Any]] = []
    governed: set[str] = set()
    for rule in sorted(t.rules, key=lambda r: r.pool):
        governed.update(rule.pool_resources)
        cel = cel_expressions(rule)
        guard = f"!({cel['asks']}) || "
        if "flavors" in cel:
            flavors = ", ".join(sorted(rule.allowed_flavors)) or "none"
            validations.append(
                {
                    "expression": guard + "(" + cel["flavors"] + ")",
                    "messageExpression": _in_namespace(
                        f"tenant {t.tenant} may use only the flavors {flavors} on pool {rule.pool}"
                    ),
                    "reason": "Forbidden",
                }
            )
        if "max_per_pod" in cel:
            validations.append(
                {
                    "expression": guard + "(" + cel["max_per_pod"] + ")",
                    "messageExpression": _in_namespace(
                        f"tenant {t.tenant} may ask for at most {rule.max_per_pod} GPU unit(s) of pool "
                        f"{rule.pool} per pod"
                    ),
                    "reason": "Forbidden",
                }
            )
        if "priority" in cel:
            validations.append(
                {
                    "expression": guard + "(" + cel["priority"] + ")",
                    "messageExpression": _in_namespace(
                        f"tenant {t.tenant}'s GPU pods on pool {rule.pool} need one of the priority classes "
                        f"{', '.join(sorted(rule.priority_classes))}"
                    ),
                    "reason": "Forbidden",
                }
            )
    if not validations or not t.namespaces:
        return []
    name = manifest_name("gpuplatform-tenant", t.tenant)
    return [_policy(name, tuple(sorted(governed)), validations), _binding(name, "In", t.namespaces)]


def _reserved(r: ReservedPool) -> list[dict[str, Any]]:
    if not r.resources:
        return []
    name = manifest_name("gpuplatform-reserved", r.pool)
    validation = {
        "expression": "!(" + _asks_for(r.resources) + ")",
        "messageExpression": _in_namespace(f"pool {r.pool} is reserved to tenant {r.owner}"),
        "reason": "Forbidden",
    }
    # An owner without a namespace yet has none to spare: the binding then selects every namespace.
    return [_policy(name, r.resources, [validation]), _binding(name, "NotIn", r.owner_namespaces)]


def compile_admission(
    *, tenants: tuple[TenantRules, ...], reserved: tuple[ReservedPool, ...]
) -> list[dict[str, Any]]:
    """Every manifest, in a stable order (policies and bindings by name)."""
    manifests: list[dict[str, Any]] = []
    for t in sorted(tenants, key=lambda t: t.tenant):
        manifests += _tenant(t)
    for r in sorted(reserved, key=lambda r: r.pool):
        manifests += _reserved(r)
    return manifests
