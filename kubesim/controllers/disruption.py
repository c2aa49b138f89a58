"""kube-controller-manager's disruption controller: keeps every PodDisruptionBudget's status current.

The eviction subresource reads only the stored status (disruptionsAllowed, observedGeneration), so a
budget nobody computed refuses evictions with "still being processed", as on a real cluster whose
controller manager is down. The arithmetic lives in `kubesim.disruption`.
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import Context
from kubesim.disruption import compute_status


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []
    ]
    return {**status, "conditions": conditions}


class DisruptionController:
    name = "disruption"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def reconcile(self) -> int:
        pdbs = self.ctx.cache.values("poddisruptionbudgets")
        if not pdbs:
            return 0
        namespaces = {pdb["metadata"]["namespace"] for pdb in pdbs}
        pods_by_namespace: dict[str, list[dict[str, Any]]] = {ns: [] for ns in namespaces}
        for (namespace, _), pod in self.ctx.cache.objects["pods"].items():
            if namespace in pods_by_namespace:
                pods_by_namespace[namespace].append(pod)
        writes = 0
        now = self.ctx.clock()
        for pdb in pdbs:
            old = pdb.get("status") or {}
            new = compute_status(pdb, pods_by_namespace[pdb["metadata"]["namespace"]], now)
            if _comparable(old) == _comparable(new):
                continue
            patch: dict[str, Any] = dict(new)
            # A merge patch merges maps: pods no longer disrupted must be removed by name.
            gone = set(old.get("disruptedPods") or {}) - set(new.get("disruptedPods") or {})
            if gone:
                patch["disruptedPods"] = {**(new.get("disruptedPods") or {}), **dict.fromkeys(gone)}
                if not new.get("disruptedPods") and gone == set(old.get("disruptedPods") or {}):
                    patch["disruptedPods"] = None
            meta = pdb["metadata"]
            namespace, name = meta["namespace"], meta["name"]
            if self.ctx.patch(
                "poddisruptionbudgets", namespace, name, {"status": patch}, subresource="status"
            ):
                writes += 1
        return writes
