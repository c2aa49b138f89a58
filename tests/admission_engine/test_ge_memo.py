"""A snapshot remembers each (flavor, amounts)'s GE while it indexes its holders: the same amounts on
another flavor still get that flavor's GE, and amounts a flavor cannot hold are still refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest

from quotas import admission as e
from quotas.admission.snapshot import SnapshotError

NOW = datetime(2026, 12, 8, tzinfo=UTC)


def snapshot(active: tuple[e.ActiveAllocation, ...]) -> e.Snapshot:
    flavors = (
        e.FlavorSpec(name="h100", resources=(e.FlavorResource(name="gpu", ge_per_unit=Fraction(1)),)),
        e.FlavorSpec(name="mig", resources=(e.FlavorResource(name="gpu", ge_per_unit=Fraction(3, 7)),)),
    )
    return e.Snapshot(
        now=NOW,
        month_end=NOW + timedelta(days=20),
        flavors=flavors,
        tenants=(e.TenantNode(id="team"),),
        quotas=tuple(e.QuotaSpec(tenant="team", flavor=f.name, resource="gpu", nominal=10) for f in flavors),
        priority_classes=(e.PriorityClassSpec(name="batch", value=1),),
        queues=(e.QueueSpec(id="team/default", tenant="team"),),
        free={"h100": {"gpu": 10}, "mig": {"gpu": 10}},
        active=active,
    )


def held(rid: str, flavor: str, amounts: dict[str, int]) -> e.ActiveAllocation:
    return e.ActiveAllocation(
        request_id=rid,
        tenant="team",
        flavor=flavor,
        amounts=amounts,
        priority_class="batch",
        admitted_order=1,
    )


def test_the_same_amounts_on_two_flavors_get_each_flavors_ge():
    index = snapshot(
        (held("a", "h100", {"gpu": 3}), held("b", "mig", {"gpu": 3}), held("c", "h100", {"gpu": 3}))
    ).index
    assert index.alloc_ge == {"a": Fraction(3), "b": Fraction(9, 7), "c": Fraction(3)}


def test_amounts_a_flavor_cannot_hold_are_refused_on_every_holder():
    with pytest.raises(SnapshotError, match="no resource 'cpu'"):
        snapshot((held("a", "h100", {"gpu": 1}), held("b", "h100", {"cpu": 1})))
    with pytest.raises(SnapshotError, match="negative amount"):
        snapshot((held("a", "h100", {"gpu": 1}), held("b", "h100", {"gpu": -1})))
