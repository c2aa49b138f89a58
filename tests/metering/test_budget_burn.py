"""Admission's budget burn comes from the usage ledger through quotas' port, once hours are metered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from metering.services.burn import burned_from_ledger
from metering.services.ledger import meter_allocation_hour
from quotas import ports
from quotas.models import Flavor
from tests.metering.scenario import HOUR, build_fleet, the_hour

pytestmark = pytest.mark.django_db
MONTH = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.fixture
def fleet(cast):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    return fleet


def test_metering_fills_the_port_quotas_asks(fleet):
    assert ports.burn_source(lambda **_: {}) is burned_from_ledger


def test_burn_is_the_ledgers_ge_hours_per_subtree_and_flavor(fleet, cast):
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=HOUR + timedelta(hours=2))
    h100 = Flavor.objects.get(name="h100")

    burn = burned_from_ledger(
        tenant_ids=[cast.vision.pk, cast.research.pk], now=HOUR + timedelta(hours=1), month_start=MONTH
    )

    # vision in 10:00-11:00: v-h100 1 (flavor h100); v-mig-a 0.25, v-mig-b 0.25, v-hami 0.25,
    # v-ts 0.5, v-mps 0.1 (no flavor) = 1.35. research adds nlp: n-h100 0.5 (h100); n-mig 0.375,
    # n-hami 0.166666667, n-ts 0.083333333 = 0.625.
    assert burn[cast.vision.pk] == {h100.pk: Fraction(1), None: Fraction(Decimal("1.35"))}
    assert burn[cast.research.pk] == {h100.pk: Fraction(Decimal("1.5")), None: Fraction(Decimal("1.975"))}


def test_without_a_metered_hour_quotas_own_figure_answers(fleet, cast):
    h100 = Flavor.objects.get(name="h100")
    burn = burned_from_ledger(tenant_ids=[cast.vision.pk], now=HOUR + timedelta(hours=1), month_start=MONTH)
    assert burn[cast.vision.pk].get(h100.pk, Fraction(0)) == 0
