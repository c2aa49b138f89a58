"""Admission rules: written by platform-admins, compiled per cluster and applied to it.

``compile_cluster_admission`` reads every rule and reserved pool of a cluster into the pure
compiler's records and validates each manifest against the official OpenAPI schema
(kubernetes-validate), so nothing the API server would refuse is ever sent.

Applying is a job, because it needs the cluster's credential: ``request_admission_apply`` (the web
process: checks, records and queues; it holds no Kubernetes credential, and the chart mounts it no
service-account token) and ``run_admission_apply`` (the Celery task ``policies.apply_admission``, by
id, in the worker, whose service account the chart grants exactly the admission-policy writes) which
server-side applies them (field manager ``gpuplatform``) and deletes the policies and bindings of ours
the rules no longer make. The caller polls the job (``/api/v1/admission-applies/<id>/``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import kubernetes_validate
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.db.after_commit import queue_after_commit
from gpuplatform.db.locks import LockSpace, lock_name
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster, NodePool
from policies.compiler.admission import LABELS, PoolRule, ReservedPool, TenantRules, compile_admission
from policies.models import AdmissionApply, AdmissionRule, ApplyState, PolicyRevision
from quotas.models import Flavor, FlavorKind, PriorityClass
from tenants.models import Tenant, TenantNamespace

__all__ = [
    "APPLY_TASK",
    "KUBERNETES_SCHEMA_VERSION",
    "compile_cluster_admission",
    "delete_admission_rule",
    "request_admission_apply",
    "run_admission_apply",
    "save_admission_rule",
]

# The schema version manifests are validated against (the oldest API server we support with
# admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, GA in 1.30).
KUBERNETES_SCHEMA_VERSION = "1.32.0"
AUDITED = ("tenant_id", "pool_id", "max_per_pod")
APPLY_TASK = "policies.apply_admission"
APPLY_AUDITED = ("state", "applied", "removed", "error")
# A running apply silent this long lost its worker (tasks ack late: the message comes back).
APPLY_STALE = timedelta(minutes=10)


def _audit_view(rule: AdmissionRule) -> dict[str, Any]:
    return {
        "tenant": str(rule.tenant_id),
        "pool": str(rule.pool_id),
        "max_per_pod": rule.max_per_pod,
        "allowed_flavors": sorted(f.name for f in rule.allowed_flavors.all()),
        "allowed_priority_classes": sorted(p.name for p in rule.allowed_priority_classes.all()),
    }


def _require_admin(actor: Any) -> None:
    if not getattr(actor, "is_platform_admin", False):
        raise Forbidden("Only platform-admins change admission rules.")


def save_admission_rule(
    *,
    actor: Any,
    tenant_id: uuid.UUID,
    pool_id: uuid.UUID,
    allowed_flavor_ids: list[uuid.UUID],
    max_per_pod: int | None,
    allowed_priority_class_ids: list[uuid.UUID],
    rule_id: uuid.UUID | None = None,
) -> AdmissionRule:
    """Create (``rule_id`` None) or change a tenant's rule on a pool. Platform-admins only; the
    flavors must be device-plugin flavors of that pool, the priority classes usable by the tenant.
    Audited; the cluster sees it on the next apply (``request_admission_apply``)."""
    _require_admin(actor)
    with transaction.atomic():
        pool = NodePool.objects.filter(pk=pool_id).first()
        if pool is None:
            raise NotFound(f"no node pool {pool_id}", code="policy.unknown_pool", field="pool")
        tenant = Tenant.objects.filter(pk=tenant_id).first()
        if tenant is None:
            raise NotFound(f"no tenant {tenant_id}", code="policy.unknown_tenant", field="tenant")
        flavors = list(Flavor.objects.filter(pk__in=allowed_flavor_ids))
        if len(flavors) != len(set(allowed_flavor_ids)):
            raise ValidationFailed(
                "an allowed flavor does not exist", code="policy.unknown_flavor", field="allowed_flavors"
            )
        wrong = sorted(f.name for f in flavors if f.pool_id != pool.pk or f.kind != FlavorKind.DEVICE_PLUGIN)
        if wrong:
            raise ValidationFailed(
                f"not device-plugin flavors of pool {pool.name}: {', '.join(wrong)}",
                code="policy.flavor_not_in_pool",
                field="allowed_flavors",
            )
        classes = list(
            PriorityClass.objects.select_related("tenant").filter(pk__in=allowed_priority_class_ids)
        )
        if len(classes) != len(set(allowed_priority_class_ids)):
            raise ValidationFailed(
                "an allowed priority class does not exist",
                code="policy.unknown_priority_class",
                field="allowed_priority_classes",
            )
        foreign = sorted(c.name for c in classes if c.tenant and not tenant.path.startswith(c.tenant.path))
        if foreign:
            raise ValidationFailed(
                f"dedicated to other tenants: {', '.join(foreign)}",
                code="policy.priority_class_not_usable",
                field="allowed_priority_classes",
            )
        if max_per_pod is not None and max_per_pod < 1:
            raise ValidationFailed(
                "max_per_pod must be at least 1", code="policy.max_per_pod_invalid", field="max_per_pod"
            )
        if rule_id is None:
            rule = AdmissionRule(tenant=tenant, pool=pool)
            before = None
        else:
            found = AdmissionRule.objects.select_for_update().filter(pk=rule_id).first()
            if found is None:
                raise NotFound("no such admission rule")
            rule, before = found, _audit_view(found)
            rule.tenant, rule.pool = tenant, pool
        rule.max_per_pod = max_per_pod
        rule.updated_by = actor
        rule.updated_at = timezone.now()
        try:
            with transaction.atomic():
                rule.save()
        except IntegrityError:
            raise Conflict(
                f"{tenant.slug} already has a rule on pool {pool.name}", code="policy.admission_rule_exists"
            ) from None
        rule.allowed_flavors.set(flavors)
        rule.allowed_priority_classes.set(classes)
        record_event(
            actor=actor,
            action="admission_rule.created" if before is None else "admission_rule.updated",
            obj=rule,
            before=before,
            after=_audit_view(rule),
        )
    return rule


def delete_admission_rule(*, actor: Any, rule_id: uuid.UUID) -> None:
    _require_admin(actor)
    with transaction.atomic():
        rule = AdmissionRule.objects.select_for_update().filter(pk=rule_id).first()
        if rule is None:
            raise NotFound("no such admission rule")
        before = _audit_view(rule)
        record_event(actor=actor, action="admission_rule.deleted", obj=rule, before=before)
        rule.delete()


def _pool_resources(pools: list[NodePool]) -> dict[uuid.UUID, set[str]]:
    """Every resource name a pool is asked for by: its device-plugin flavors' names and the name
    its latest revision advertises."""
    names: dict[uuid.UUID, set[str]] = defaultdict(set)
    for pool_id, resources in Flavor.objects.filter(
        pool__in=pools, kind=FlavorKind.DEVICE_PLUGIN
    ).values_list("pool_id", "resources"):
        names[pool_id].update(str(r["name"]) for r in resources)
    latest: dict[uuid.UUID, dict[str, Any]] = {}
    for revision in PolicyRevision.objects.filter(pool__in=pools).order_by("pool_id", "number"):
        latest[revision.pool_id] = revision.policy
    for pool_id, policy in latest.items():
        if policy.get("mode") in ("exclusive", "time-slicing", "mps", "mig") and policy.get("resource_name"):
            names[pool_id].add(str(policy["resource_name"]))
    return names


def _namespaces(cluster: Cluster) -> dict[uuid.UUID, set[str]]:
    found: dict[uuid.UUID, set[str]] = defaultdict(set)
    for tenant_id, namespace in TenantNamespace.objects.filter(
        Q(cluster=cluster.name) | Q(cluster="")
    ).values_list("tenant_id", "namespace"):
        found[tenant_id].add(namespace)
    return found


def compile_cluster_admission(*, cluster: Cluster) -> list[dict[str, Any]]:
    """The cluster's ValidatingAdmissionPolicies and bindings, each checked against the official
    schema (a refusal there is a bug of ours: it raises, nothing is applied)."""
    pools = list(NodePool.objects.filter(cluster=cluster).select_related("tenant"))
    resources = _pool_resources(pools)
    namespaces = _namespaces(cluster)
    rules = (
        AdmissionRule.objects.filter(pool__cluster=cluster)
        .select_related("tenant", "pool")
        .prefetch_related("allowed_flavors", "allowed_priority_classes")
    )
    by_tenant: dict[uuid.UUID, list[PoolRule]] = defaultdict(list)
    slug: dict[uuid.UUID, str] = {}
    for rule in rules:
        slug[rule.tenant_id] = rule.tenant.slug
        allowed = sorted({str(r["name"]) for f in rule.allowed_flavors.all() for r in f.resources})
        by_tenant[rule.tenant_id].append(
            PoolRule(
                pool=rule.pool.name,
                pool_resources=tuple(sorted(resources.get(rule.pool_id, set()) | set(allowed))),
                allowed_resources=tuple(allowed),
                allowed_flavors=tuple(sorted(f.name for f in rule.allowed_flavors.all())),
                max_per_pod=rule.max_per_pod,
                priority_classes=tuple(sorted(p.name for p in rule.allowed_priority_classes.all())),
            )
        )
    tenants = tuple(
        TenantRules(tenant=slug[tid], namespaces=tuple(sorted(namespaces.get(tid, set()))), rules=tuple(r))
        for tid, r in by_tenant.items()
        if any(p.pool_resources for p in r)
    )
    reserved = []
    for pool in pools:
        if pool.tenant is None or not resources.get(pool.pk):
            continue
        subtree = Tenant.objects.filter(path__startswith=pool.tenant.path).values_list("pk", flat=True)
        owner_namespaces = sorted({ns for tid in subtree for ns in namespaces.get(tid, set())})
        reserved.append(
            ReservedPool(
                pool=pool.name,
                resources=tuple(sorted(resources[pool.pk])),
                owner=pool.tenant.slug,
                owner_namespaces=tuple(owner_namespaces),
            )
        )
    manifests = compile_admission(tenants=tenants, reserved=tuple(reserved))
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_SCHEMA_VERSION, strict=True)
    return manifests


def request_admission_apply(*, actor: Any, cluster_id: uuid.UUID | str) -> AdmissionApply:
    """Ask for the cluster's admission policies to be made to match the rules; a worker applies
    them (``policies.apply_admission``, queued after commit). An apply of the cluster still queued is
    returned instead (it compiles the rules when it runs, so it serves this ask too): a double click
    applies once. Platform-admins only; audited with the job."""
    _require_admin(actor)
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(pk=cluster_id).first()
        if cluster is None:
            raise NotFound(f"no cluster {cluster_id}", code="policy.unknown_cluster", field="cluster")
        queued = (
            AdmissionApply.objects.filter(cluster=cluster, state=ApplyState.QUEUED)
            .order_by("created_at")
            .first()
        )
        if queued is not None:
            return queued
        job = AdmissionApply.objects.create(cluster=cluster, requested_by=actor)
        record_event(
            actor=actor,
            action="admission.apply_requested",
            obj=cluster,
            after={"apply": str(job.pk), "state": job.state},
        )
        queue_after_commit(APPLY_TASK, str(job.pk))
    return job


def run_admission_apply(
    *, apply_id: uuid.UUID | str, now: Callable[[], datetime] = timezone.now
) -> AdmissionApply:
    """Run one apply: claim it by a conditional update (queued, or running but silent for
    APPLY_STALE: its worker was lost), then, holding the cluster's apply lock, apply the compiled
    manifests and prune ours no longer made; the outcome and its audit event commit together. A
    finished apply, or one another worker holds, is returned untouched: a duplicate delivery does
    nothing. A failure (the cluster refused or could not be reached) is recorded on the job and
    raised for the worker's log; asking again retries."""
    started = now()
    claimed = (
        AdmissionApply.objects.filter(pk=apply_id)
        .filter(
            Q(state=ApplyState.QUEUED) | Q(state=ApplyState.RUNNING, started_at__lt=started - APPLY_STALE)
        )
        .update(state=ApplyState.RUNNING, started_at=started, error="")
    )
    job = AdmissionApply.objects.select_related("cluster", "requested_by").filter(pk=apply_id).first()
    if job is None:
        raise NotFound(f"no admission apply {apply_id}")
    if not claimed:
        return job
    try:
        with transaction.atomic():
            # One apply at a time per cluster, so one's prune never deletes what a newer one applied.
            lock_name(LockSpace.ADMISSION_APPLY, str(job.cluster_id))
            applied, removed = _apply(job.cluster)
            before = snapshot(job, APPLY_AUDITED)
            job.state, job.applied, job.removed, job.finished_at = ApplyState.DONE, applied, removed, now()
            job.save(update_fields=["state", "applied", "removed", "finished_at"])
            record_event(
                actor=job.requested_by,  # on whose behalf; the worker did it
                action="admission.applied",
                obj=job.cluster,
                before=before,
                after={"apply": str(job.pk), **snapshot(job, APPLY_AUDITED)},
            )
    except Exception as error:  # recorded on the job for the caller, then re-raised for the worker
        with transaction.atomic():
            job.refresh_from_db()
            before = snapshot(job, APPLY_AUDITED)
            job.state, job.error, job.finished_at = ApplyState.FAILED, str(error)[:2000], now()
            job.save(update_fields=["state", "error", "finished_at"])
            record_event(
                actor=job.requested_by,
                action="admission.apply_failed",
                obj=job.cluster,
                before=before,
                after={"apply": str(job.pk), **snapshot(job, APPLY_AUDITED)},
            )
        raise
    return job


def _apply(cluster: Cluster) -> tuple[list[str], list[str]]:
    """Server-side apply the cluster's admission manifests and delete ours no longer made.
    Idempotent. The calls (patch, list, delete of the two kinds) are what the chart's
    ``<release>-admission`` ClusterRole grants the worker (tests/deploy/test_rbac.py)."""
    manifests = compile_cluster_admission(cluster=cluster)
    api = client_for(cluster)
    applied = []
    for manifest in manifests:
        kube.apply_admission_object(api, body=manifest)
        applied.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
    wanted = set(applied)
    selector = ",".join(f"{k}={v}" for k, v in LABELS.items())
    removed = []
    # Bindings first: a binding whose policy is gone is an error the API server reports.
    for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"):
        for name in kube.list_admission_objects(api, kind=kind, label_selector=selector):
            if f"{kind}/{name}" not in wanted and kube.delete_admission_object(api, kind=kind, name=name):
                removed.append(f"{kind}/{name}")
    return applied, removed
