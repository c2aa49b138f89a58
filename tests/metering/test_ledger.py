"""The allocation-basis hourly ledger from the allocation ledger, exact to the second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from django.core.management import call_command

from gpuplatform.errors import Conflict, ValidationFailed
from metering.models import BillingPeriod, CapacityHour, MeteredHour, UsageHour
from metering.services.ledger import meter_allocation_hour
from metering.tasks import meter_hour_task
from tests.metering.scenario import HOUR, build_fleet, the_hour

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 2, tzinfo=UTC)


@pytest.fixture
def fleet(cast):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    return fleet


def charged(fleet):
    ids = {str(a.pk): name for name, a in fleet.allocations.items()}
    return {
        ids[r.share_key]: (r.seconds, r.quantity, r.card_hours) for r in UsageHour.objects.filter(hour=HOUR)
    }


def test_each_share_is_charged_its_card_hours_by_hand(fleet):
    result = meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)

    assert result.rows == 10
    assert result.period == "2025-03"
    assert charged(fleet) == {
        "v-h100": (3600, D("1.000000000"), D("1.000000000")),
        "n-h100": (1800, D("0.500000000"), D("0.500000000")),
        "v-mig-a": (3600, D("0.250000000"), D("0.250000000")),
        "v-mig-b": (3600, D("0.250000000"), D("0.250000000")),
        "n-mig": (2700, D("0.375000000"), D("0.375000000")),
        "v-hami": (3600, D("0.250000000"), D("0.250000000")),
        "n-hami": (1200, D("0.166666666666666667"), D("0.166666666666666667")),
        "v-ts": (3600, D("0.500000000"), D("0.500000000")),
        "n-ts": (1200, D("0.083333333333333333"), D("0.083333333333333333")),
        "v-mps": (3600, D("0.100000000"), D("0.100000000")),
    }
    idle = {r.node_name: (r.cards, r.card_hours, r.idle_card_hours) for r in CapacityHour.objects.all()}
    assert idle == {
        "h100-0": (2, D(2), D("0.5")),
        "h100-mig-0": (1, D(1), D("0.125")),
        "h100-hami-0": (1, D(1), D("0.583333333333333333")),
        "t4-ts-0": (1, D(1), D("0.416666666666666667")),
        "t4-mps-0": (1, D(1), D("0.9")),
    }
    row = UsageHour.objects.get(share_key=str(fleet.allocations["v-h100"].pk))
    assert (row.tenant, row.flavor_name, row.pool_name, row.gpu_model) == (
        fleet.allocations["v-h100"].tenant,
        "h100",
        "h100",
        "H100-80GB",
    )


def test_charged_plus_idle_is_the_nodes_card_hours_exactly(fleet):
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    for cap in CapacityHour.objects.all():
        rows = UsageHour.objects.filter(node_name=cap.node_name)
        assert sum(r.card_hours for r in rows) + cap.idle_card_hours == cap.card_hours


def test_metering_an_hour_again_gives_the_same_rows(fleet):
    fields = ("share_key", "meter", "seconds", "quantity", "card_hours", "tenant_id", "flavor_name")
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    first = list(UsageHour.objects.order_by("share_key").values_list(*fields))
    meter_hour_task(str(fleet.cluster.pk), HOUR.isoformat())
    assert list(UsageHour.objects.order_by("share_key").values_list(*fields)) == first
    assert CapacityHour.objects.count() == 5
    marker = MeteredHour.objects.get()
    assert (marker.complete, marker.rows, marker.attempts) == (True, 10, 2)


def test_an_hour_not_over_yet_is_refused(fleet):
    with pytest.raises(Conflict, match="not over yet"):
        meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=HOUR + timedelta(minutes=59))
    with pytest.raises(ValidationFailed, match="whole hour"):
        meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR + timedelta(minutes=1), now=LATER)


def test_an_hour_without_allocations_is_all_idle(fleet):
    meter_allocation_hour(
        cluster_id=fleet.cluster.pk, hour=HOUR - timedelta(hours=3), now=LATER
    )  # before anyone held
    assert UsageHour.objects.count() == 0
    assert sum(c.idle_card_hours for c in CapacityHour.objects.all()) == D(6)


def test_backfill_meters_every_hour_of_the_range_with_progress(fleet, capsys):
    call_command("backfill_usage", "--from", "2025-03-10T09:00Z", "--to", "2025-03-10T12:00Z")
    out = capsys.readouterr().out
    assert (
        "[1/3] east 2025-03-10T09:00Z: 6 rows" in out
    )  # v-h100 from 9:30, n-mig from 9:55, and four from 9:00
    assert "[3/3] east 2025-03-10T11:00Z" in out
    assert MeteredHour.objects.count() == 3
    assert BillingPeriod.objects.get().label == "2025-03"
