"""The demo meters the open month's hours on the allocation basis too, not only utilisation: the
overview's "GE-hours allocated" for this month is what was held in the hours already over, never
"none metered" while pods run. One H100 held from 22:00 on 1 March, the demo started at 05:30 on
2 March: seven hours over (22:00 to 04:00), 1 GE each = 7 GE-hours allocated."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db.models import Sum

from demo.usage import seed_demo_usage
from inventory.models import Allocation
from metering.models import UsageHour
from metering.models.usage import Meter
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def test_the_open_months_hours_are_metered_on_the_allocation_basis():
    node = inv.node()
    inv.whole_gpus(node, 1)
    Allocation.objects.create(
        cluster=node.cluster, tenant=None, namespace="team-vision", holder_kind="Pod", holder_name="train",
        holder_uid="uid-train", unit_key="nvidia.com/gpu", resource_name="nvidia.com/gpu", count=1,
        ge=Decimal(1), model_key="H100-80GB", node=node, node_name=node.name, pool=node.pool,
        started_at=datetime(2026, 3, 1, 22, tzinfo=UTC),
    )  # fmt: skip
    now = datetime(2026, 3, 2, 5, 30, tzinfo=UTC)

    seed_demo_usage(cluster=node.cluster, days=1, now=now)

    allocated = UsageHour.objects.filter(meter=Meter.ALLOCATED_GE_HOURS)
    assert allocated.aggregate(total=Sum("quantity"))["total"] == Decimal(7)
    assert allocated.values("hour").distinct().count() == 7
    # A second start meters nothing again (the hours are done).
    assert seed_demo_usage(cluster=node.cluster, days=1, now=now) == 0
    assert allocated.count() == 7
