"""gpuplatform answers for its AdmissionCheck ``gpuplatform-budget`` on a ``kueue`` cluster
(docs/kueue.md, "The admission check").

``check_kueue_workloads(cluster_id=)`` (the Celery task ``quotas.check_kueue_workloads``, by id,
idempotent; queued after a sync sees a Workload waiting on the check, and every
``KUEUE_CHECK_SECONDS``): for each Workload (as the inventory synced it) whose quota Kueue reserved and
whose check is Pending, estimate the GE-hours it commits, judge them against every budget above its
tenant with the engine's own rule under the cohort's lock (the same lock as a request's admission, so
the two never both spend the last GE-hour), record the verdict and its reservation, and tell the
cluster: the Workload's ``status.admissionChecks`` entry, server-side applied on the status
subresource by field manager ``gpuplatform``. Reservations of Workloads that finished, were evicted
or deactivated, or vanished are released first.

``decide_workload_approval``: an admin above the governing tenant (or a platform-admin) approves, any
admin of the tenant rejects, with a note; the next pass lets it through (or rejects it).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event
from gpuplatform.db.locks import LockSpace, lock_name
from gpuplatform.errors import Forbidden, NotFound, ValidationFailed
from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster, EnforcementBackend, Workload
from inventory.models.workloads import WorkloadState
from quotas.admission.engine import check_budgets
from quotas.admission.quota import Ledger
from quotas.admission.snapshot import Index
from quotas.kueue import check as rule
from quotas.models import CheckVerdict, Flavor, WorkloadApproval, WorkloadCheck
from quotas.runner.inputs import build_snapshot, cohort_root_path, month_bounds, physical_free, root_id_of
from quotas.runner.locks import lock_cohorts
from quotas.services import approval_authority
from tenants import scoping
from tenants.models import Tenant

__all__ = ["check_kueue_workloads", "decide_workload_approval", "waiting_on_us"]

ENDED = (WorkloadState.FINISHED, WorkloadState.EVICTED)


def waiting_on_us(checks: list[dict[str, Any]] | None) -> bool:
    """The Workload's ``gpuplatform-budget`` check is Pending."""
    return any(c.get("name") == rule.BUDGET_CHECK and c.get("state") == "Pending" for c in checks or [])


def _default_hours() -> Fraction:
    return Fraction(str(settings.KUEUE_CHECK_DEFAULT_HOURS))


def check_kueue_workloads(
    *, cluster_id: uuid.UUID | str, now: Callable[[], datetime] = timezone.now
) -> dict[str, Any]:
    """Decide every Workload waiting on gpuplatform's check on one cluster; release the reservations
    of those that ended. One pass at a time per cluster (the KUEUE_CHECK lock); each Workload is
    decided in its own transaction under its cohort's lock; safe to run twice."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        return {"skipped": "no such cluster"}
    if cluster.enforcement_backend != EnforcementBackend.KUEUE:
        return {"skipped": "resourcequota"}
    moment = now()
    released = _release_ended(cluster, moment)
    decided: dict[str, str] = {}
    api: Any = None
    waiting = Workload.objects.filter(
        cluster=cluster, present=True, active=True, state=WorkloadState.QUOTA_RESERVED
    ).select_related("tenant")
    for workload in waiting.order_by("created_in_cluster", "namespace", "name"):
        if not waiting_on_us(workload.admission_checks):
            continue
        with transaction.atomic():
            lock_name(LockSpace.KUEUE_CHECK, f"{cluster.pk}/{workload.uid}")
            verdict = _decide(cluster, workload, moment)
        decided[f"{workload.namespace}/{workload.name}"] = verdict.state
        ours = next(c for c in workload.admission_checks if c.get("name") == rule.BUDGET_CHECK)
        if verdict.state == CheckVerdict.PENDING and ours.get("message") == verdict.message:
            continue  # the cluster already says this: no new transition
        api = api or client_for(cluster)
        _tell(api, workload, verdict, moment)
    return {"decided": decided, "released": released}


def _release_ended(cluster: Cluster, moment: datetime) -> list[str]:
    """A reservation ends when its Workload finishes, is evicted (it is decided again if requeued),
    deactivated or deleted: what it ran is metering's burn from then on."""
    ended = WorkloadCheck.objects.filter(
        workload__cluster=cluster, reserved_at__isnull=False, released_at__isnull=True
    ).filter(Q(workload__present=False) | Q(workload__state__in=ENDED) | Q(workload__active=False))
    released = []
    with transaction.atomic():
        for check in ended.select_related("workload").select_for_update(of=("self",)):
            check.released_at, check.updated_at = moment, moment
            check.save(update_fields=["released_at", "updated_at"])
            record_event(
                actor=None,
                action="kueue_workload.reservation_released",
                obj=check,
                before={"ge_hours": str(check.ge_hours)},
                after={"workload": str(check.workload), "state": check.workload.state},
            )
            released.append(str(check.workload))
    return released


def _decide(cluster: Cluster, workload: Workload, moment: datetime) -> rule.Verdict:
    tenant = workload.tenant
    if tenant is None:
        return rule.Verdict(
            state=rule.CheckState.PENDING,
            code="unattributed",
            message=(
                f"gpuplatform cannot attribute it to a tenant: LocalQueue {workload.queue_name!r} in "
                f"namespace {workload.namespace!r} is not one it manages."
            ),
        )
    lock_cohorts(root_ids=[root_id_of(tenant.path)])
    check, _ = WorkloadCheck.objects.select_for_update().get_or_create(
        workload=workload, defaults={"tenant": tenant}
    )
    if check.verdict == CheckVerdict.READY and check.holds_reservation:
        # Decided and reserved already (the patch may have failed): say Ready again, reserve nothing.
        return rule.Verdict(
            state=rule.CheckState.READY, message=check.message, code=check.code, reserve=False
        )
    flavors = _flavors(cluster, workload)
    est = rule.estimate(
        pod_sets=[
            rule.PodSetUse(
                name=s.get("name", ""),
                count=int(s.get("count") or 0),
                requests=s.get("requests") or {},
                flavors=(workload.flavors or {}).get(s.get("name", ""), {}),
            )
            for s in workload.pod_sets or []
        ],
        ge_per_unit={f.name: f.ge_per_unit() for f in flavors.values()},
        max_execution_seconds=workload.max_execution_seconds,
        default_hours=_default_hours(),
    )
    over, soft = _budgets(tenant, list(flavors.values()), est, moment)
    basis = _approval_basis(flavors, est)
    before = {"verdict": check.verdict, "code": check.code, "approval": check.approval}
    if basis and check.approval == WorkloadApproval.NOT_REQUIRED:
        governing = approval_authority.governing_tenant(tenant=tenant, requester=None)
        check.approval, check.approval_basis = WorkloadApproval.AWAITING, basis
        check.approvers = _approvers(governing)
    _, month_end = month_bounds(moment)
    verdict = rule.decide(
        estimate=est,
        over_budget=over,
        soft_warnings=soft,
        needs_approval=bool(basis),
        approval=rule.Approval(check.approval),
        approvers=check.approvers,
        rejection=_rejection(check),
        retry_seconds=settings.KUEUE_CHECK_RETRY_SECONDS,
        now=moment,
        month_end=month_end,
    )
    check.verdict, check.code, check.message = verdict.state.value, verdict.code, verdict.message
    check.ge_by_flavor = {str(flavors[name].pk): _dec(ge) for name, ge in sorted(est.ge.items())}
    check.amounts = {f: {r: _dec(a) for r, a in sorted(rs.items())} for f, rs in sorted(est.amounts.items())}
    check.hours = Decimal(est.hours.numerator) / Decimal(est.hours.denominator)
    check.ge_hours = Decimal(_dec(est.total_ge_hours))
    check.decided_at = check.updated_at = moment
    if verdict.reserve:
        check.reserved_at, check.released_at = moment, None
        check.reserved_until = moment + timedelta(seconds=float(est.hours * 3600))
    check.save()
    after = {"verdict": check.verdict, "code": check.code, "approval": check.approval}
    if after != before or verdict.reserve:
        action = {
            "within_budget": "kueue_workload.reserved",
            "over_budget": "kueue_workload.over_budget",
            "awaiting_approval": "kueue_workload.awaiting_approval",
            "rejected": "kueue_workload.rejected",
        }[verdict.code]
        record_event(
            actor=None,
            action=action,
            obj=check,
            before=before,
            after={
                **after,
                "workload": str(workload),
                "ge_hours": str(check.ge_hours),
                "message": check.message,
            },
        )
    return verdict


def _dec(value: Fraction) -> str:
    return str((Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal("0.001")).normalize())


def _flavors(cluster: Cluster, workload: Workload) -> dict[str, Flavor]:
    """The gpuplatform flavors Kueue assigned, by name (a ResourceFlavor is named as its flavor)."""
    names = {f for per_resource in (workload.flavors or {}).values() for f in per_resource.values()}
    rows = Flavor.objects.filter(name__in=names).filter(Q(pool__cluster=cluster) | Q(pool__isnull=True))
    return {f.name: f for f in rows}


def _budgets(
    tenant: Tenant, flavors: list[Flavor], est: rule.Estimate, moment: datetime
) -> tuple[str | None, list[str]]:
    """The engine's budget rule over the cohort's budgets (burn from metering, admitted requests'
    and earlier Workloads' commitments): the first hard budget this estimate exceeds, and soft ones."""
    if not est.ge:
        return None, []
    root_path = cohort_root_path(tenant.path)
    snapshot, _ = build_snapshot(
        root_path=root_path, flavors=flavors, now=moment, free=physical_free(flavors)
    )
    ix = Index(snapshot)
    ledger = Ledger(parent=ix.base)
    slug = tenant.slug  # the engine names tenants by slug
    soft: list[str] = []
    for name in sorted(est.ge):
        expected = est.ge[name] * est.hours
        over, warnings = check_budgets(ix, ledger, slug, name, expected)
        soft.extend(w.message for w in warnings)
        if over is not None:
            return over, soft
        for key in ix.budget_keys(slug, name):
            ledger.committed[key] = ledger.committed_of(key) + expected
    return None, soft


def _approval_basis(flavors: dict[str, Flavor], est: rule.Estimate) -> list[dict[str, Any]]:
    """Each flavor whose approval threshold the Workload's own amount crosses (units of its resource,
    as a request's threshold is counted), with the figures judged."""
    crossed = []
    for name, amounts in sorted(est.amounts.items()):
        flavor = flavors[name]
        whole = {r: math.ceil(a) for r, a in amounts.items()}
        if not flavor.needs_approval(whole):
            continue
        resource, amount = max(whole.items(), key=lambda item: item[1])
        crossed.append(
            {"flavor": name, "threshold": flavor.approval_above, "resource": resource, "requested": amount}
        )
    return crossed


def _approvers(governing: Tenant) -> str:
    above = [p for p in governing.lineage_paths if p != governing.path]
    slugs = dict(Tenant.objects.filter(path__in=above).values_list("path", "slug"))
    names = [slugs[p] for p in reversed(above) if p in slugs]
    if not names:
        return "a platform-admin"
    return f"a tenant-admin of {' or '.join(names)} (above {governing.slug}) or a platform-admin"


def _rejection(check: WorkloadCheck) -> str:
    if check.approval != WorkloadApproval.REJECTED:
        return ""
    who = check.approved_by.username if check.approved_by is not None else "an approver"
    return f"Rejected by {who}" + (f": {check.approval_note}" if check.approval_note else ".")


def _tell(api: Any, workload: Workload, verdict: rule.Verdict, moment: datetime) -> None:
    """Server-side apply our entry of the Workload's ``status.admissionChecks`` (a list keyed by
    name: Kueue's and other controllers' entries are left as they are)."""
    entry: dict[str, Any] = {
        "name": rule.BUDGET_CHECK,
        "state": verdict.state.value,
        "message": verdict.message[:32768],
        "lastTransitionTime": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if verdict.requeue_after_seconds is not None:
        entry["requeueAfterSeconds"] = verdict.requeue_after_seconds
    try:
        kube.apply_custom_object(
            api,
            body={
                "apiVersion": f"{kube.KUEUE_GROUP}/{kube.KUEUE_VERSION}",
                "kind": "Workload",
                "metadata": {"name": workload.name, "namespace": workload.namespace},
                "status": {"admissionChecks": [entry]},
            },
            plural="workloads",
            status=True,
        )
    except kube.KubeError as error:
        if error.status != 404:  # deleted meanwhile: nothing to tell
            raise
    else:
        WorkloadCheck.objects.filter(workload=workload).update(patched_at=moment)


def decide_workload_approval(
    *, actor: User, check_id: uuid.UUID | str, approve: bool, note: str = ""
) -> WorkloadCheck:
    """Approve (an admin strictly above the governing tenant, or a platform-admin) or reject (any
    admin of the tenant, with a note) a Workload awaiting approval; audited; the next pass of the
    check (queued after commit) lets it through or rejects it. Another tenant's is a 404."""
    found = (
        WorkloadCheck.objects.visible_to(actor)
        .select_related("tenant", "workload")
        .filter(pk=check_id)
        .first()
    )
    if found is None:
        raise NotFound("No such workload awaiting a decision.")
    if not scoping.can_manage(actor, found.tenant):
        raise Forbidden(
            "Only a tenant-admin of this tenant (or above) or a platform-admin may decide approvals."
        )
    governing = approval_authority.governing_tenant(tenant=found.tenant, requester=None)
    if approve and not approval_authority.may_approve_below(actor, governing.path):
        raise Forbidden(
            "Only a tenant-admin above this tenant or a platform-admin may approve its workloads.",
            code="approver_not_above",
        )
    if len(note) > 2000:
        raise ValidationFailed("The note is too long (2000 characters at most).", field="note")
    with transaction.atomic():
        lock_cohorts(root_ids=[root_id_of(found.tenant.path)])
        check = WorkloadCheck.objects.select_for_update().get(pk=found.pk)
        if check.approval != WorkloadApproval.AWAITING:
            raise ValidationFailed(
                f"This workload is not awaiting approval (it is {check.get_approval_display().lower()}).",
                field="approval",
            )
        check.approval = WorkloadApproval.APPROVED if approve else WorkloadApproval.REJECTED
        check.approved_by, check.approval_note, check.updated_at = actor, note, timezone.now()
        check.save(update_fields=["approval", "approved_by", "approval_note", "updated_at"])
        record_event(
            actor=actor,
            action="kueue_workload." + ("approved" if approve else "approval_rejected"),
            obj=check,
            before={"approval": WorkloadApproval.AWAITING},
            after={"approval": check.approval, "note": note, "workload": str(found.workload)},
        )
        cluster_id = str(found.workload.cluster_id)
        transaction.on_commit(lambda: queue_check(cluster_id=cluster_id))
    return check


def queue_check(*, cluster_id: str) -> None:
    """Run the check pass of one cluster on a worker (after the current transaction commits)."""
    current_app.signature("quotas.check_kueue_workloads", args=(cluster_id,)).delay()
