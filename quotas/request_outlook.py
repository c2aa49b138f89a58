"""What the request form shows before a tenant asks: per flavor it may use, the tenant's available
quota, the flavor's free capacity, whether the amount fits now, and an estimated wait
(docs/ui.md, "Estimated wait"). A reader: it decides nothing; admission decides when submitted."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from inventory.selectors import cached_pool_resource_capacity
from quotas.models import CapacityRequest, Flavor, Quota
from quotas.models.requests import HOLDING, RequestState
from quotas.scoping import usable_by
from quotas.selectors import flavors_not_offered, quota_standing
from tenants.models import Tenant


@dataclass(frozen=True)
class Wait:
    """``now``: fits at once; else ``until``: when enough capacity is expected back, or None when
    the holders have no end time (held until released) and nothing is sure to free it."""

    now: bool
    until: datetime | None = None


@dataclass(frozen=True)
class FlavorOutlook:
    flavor: Flavor
    resource: str
    quota_available: int  # within the tenant's own nominal, now
    quota_nominal: int | None  # None: the tenant has no quota of this flavor
    free: int  # units of the flavor's pool not held by any request
    capacity: int
    ahead: int  # units pending before a new request on this flavor (FIFO within its priority)
    wait: Wait
    not_offered: str = ""  # why free capacity is short of the pool's cards: tainted or cordoned GPUs

    @property
    def has_room(self) -> bool:
        return self.wait.now


def estimate_wait(
    *, amount: int, free: int, quota_available: int, ahead: int, releases: list[tuple[datetime, int]]
) -> Wait:
    """Room now if the amount fits both the tenant's available quota and the free capacity, with
    nothing pending ahead. Otherwise walk the expected releases (holders' end times, soonest first)
    until enough has come back for what waits ahead plus this amount, and for the quota it lacks
    (any holder's release counts: a relative's frees quota to borrow, the tenant's own frees its
    own). No end time among enough holders: unknown."""
    if ahead == 0 and amount <= free and amount <= quota_available:
        return Wait(now=True)
    # What must come back first: enough of the pool for those ahead and this amount, and enough
    # quota (a relative's release frees quota to borrow, the tenant's own frees its nominal).
    needed = max(ahead + amount - free, amount - quota_available, 1)
    freed = 0
    for at, units in sorted(releases, key=lambda item: item[0]):
        freed += units
        if freed >= needed:
            return Wait(now=False, until=at)
    return Wait(now=False, until=None)


def request_outlook(*, tenant: Tenant, flavors: list[Flavor], amount: int) -> list[FlavorOutlook]:
    """Per one-resource flavor the tenant may use: quota, free capacity, and the wait for ``amount``.
    Flavors with room come first. Five queries plus the cached pool capacity (two more when a pool
    has tainted or cordoned GPUs, to say why they are not offered)."""
    usable = [
        f
        for f in flavors
        if len(f.resource_names) == 1 and usable_by(tenant.path, f.tenant.path if f.tenant else None)
    ]
    if not usable:
        return []
    quotas = list(Quota.objects.filter(tenant=tenant, flavor__in=usable))
    standing = quota_standing(quotas=quotas)
    by_flavor = {(q.flavor_id, q.resource): (q, standing[q.pk]) for q in quotas}
    pool_ids = {f.pool_id for f in usable if f.pool_id}
    capacity = cached_pool_resource_capacity(pool_ids=pool_ids)
    not_offered = flavors_not_offered(flavors=usable)
    held: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    releases: dict[tuple[uuid.UUID, str], list[tuple[datetime, int]]] = defaultdict(list)
    for pool_id, amounts, ends in CapacityRequest.objects.filter(
        state__in=HOLDING, flavor__pool_id__in=pool_ids
    ).values_list("flavor__pool_id", "amounts", "expires_at"):
        for resource, units in amounts.items():
            held[(pool_id, resource)] += int(units)
            if ends is not None:
                releases[(pool_id, resource)].append((ends, int(units)))
    ahead: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    for flavor_id, amounts in CapacityRequest.objects.filter(
        state=RequestState.PENDING, flavor__in=usable
    ).values_list("flavor_id", "amounts"):
        for resource, units in amounts.items():
            ahead[(flavor_id, resource)] += int(units)
    rows = []
    for f in usable:
        resource = f.resource_names[0]
        quota, stands = by_flavor.get((f.pk, resource), (None, None))
        total = capacity.get(f.pool_id, {}).get(resource, 0) if f.pool_id else 0
        free = max(0, total - held[(f.pool_id, resource)]) if f.pool_id else 0
        available = stands.available if stands is not None else 0
        rows.append(
            FlavorOutlook(
                flavor=f,
                resource=resource,
                quota_available=available,
                quota_nominal=quota.nominal if quota is not None else None,
                free=free,
                capacity=total,
                ahead=ahead[(f.pk, resource)],
                wait=estimate_wait(
                    amount=amount,
                    free=free,
                    quota_available=available,
                    ahead=ahead[(f.pk, resource)],
                    releases=releases[(f.pool_id, resource)] if f.pool_id else [],
                )
                if quota is not None
                else Wait(now=False),
                not_offered=not_offered.get(f.pk, ""),
            )
        )
    return sorted(rows, key=lambda row: (not row.has_room, row.quota_nominal is None, row.flavor.name))
