"""Apply the compiled Kueue objects to a cluster and keep them true (docs/kueue.md, "Applied and
kept true").

One job per cluster (``apply_kueue``, the Celery task ``quotas.apply_kueue``), queued after every
change to the catalogue and by the periodic reconcile; idempotent; one at a time per cluster under an
advisory lock, so an older run's prune never deletes what a newer run applied. For a ``kueue``
cluster: compile (a refusal is recorded and nothing is sent), list what of ours is there, apply every
compiled object with server-side apply (field manager ``gpuplatform``, forced: we are the authority
on the quota tree), mark our AdmissionCheck Active (we are its controller), delete ours that are no
longer wanted, and record the fields of ours someone changed by hand (drift, put back by the
forced apply). For a ``resourcequota`` cluster nothing is written; if gpuplatform left Kueue objects
there (the cluster was switched), they are deleted and the held requests' ResourceQuotas written
again. Switching to ``kueue`` deletes the ResourceQuotas gpuplatform wrote there.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.db.after_commit import queue_after_commit
from gpuplatform.db.locks import LockSpace, lock_name
from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster, EnforcementBackend, KueueApplyState
from quotas.enforcement.resourcequota import QUOTA_NAME
from quotas.kueue.compile import compile_cluster
from quotas.kueue.drift import drifted_fields
from quotas.kueue.model import ADMISSION_CHECK, MANAGED_BY, CompileError
from quotas.kueue_apply.selectors import compile_input_for
from quotas.models import CapacityRequest, FlavorKind
from quotas.models.requests import HOLDING
from tenants.models import TenantNamespace

__all__ = ["KINDS", "apply_kueue", "object_key"]

# Kueue's kinds gpuplatform writes: (plural, namespaced), in apply order (flavors, priority classes
# and the check before the queues that name them; parents before children). Pruned in reverse.
KINDS: dict[str, tuple[str, bool]] = {
    "ResourceFlavor": ("resourceflavors", False),
    "WorkloadPriorityClass": ("workloadpriorityclasses", False),
    "AdmissionCheck": ("admissionchecks", False),
    "Cohort": ("cohorts", False),
    "ClusterQueue": ("clusterqueues", False),
    "LocalQueue": ("localqueues", True),
}
SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
# What we last applied, hashed, on each object we write: an unchanged object is not sent again, so
# a one-quota change is one call, not one per tenant (benchmarks/kueue_apply.py).
DIGEST_ANNOTATION = "gpuplatform.dev/applied-digest"
# Objects of one kind are applied this many at a time (the API server answers them concurrently).
APPLY_THREADS = 8


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    if meta.get("namespace"):
        return f"{obj['kind']}/{meta['namespace']}/{meta['name']}"
    return f"{obj['kind']}/{meta['name']}"


class KueueMissing(kube.KubeError):
    """The cluster does not serve Kueue's API at the version we write."""


def apply_kueue(*, cluster_id: uuid.UUID | str, now: Callable[[], datetime] = timezone.now) -> dict[str, Any]:
    """Make the cluster's Kueue objects what the catalogue compiles to (or remove ours from a
    ``resourcequota`` cluster). Idempotent; holds the cluster's KUEUE_APPLY advisory lock (no row
    lock) across the calls. The outcome is kept on ``KueueApplyState``; a cluster error is recorded
    there and raised for the worker's log, and the next run retries."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return {"skipped": "no such cluster"}
    try:
        with transaction.atomic():
            lock_name(LockSpace.KUEUE_APPLY, str(cluster.pk))
            cluster.refresh_from_db(fields=["enforcement_backend", "name", "pool_label"])
            state, _ = KueueApplyState.objects.get_or_create(cluster=cluster)
            if cluster.enforcement_backend == EnforcementBackend.KUEUE:
                return _apply(cluster, state, now)
            return _withdraw(cluster, state, now)
    except kube.KubeError as error:
        KueueApplyState.objects.update_or_create(
            cluster=cluster, defaults={"error": str(error)[:2000], "attempted_at": now()}
        )
        raise


def _apply(cluster: Cluster, state: KueueApplyState, now: Callable[[], datetime]) -> dict[str, Any]:
    state.attempted_at = now()
    try:
        compiled = compile_cluster(compile_input_for(cluster=cluster))
    except CompileError as refused:
        # All or nothing: what Kueue holds now stays as the last good apply left it.
        state.problems, state.error = refused.problems, ""
        state.save()
        return {"problems": refused.problems}
    api = client_for(cluster)
    live = _live(api, cluster)
    removed: list[str] = []
    if state.backend_applied != EnforcementBackend.KUEUE:
        removed.extend(_remove_resource_quotas(api, cluster))
    applied, notes, drift = [], list(compiled.notes), []
    for kind in KINDS:  # in apply order; the objects of one kind are independent of each other
        batch = [o for o in compiled.objects if o["kind"] == kind]
        changed = []
        for obj in batch:
            current = live.get(object_key(obj))
            last = state.applied_objects.get(object_key(obj))
            fields = drifted_fields(wanted=obj, live=current, last=last) if current is not None else []
            if fields:
                drift.append({"object": object_key(obj), "fields": fields})
            if (
                current is not None
                and not fields
                and _annotations(current).get(DIGEST_ANNOTATION) == _digest(obj)
            ):
                if kind == "AdmissionCheck" and not _active(current):
                    _mark_active(api, current, now)
            else:
                changed.append(obj)
        with ThreadPoolExecutor(max_workers=APPLY_THREADS) as pool:
            unwritten = dict(
                zip(
                    map(object_key, changed),
                    pool.map(lambda o: _apply_one(api, o, now), changed),
                    strict=True,
                )
            )
        for obj in batch:
            key = object_key(obj)
            if unwritten.get(key):
                notes.append(unwritten[key].format(cluster=cluster.name))
            else:
                applied.append(key)
    wanted = {object_key(o) for o in compiled.objects}
    for kind in reversed(KINDS):
        for key, obj in sorted(live.items()):
            if obj["kind"] == kind and key not in wanted and _delete(api, obj):
                removed.append(key)
    state.backend_applied = EnforcementBackend.KUEUE
    state.applied, state.removed, state.notes = applied, removed, sorted(notes)
    sent = set(applied)
    state.applied_objects = {object_key(o): o for o in compiled.objects if object_key(o) in sent}
    state.problems, state.error, state.applied_at = [], "", now()
    if drift:
        state.drift, state.drift_repaired_at = drift, state.applied_at
    state.save()
    return {"applied": applied, "removed": removed, "drift": drift}


def _apply_one(api: Any, obj: dict[str, Any], now: Callable[[], datetime]) -> str:
    """Server-side apply ``obj`` with the digest of it as an annotation (what we last applied: an
    object already carrying it and no drift is not sent again, and a field we stopped setting still
    changes it). Returns a note when the object could not be written yet (a LocalQueue whose
    namespace is not there), else ""."""
    meta = obj["metadata"]
    annotations = {**meta.get("annotations", {}), DIGEST_ANNOTATION: _digest(obj)}
    try:
        result = kube.apply_custom_object(
            api, body={**obj, "metadata": {**meta, "annotations": annotations}}, plural=KINDS[obj["kind"]][0]
        )
    except kube.KubeError as error:
        if obj["kind"] == "LocalQueue" and error.status == 404:
            return (
                f"Namespace {meta['namespace']!r} does not exist on cluster {{cluster!r}}: "
                f"its LocalQueue {meta['name']!r} is written once it does."
            )
        raise
    if obj["kind"] == "AdmissionCheck" and meta["name"] == ADMISSION_CHECK:
        _mark_active(api, result, now)
    return ""


def _digest(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _active(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


def _withdraw(cluster: Cluster, state: KueueApplyState, now: Callable[[], datetime]) -> dict[str, Any]:
    """A ``resourcequota`` cluster: nothing to write. Only if gpuplatform's Kueue objects were left
    there (the cluster was switched away from kueue) are they deleted, and the requests it holds get
    their ResourceQuotas back."""
    if state.backend_applied != EnforcementBackend.KUEUE:
        if state.backend_applied != EnforcementBackend.RESOURCEQUOTA:
            state.backend_applied = EnforcementBackend.RESOURCEQUOTA
            state.save(update_fields=["backend_applied"])
        return {"skipped": "resourcequota"}
    api = client_for(cluster)
    try:
        live = _live(api, cluster)
    except KueueMissing:
        live = {}  # Kueue was uninstalled: nothing of ours is left there
    removed = []
    for kind in reversed(KINDS):
        for key, obj in sorted(live.items()):
            if obj["kind"] == kind and _delete(api, obj):
                removed.append(key)
    held = list(
        CapacityRequest.objects.filter(
            state__in=HOLDING, flavor__kind=FlavorKind.DEVICE_PLUGIN, flavor__pool__cluster=cluster
        ).values_list("pk", flat=True)
    )
    if held:
        queue_after_commit("quotas.materialise_requests", [str(pk) for pk in held])
    state.backend_applied = EnforcementBackend.RESOURCEQUOTA
    state.applied, state.removed, state.problems, state.notes, state.error = [], removed, [], [], ""
    state.applied_objects = {}
    state.attempted_at = state.applied_at = now()
    state.save()
    return {"removed": removed, "rematerialised": len(held)}


def _live(api: Any, cluster: Cluster) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for kind, (plural, namespaced) in KINDS.items():
        try:
            items = kube.list_custom_objects(
                api,
                group=kube.KUEUE_GROUP,
                version=kube.KUEUE_VERSION,
                plural=plural,
                namespaced=namespaced,
                label_selector=SELECTOR,
            )
        except kube.KubeError as error:
            if error.status == 404:
                raise KueueMissing(
                    f"Cluster {cluster.name!r} does not serve {kube.KUEUE_GROUP}/{kube.KUEUE_VERSION} "
                    f"{plural}: install Kueue v0.19 (its CRDs) before enforcing through it.",
                    status=404,
                ) from None
            raise
        for item in items:
            item.setdefault("kind", kind)
            found[object_key(item)] = item
    return found


def _delete(api: Any, obj: dict[str, Any]) -> bool:
    meta = obj["metadata"]
    return kube.delete_custom_object(
        api,
        group=kube.KUEUE_GROUP,
        version=kube.KUEUE_VERSION,
        plural=KINDS[obj["kind"]][0],
        name=meta["name"],
        namespace=meta.get("namespace") or "",
    )


def _mark_active(api: Any, live: dict[str, Any], now: Callable[[], datetime]) -> None:
    """gpuplatform is the controller of its AdmissionCheck: Kueue keeps every ClusterQueue naming it
    inactive until the check says Active=True. The transition time is kept once it is Active, so a
    re-apply changes nothing."""
    conditions = (live.get("status") or {}).get("conditions") or []
    current = next((c for c in conditions if c.get("type") == "Active" and c.get("status") == "True"), None)
    since = current["lastTransitionTime"] if current else now().strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.apply_custom_object(
        api,
        body={
            "apiVersion": live["apiVersion"],
            "kind": "AdmissionCheck",
            "metadata": {"name": live["metadata"]["name"]},
            "status": {
                "conditions": [
                    {
                        "type": "Active",
                        "status": "True",
                        "reason": "Active",
                        "message": "gpuplatform checks GE-hour budgets and approvals.",
                        "lastTransitionTime": since,
                        "observedGeneration": live["metadata"].get("generation", 1),
                    }
                ]
            },
        },
        plural="admissionchecks",
        status=True,
    )


def _remove_resource_quotas(api: Any, cluster: Cluster) -> list[str]:
    """The ResourceQuotas the ``resourcequota`` backend wrote (one name, in tenant namespaces): a
    second quota system beside Kueue's would refuse pods Kueue admitted."""
    removed = []
    namespaces = sorted(
        set(
            TenantNamespace.objects.filter(Q(cluster=cluster.name) | Q(cluster="")).values_list(
                "namespace", flat=True
            )
        )
    )
    for namespace in namespaces:
        if kube.delete_resource_quota(api, namespace=namespace, name=QUOTA_NAME):
            removed.append(f"ResourceQuota/{namespace}/{QUOTA_NAME}")
    return removed
