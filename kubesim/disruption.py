"""PodDisruptionBudget status, computed as kube-controller-manager's disruption controller does.

Pure functions (no store): which pods a budget selects, which are healthy, and the status fields
(pkg/controller/disruption/disruption.go):
- pods: the budget's namespace, selected by spec.selector (`{}` selects all, none selects nothing);
- currentHealthy: selected pods that are Ready, not being deleted, and not in status.disruptedPods
  (an eviction recorded them there; they stay out for DeletionTimeout, 2 minutes, after which they count
  again and the entry is dropped);
- minAvailable as a number: desiredHealthy is it, expectedPods the selected pods;
  maxUnavailable, or minAvailable as a percentage: expectedPods is the scale of the pods' controllers
  (kubesim serves no workload controllers, so pods without a controller are "unmanaged" and left out,
  and a pod whose controller kubesim cannot find fails the sync as the real controller does when no
  finder knows the owner kind), percentages rounded up;
- disruptionsAllowed = currentHealthy - desiredHealthy, never below 0, and 0 when expectedPods is 0;
- condition DisruptionAllowed: True/SufficientPods, False/InsufficientPods, False/SyncFailed.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from kubesim.selectors import label_selector_matches

DELETION_TIMEOUT_SECONDS = 120
ALLOWED_CONDITION = "DisruptionAllowed"


def is_pod_ready(pod: dict[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def pdb_selects(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    return label_selector_matches((pdb.get("spec") or {}).get("selector"), pod["metadata"].get("labels"))


def _epoch(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


def _scaled(value: int | str, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        raise ValueError(f'invalid value for IntOrString: invalid value "{text}"')
    return math.ceil(int(text[:-1]) * total / 100)


def _expected_scale(pods: list[dict[str, Any]]) -> int:
    for pod in pods:
        refs = [r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if refs:
            # ReplicaSet, Deployment, StatefulSet, ReplicationController or a scale subresource: none of
            # them is served by kubesim, so no finder resolves the owner.
            raise LookupError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
    return 0


def update_allowed_condition(status: dict[str, Any], now: str, *, error: str | None = None) -> list[Any]:
    """pdbhelper.UpdateDisruptionAllowedCondition (or the failSafe's SyncFailed) over status.conditions."""
    if error is not None:
        wanted = {"status": "False", "reason": "SyncFailed", "message": error}
    elif int(status.get("disruptionsAllowed") or 0) > 0:
        wanted = {"status": "True", "reason": "SufficientPods", "message": ""}
    else:
        wanted = {"status": "False", "reason": "InsufficientPods", "message": ""}
    conditions = [dict(c) for c in status.get("conditions") or []]
    current = next((c for c in conditions if c.get("type") == ALLOWED_CONDITION), None)
    observed = int(status.get("observedGeneration") or 0)
    if current is None:
        conditions.append(
            {"type": ALLOWED_CONDITION, **wanted, "observedGeneration": observed, "lastTransitionTime": now}
        )
        return conditions
    if current.get("status") != wanted["status"]:
        current["lastTransitionTime"] = now  # meta.SetStatusCondition moves it only on a status change
    current.update(wanted, observedGeneration=observed)
    return conditions


def compute_status(pdb: dict[str, Any], pods: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """The status the disruption controller writes for `pdb`, given every pod of its namespace."""
    spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
    now_text = dt.datetime.fromtimestamp(int(now), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = int(pdb["metadata"].get("generation") or 1)
    selected = [p for p in pods if pdb_selects(pdb, p)]
    try:
        expected, desired = _expected_and_desired(spec, selected)
    except (LookupError, ValueError) as exc:
        failed: dict[str, Any] = {
            "disruptionsAllowed": 0,
            "currentHealthy": int(old.get("currentHealthy") or 0),
            "desiredHealthy": int(old.get("desiredHealthy") or 0),
            "expectedPods": int(old.get("expectedPods") or 0),
            "observedGeneration": generation,
            **({"disruptedPods": old["disruptedPods"]} if old.get("disruptedPods") else {}),
        }
        failed["conditions"] = update_allowed_condition({**old, **failed}, now_text, error=str(exc))
        return failed
    disrupted: dict[str, str] = {}
    for pod in selected:
        since = (old.get("disruptedPods") or {}).get(pod["metadata"]["name"])
        if pod["metadata"].get("deletionTimestamp") or since is None:
            continue
        if _epoch(since) + DELETION_TIMEOUT_SECONDS > now:
            disrupted[pod["metadata"]["name"]] = since
    healthy = sum(
        1
        for pod in selected
        if not pod["metadata"].get("deletionTimestamp")
        and pod["metadata"]["name"] not in disrupted
        and is_pod_ready(pod)
    )
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status: dict[str, Any] = {
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "observedGeneration": generation,
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    status["conditions"] = update_allowed_condition({**old, **status}, now_text)
    return status


def _expected_and_desired(spec: dict[str, Any], selected: list[dict[str, Any]]) -> tuple[int, int]:
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is not None:
        expected = _expected_scale(selected)
        return expected, max(expected - _scaled(max_unavailable, expected), 0)
    if isinstance(min_available, int):
        return len(selected), min_available
    if min_available is not None:
        expected = _expected_scale(selected)
        return expected, _scaled(min_available, expected)
    return 0, 0


def next_recheck(status: dict[str, Any]) -> float | None:
    """When a disrupted pod's grace runs out and the status must be computed again (epoch seconds)."""
    times = [_epoch(t) + DELETION_TIMEOUT_SECONDS for t in (status.get("disruptedPods") or {}).values()]
    return min(times) if times else None
