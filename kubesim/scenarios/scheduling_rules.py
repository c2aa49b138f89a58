"""kube-scheduler's filter rules and messages, for the pods kubesim's GPU workloads use.

Filters run in the default plugin order and a node fails at the first one that rejects it:
NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required node affinity), then
NodeResourcesFit. The reasons are the scheduler's own strings, so a pod's
`PodScheduled=False/Unschedulable` message reads like a real cluster's:
"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient
nvidia.com/gpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling,
2 No preemption victims found for incoming pod."
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesim.scenarios.hami import HAMI_RESOURCES
from kubesim.scenarios.quantity import quantity_int, quantity_milli

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
MILLI_RESOURCES = ("cpu",)


def amount(resource: str, value: str | int) -> int:
    """Comparable integer amount: CPU in millicores, everything else in whole units (bytes for memory)."""
    return quantity_milli(value) if resource in MILLI_RESOURCES else quantity_int(value)


def pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """Effective requests: sum over containers, at least the largest init container (like the scheduler)."""
    total: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        merged = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        for name, value in merged.items():
            total[name] += amount(name, value)
    for container in spec.get("initContainers") or []:
        resources = container.get("resources") or {}
        merged = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        for name, value in merged.items():
            total[name] = max(total[name], amount(name, value))
    return dict(total)


def node_allocatable(node: dict[str, Any]) -> dict[str, int]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {name: amount(name, value) for name, value in allocatable.items()}


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _expression_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator"), expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches_node_selection(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in terms:  # terms are ORed, expressions inside a term ANDed
        if all(_expression_matches(e, labels) for e in term.get("matchExpressions") or []) and all(
            _expression_matches(e, fields) for e in term.get("matchFields") or []
        ):
            return True
    return False


def static_reason(spec: dict[str, Any], node: dict[str, Any]) -> str | None:
    """The first non-resource filter that rejects the node, or None."""
    node_spec = node.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    if node_spec.get("unschedulable") and not tolerates(
        tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        return UNSCHEDULABLE
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if taint.get("key") == "node.kubernetes.io/unschedulable":
            continue  # reported by NodeUnschedulable above
        if not tolerates(tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    if not matches_node_selection(spec, node):
        return AFFINITY
    return None


def resource_reasons(requests: dict[str, int], free: dict[str, int], pods_free: int) -> list[str]:
    """NodeResourcesFit reasons. HAMi's gpumem/gpucores are left to the HAMi scheduler: kubelet drops
    extended resources a node does not advertise (removeMissingExtendedResources)."""
    reasons = []
    if pods_free < 1:
        reasons.append(TOO_MANY_PODS)
    for name, want in sorted(requests.items()):
        if want <= 0 or name in ("pods",):
            continue
        if name in HAMI_RESOURCES and name not in free:
            continue
        if free.get(name, 0) < want:
            reasons.append(f"Insufficient {name}")
    return reasons


def unschedulable_message(node_reasons: Counter[tuple[str, ...]], total_nodes: int) -> str:
    """The FitError text. `node_reasons` counts nodes per tuple of reasons (one node may have several)."""
    if total_nodes == 0:
        return "no nodes available to schedule pods"
    reasons: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    for node_reason, count in node_reasons.items():
        for reason in node_reason:
            reasons[reason] += count
        resolvable = all(r.startswith("Insufficient") or r == TOO_MANY_PODS for r in node_reason)
        preemption[NO_VICTIMS if resolvable else NOT_HELPFUL] += count
    parts = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    pre = ", ".join(f"{count} {reason}" for reason, count in sorted(preemption.items()))
    head = f"0/{total_nodes} nodes are available"
    return f"{head}: {parts}. preemption: {head}: {pre}."
