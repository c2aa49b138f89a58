"""Budget burn from the usage ledger: what quotas' port (quotas/ports.py) asks, answered by metering.

GE-hours on the allocation basis (what pods and claims held, exact to the second), from the hourly
ledger for the hours every cluster has metered, then quotas' own request-interval figure for the
hours since (the ledger is an hour behind by construction). With no ledger this month, quotas' figure
for the whole month: nothing burns twice, nothing is skipped.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from fractions import Fraction

from django.db.models import Max, Sum

from inventory.models import Cluster
from metering.models import Meter, MeteredHour, UsageHour
from metering.services.ledger import LEDGER_SOURCE
from quotas.models import Flavor
from quotas.runner.inputs import burned_ge_hours, within_subtrees
from tenants.models import Tenant

HOUR = timedelta(hours=1)


def ledger_metered_until(*, month_start: datetime, now: datetime) -> datetime:
    """The end of the last hour every cluster has on the ledger this month (month_start if any
    cluster has none), never past now."""
    last = dict(
        MeteredHour.objects.filter(source=LEDGER_SOURCE, complete=True, hour__gte=month_start, hour__lt=now)
        .values_list("cluster_id")
        .annotate(last=Max("hour"))
        .values_list("cluster_id", "last")
    )
    clusters = list(Cluster.objects.values_list("pk", flat=True))
    if not clusters or any(c not in last for c in clusters):
        return month_start
    return min(min(last.values()) + HOUR, now)


def burned_from_ledger(
    *, tenant_ids: list[uuid.UUID], now: datetime, month_start: datetime
) -> dict[uuid.UUID, dict[uuid.UUID | None, Fraction]]:
    """Each budget tenant's subtree's GE-hours this month, per flavor id (None: no flavor)."""
    until = ledger_metered_until(month_start=month_start, now=now)
    rest = burned_ge_hours(tenant_ids=tenant_ids, now=now, month_start=until)
    burn: dict[uuid.UUID, dict[uuid.UUID | None, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for tenant, per_flavor in rest.items():
        for flavor, held in per_flavor.items():
            burn[tenant][flavor] += held
    if until <= month_start or not tenant_ids:
        return burn
    paths = dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "path"))
    flavor_ids = dict(Flavor.objects.values_list("name", "pk"))
    rows = (
        UsageHour.objects.filter(within_subtrees(paths.values()))
        .filter(meter=Meter.ALLOCATED_GE_HOURS, source=LEDGER_SOURCE, hour__gte=month_start, hour__lt=until)
        .values_list("tenant__path", "flavor_name")
        .annotate(held=Sum("quantity"))
        .order_by()
    )
    for tenant_path, flavor_name, held in rows:
        for tenant, path in paths.items():
            if tenant_path.startswith(path):
                burn[tenant][flavor_ids.get(flavor_name) if flavor_name else None] += Fraction(held)
    return burn
