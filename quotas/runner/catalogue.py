"""The slow-changing part of a cohort's admission snapshot: its tenants, priority classes, quotas,
queues and budget definitions, read once and reused while nothing in them changed.

Reading them was five queries and about 40 % of a decision over HTTP, yet they change only when an
operator edits the catalogue. A statement trigger on each of their tables (quotas migration 0002) renews the
stamp of a `StampedCache` in the writer's transaction; on SQLite (the demo) every snapshot reads afresh.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from django.db.models import Q

from gpuplatform.db.stamped_cache import UNREAD, StampedCache
from quotas import admission as engine
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from tenants.models import Tenant


@dataclass(frozen=True)
class Catalogue:
    """Engine records and the maps back to rows; shared between threads, so never mutated."""

    slug_of: dict[uuid.UUID, str]
    tenants: tuple[engine.TenantNode, ...]
    class_name: dict[uuid.UUID, str]
    priority_classes: tuple[engine.PriorityClassSpec, ...]
    quotas: tuple[engine.QuotaSpec, ...]
    queues: tuple[engine.QueueSpec, ...]
    queue_of: dict[uuid.UUID, str]
    budget_rows: tuple[Budget, ...]


POLICY_FIELDS = (
    "within_tenant",
    "reclaim_within_cohort",
    "borrow_within_cohort",
    "max_priority_threshold",
    "when_can_borrow",
    "when_can_preempt",
)


def queue_policy(
    within_tenant: str,
    reclaim_within_cohort: str,
    borrow_within_cohort: str,
    max_priority_threshold: int | None,
    when_can_borrow: str,
    when_can_preempt: str,
) -> tuple[engine.AdmissionPolicy, engine.FlavorFungibility]:
    """A queue row's preemption and fungibility settings as the engine's records."""
    return (
        engine.AdmissionPolicy(
            within_tenant=engine.PreemptionPolicy(within_tenant),
            reclaim_within_cohort=engine.PreemptionPolicy(reclaim_within_cohort),
            borrow_within_cohort=engine.BorrowWithinCohort(
                policy=engine.BorrowWithinCohortPolicy(borrow_within_cohort),
                max_priority_threshold=max_priority_threshold,
            ),
        ),
        engine.FlavorFungibility(
            when_can_borrow=engine.FungibilityPolicy(when_can_borrow),
            when_can_preempt=engine.FungibilityPolicy(when_can_preempt),
        ),
    )


def queue_name(slug: str, queue: str) -> str:
    return f"{slug}/{queue}"


def catalogue_of(*, root_path: str, flavors: list[Flavor], stamp: int | None = UNREAD) -> Catalogue:
    """The cohort's catalogue for these flavors: from this process's cache while the stamp is
    unchanged, else read afresh. ``stamp``: the stamp as `quotas.runner.cohort_reads` read it under
    the cohort's lock, in this transaction; by default it is read here."""
    key = _key(root_path, flavors)
    read = partial(_read, root_path=root_path, flavors=flavors)
    return _cache.get_at(stamp, key, read)


def _key(root_path: str, flavors: list[Flavor]) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    return (root_path, tuple(sorted((str(f.pk), tuple(f.resource_names)) for f in flavors)))


def cached_catalogue(*, root_path: str, flavors: list[Flavor]) -> tuple[int, Catalogue] | None:
    """What this process has cached for the cohort and the stamp it was read under, unchecked: for
    a caller that reads the stamp after it (`catalogue_of` then gives this same object if they match)."""
    return _cache.peek(_key(root_path, flavors))


_cache: StampedCache[Catalogue] = StampedCache("quotas_catalogue_stamp")
CATALOGUE_STAMP_SQL = _cache.stamp_sql  # sent under the cohort lock with other reads
catalogue_stamp_of = StampedCache.stamp_of


def _read(*, root_path: str, flavors: list[Flavor]) -> Catalogue:
    flavor_ids = [f.pk for f in flavors]
    flavor_name = {f.pk: f.name for f in flavors}
    resources = {f.pk: set(f.resource_names) for f in flavors}
    tenant_rows = list(
        Tenant.objects.filter(path__startswith=root_path).values_list("id", "parent_id", "slug", "path")
    )
    slug_of = {tid: slug for tid, _, slug, _ in tenant_rows}
    classes = list(PriorityClass.objects.select_related("tenant"))
    restricted = any(c.tenant_id for c in classes)
    tenants = []
    for _, parent, slug, path in tenant_rows:
        allowed = None
        if restricted:
            allowed = frozenset(c.name for c in classes if c.tenant is None or path.startswith(c.tenant.path))
        tenants.append(
            engine.TenantNode(
                id=slug, parent=slug_of.get(parent) if parent else None, allowed_priority_classes=allowed
            )
        )
    quotas = tuple(
        engine.QuotaSpec(
            tenant=slug_of[tenant_id],
            flavor=flavor_name[flavor_id],
            resource=resource,
            nominal=nominal,
            borrowing_limit=borrowing_limit,
            lending_limit=lending_limit,
        )
        for tenant_id, flavor_id, resource, nominal, borrowing_limit, lending_limit in Quota.objects.filter(
            tenant_id__in=slug_of, flavor_id__in=flavor_ids
        ).values_list("tenant_id", "flavor_id", "resource", "nominal", "borrowing_limit", "lending_limit")
        if resource in resources[flavor_id]
    )
    queue_of: dict[uuid.UUID, str] = {}
    queues = []
    for qid, tid, qname, strategy, weight, *policy in Queue.objects.filter(tenant_id__in=slug_of).values_list(
        "id", "tenant_id", "name", "strategy", "weight", *POLICY_FIELDS
    ):
        name = queue_name(slug_of[tid], qname)
        queue_of[qid] = name
        preemption, fungibility = queue_policy(*policy)
        queues.append(
            engine.QueueSpec(
                id=name,
                tenant=slug_of[tid],
                strategy=engine.QueueingStrategy(strategy),
                weight=Fraction(weight),
                preemption=preemption,
                fungibility=fungibility,
            )
        )
    budget_rows = tuple(
        Budget.objects.filter(tenant_id__in=slug_of).filter(
            Q(flavor__isnull=True) | Q(flavor_id__in=flavor_ids)
        )
    )
    return Catalogue(
        slug_of=slug_of,
        tenants=tuple(tenants),
        class_name={c.pk: c.name for c in classes},
        priority_classes=tuple(
            engine.PriorityClassSpec(name=c.name, value=c.value, preemptible=c.preemptible) for c in classes
        ),
        quotas=quotas,
        queues=tuple(queues),
        queue_of=queue_of,
        budget_rows=budget_rows,
    )
