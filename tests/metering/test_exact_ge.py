"""GE carried exactly from the inventory to the ledger (issue 32, item 5): a 1g.10gb on an H100 is
1/7 GE, stored to 18 places and read back as exactly 1/7, so a month of it costs 720/7 GE-hours x
the price, rounded once. Stored to six places (0.142857) it lost 1.4e-7 GE an hour to idle, a cent a
month at 7.10."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from fractions import Fraction

import pytest
from django.db.models import Sum

from inventory.crypto import encrypt_text
from inventory.domain.gpu_equivalent import STORED_GE_PLACES, ge_from_decimal, ge_to_decimal, mig_ge
from inventory.models import Allocation, Cluster, Gpu, Node, NodePool
from metering.models import BillingPeriod, RateCard, ReportLine, UsageHour
from metering.services.ledger import meter_allocation_hour
from metering.services.reports import build_period_report

pytestmark = pytest.mark.django_db

NOVEMBER = datetime(2025, 11, 1, tzinfo=UTC)
HOURS = 720  # 30 days


def test_stored_ge_reads_back_as_the_exact_fraction():
    one_g = mig_ge(compute_slices=1, memory_slices=1, card_compute_slices=7, card_memory_slices=8)
    stored = ge_to_decimal(one_g, places=STORED_GE_PLACES)
    assert stored == D("0.142857142857142857")
    assert ge_from_decimal(stored) == Fraction(1, 7)
    # Units of a kind summed as the sync does (ge_each x count): two 1g.10gb are exactly 2/7.
    assert ge_from_decimal(stored * 2) == Fraction(2, 7)
    # 3g.40gb = max(3/7, 4/8) = 1/2; a HAMi share of 10,000 MiB of 81,559 stays itself.
    assert ge_from_decimal(D("0.5")) == Fraction(1, 2)
    hami = Fraction(10000, 81559)
    assert ge_from_decimal(ge_to_decimal(hami, places=STORED_GE_PLACES)) == hami


def test_a_month_of_one_1g_10gb_slice_costs_720_sevenths_card_hours_rounded_once(cast):
    cluster = Cluster.objects.create(
        name="east", api_endpoint="https://east.example:6443", kubeconfig_encrypted=encrypt_text("x")
    )
    pool = NodePool.objects.create(cluster=cluster, name="h100-mig")
    node = Node.objects.create(cluster=cluster, pool=pool, name="mig-0", model_key="H100-80GB", gpu_count=1)
    gpu = Gpu.objects.create(node=node, index=0, model_key="H100-80GB")
    one_g = mig_ge(compute_slices=1, memory_slices=1, card_compute_slices=7, card_memory_slices=8)
    Allocation.objects.create(
        cluster=cluster,
        tenant=cast.vision,
        namespace="team-vision",
        holder_kind="Pod",
        holder_name="infer",
        holder_uid="uid-infer",
        unit_key="h100-mig/infer",
        resource_name="nvidia.com/mig-1g.10gb",
        ge=ge_to_decimal(one_g, places=STORED_GE_PLACES),  # as the sync stores a unit's GE
        model_key="H100-80GB",
        node=node,
        node_name=node.name,
        pool=pool,
        gpu=gpu,
        started_at=NOVEMBER - timedelta(days=1),
        ended_at=None,
    )
    RateCard.objects.create(
        gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("7.10"), effective_from=NOVEMBER
    )
    later = NOVEMBER + timedelta(days=40)
    for h in range(HOURS):
        meter_allocation_hour(cluster_id=cluster.pk, hour=NOVEMBER + timedelta(hours=h), now=later)
    period = BillingPeriod.objects.get(label="2025-11")
    build_period_report(period_id=period.pk)
    lines = {line.kind: line for line in ReportLine.objects.filter(period=period)}
    # By hand: 720 h x 1/7 = 720/7 card-hours x 7.10 = 5112/7 = 730.2857142... -> 730.29.
    # (GE stored as 0.142857: 720 x 0.142857 = 102.85704 x 7.10 = 730.284984 -> 730.28.)
    # Idle: 720 - 720/7 = 4320/7 x 7.10 = 30672/7 = 4381.7142857... -> 4381.71 (was 4381.72).
    # Physical: 720 card-hours x 7.10 = 5112.00 = 730.29 + 4381.71, no residue.
    assert lines["charge"].amount == D("730.29")
    # Card-hours carried exactly (item 5's "rounded hourly to nine places"): each hour's are
    # 1/7 to 18 places, so the month sums to 102.857142857142857040 (off 720/7 by 1.7e-16) and the
    # line rounds that once: 102.857142857 card-hours, and 730.285714285714 exact (5112/7 to 12
    # places). Rounded hourly to nine places (0.142857143) they summed to 102.857142960 and
    # 730.285715016, a millionth of a dollar off the month's own figure.
    hourly = set(UsageHour.objects.filter(period=period).values_list("card_hours", flat=True))
    assert hourly == {D("0.142857142857142857")}
    assert UsageHour.objects.filter(period=period).aggregate(s=Sum("card_hours"))["s"] == D(
        "102.857142857142857040"
    )
    assert lines["charge"].card_hours == D("102.857142857")
    assert lines["charge"].amount_exact == D("730.285714285714")
    assert lines["idle"].card_hours == D("617.142857143")
    assert lines["idle"].amount == D("4381.71")
    period.refresh_from_db()
    (rec,) = period.summary["reconciliation"]
    assert (D(rec["physical"]), D(rec["residue"])) == (D("5112.00"), D(0))
