"""Flavor assignment against the quota tree (a simplified flavorassigner) and the usage ClusterQueue and
LocalQueue status report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubesim.controllers.kueue import objects as k
from kubesim.controllers.kueue.protocol import World
from kubesim.controllers.kueue.quota import ZERO, QuotaTree, amount
from kubesim.selectors import label_selector_matches


def namespace_matches(wl: dict[str, Any], cq: dict[str, Any], store: Any) -> bool:
    namespace = store.get("namespaces", None, wl["metadata"]["namespace"]) or {}
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return label_selector_matches((cq.get("spec") or {}).get("namespaceSelector"), labels)


def assign(
    wl: dict[str, Any], cq: dict[str, Any], tree: QuotaTree, world: World
) -> tuple[list[dict[str, Any]] | None, str, list[dict[str, Any]]]:
    """The first flavor of each resource group that fits every pod set, in order (flavorassigner,
    without preemption); (assignments, "", requests) or (None, why, requests)."""
    node = tree.queues[cq["metadata"]["name"]]
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    assumed: dict[tuple[str, str], Decimal] = {}
    assignments: list[dict[str, Any]] = []
    requests_out: list[dict[str, Any]] = []
    failures: list[str] = []
    for podset in (wl.get("spec") or {}).get("podSets") or []:
        name = podset.get("name", k.DEFAULT_PODSET)
        requests = k.podset_requests(podset)
        requests_out.append(
            {"name": name, "resources": {r: k.format_amount(r, v) for r, v in sorted(requests.items())}}
        )
        pod_spec = ((podset.get("template") or {}).get("spec")) or {}
        flavors: dict[str, str] = {}
        reasons: list[str] = []
        covered = {r for g in groups for r in g.get("coveredResources") or []}
        for resource in sorted(set(requests) - covered):
            reasons.append(f"resource {resource} unavailable in ClusterQueue")
        for group in groups:
            needed = [r for r in group.get("coveredResources") or [] if r in requests]
            if not needed:
                continue
            chosen = None
            for flavor in group.get("flavors") or []:
                fname = flavor["name"]
                mismatch = flavor_mismatch(pod_spec, world.flavors.get(fname))
                if mismatch:
                    reasons.append(f"flavor {fname} {mismatch}")
                    continue
                fits = True
                for resource in needed:
                    fr = (fname, resource)
                    before = assumed.get(fr, ZERO)
                    value = before + requests[resource]
                    ceiling = node.potential_available(fr)
                    if value > ceiling:
                        reasons.append(
                            f"insufficient quota for {resource} in flavor {fname}, previously considered "
                            f"podsets requests ({k.format_amount(resource, before)}) + current podset "
                            f"request ({k.format_amount(resource, requests[resource])}) > maximum capacity "
                            f"({k.format_amount(resource, ceiling)})"
                        )
                        fits = False
                    elif value > node.available(fr):
                        more = value - node.available(fr)
                        reasons.append(
                            f"insufficient unused quota for {resource} in flavor {fname}, "
                            f"{k.format_amount(resource, more)} more needed"
                        )
                        fits = False
                if fits:
                    chosen = fname
                    break
            if chosen is None:
                break
            for resource in needed:
                flavors[resource] = chosen
        if len(flavors) < len(requests):
            failures.append(f"couldn't assign flavors to pod set {name}: {', '.join(sorted(set(reasons)))}")
            continue
        for resource, fname in flavors.items():
            assumed[(fname, resource)] = assumed.get((fname, resource), ZERO) + requests[resource]
        assignments.append(
            {
                "name": name,
                "flavors": dict(sorted(flavors.items())),
                "resourceUsage": {r: k.format_amount(r, requests[r]) for r in sorted(flavors)},
                "count": int(podset.get("count", 1)),
            }
        )
    if failures:
        return None, "; ".join(failures), requests_out
    return assignments, "", requests_out


def flavor_mismatch(pod_spec: dict[str, Any], flavor: dict[str, Any] | None) -> str:
    """Why a flavor cannot hold these pods: their node selector contradicts its node labels, or they
    do not tolerate one of its node taints (flavorassigner.checkFlavorForPodSets, simplified)."""
    spec = (flavor or {}).get("spec") or {}
    selector = pod_spec.get("nodeSelector") or {}
    for key, value in (spec.get("nodeLabels") or {}).items():
        if key in selector and selector[key] != value:
            return "doesn't match node affinity"
    tolerations = pod_spec.get("tolerations") or []
    for taint in spec.get("nodeTaints") or []:
        if not any(tolerates(t, taint) for t in tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            return f"untolerated taint {{{taint.get('key')}{value}:{taint.get('effect')}}} in flavor"
    return ""


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def flavor_usage(
    groups: list[dict[str, Any]], workloads: list[dict[str, Any]], *, borrowed: bool
) -> list[dict[str, Any]]:
    """ClusterQueue/LocalQueue flavorsReservation and flavorsUsage: every flavor and resource of the
    queue's resource groups, in order, with the total held and (ClusterQueue) what is borrowed."""
    used: dict[tuple[str, str], Decimal] = {}
    for wl in workloads:
        for fr, value in k.admission_usage(wl).items():
            used[fr] = used.get(fr, ZERO) + value
    out = []
    for group in groups:
        for flavor in group.get("flavors") or []:
            resources = []
            for res in flavor.get("resources") or []:
                total = used.get((flavor["name"], res["name"]), ZERO)
                entry: dict[str, Any] = {"name": res["name"], "total": k.format_amount(res["name"], total)}
                if borrowed:
                    over = max(ZERO, total - amount(res.get("nominalQuota", 0)))
                    entry["borrowed"] = k.format_amount(res["name"], over)
                resources.append(entry)
            out.append({"name": flavor["name"], "resources": resources})
    return out
