"""The demo's billing seed: rate cards, last month closed by fiona with its report and files, once."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from demo.billing import seed_demo_billing
from demo.seed import seed_demo_organisation
from metering.models import BillingPeriod, ReportFile, ReportLine
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def test_last_month_is_closed_with_a_reconciled_report_and_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2025, 4, 10, 12, tzinfo=UTC))
    seed_demo_organisation(token_file=tmp_path / "tokens.json")
    h100 = inv.pool("NVIDIA-H100-80GB-HBM3")
    t4 = inv.pool("Tesla-T4")
    inv.Node.objects.create(cluster=h100.cluster, pool=h100, name="h-0", model_key="H100-80GB", gpu_count=8)
    inv.Node.objects.create(cluster=t4.cluster, pool=t4, name="t-0", model_key="T4-16GB", gpu_count=4)

    assert seed_demo_billing(cluster=h100.cluster) is True
    assert seed_demo_billing(cluster=h100.cluster) is False  # `make demo` again: left as it is

    march = BillingPeriod.objects.get(label="2025-03")
    assert (march.state, march.closed_by.username) == ("closed", "fiona")
    assert all(
        r["holds"] and Decimal(r["residue"]) == 0  # whole card-hours at whole cents: nothing to round
        for r in march.summary["reconciliation"]
    )
    # 744 hours (March, UTC): 8 H100s at 2.50 and 4 T4s at 0.35 cost 14,880.00 + 1,041.60 physically.
    physical = sum(Decimal(r["physical"]) for r in march.summary["reconciliation"])
    assert physical == Decimal("15921.60")
    charged = {line.tenant_slug for line in ReportLine.objects.filter(period=march, kind="charge")}
    assert {"vision", "nlp"} <= charged
    assert sorted(ReportFile.objects.filter(period=march).values_list("format", flat=True)) == [
        "csv",
        "focus",
        "xlsx",
    ]


def test_the_closed_months_focus_1_3_file_passes_the_validator_and_reconciles(tmp_path, monkeypatch):
    """The stored FOCUS file of the demo's closed month is FOCUS 1.3: the suite's validator finds
    nothing, each pool's allocated rows sum to its physical cost in the report's reconciliation,
    and the unpriced H200 pool is there, marked, not dropped."""
    import csv
    import io

    from tests.metering_exports.focus_validator import validate

    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2025, 4, 10, 12, tzinfo=UTC))
    seed_demo_organisation(token_file=tmp_path / "tokens.json")
    h100 = inv.pool("NVIDIA-H100-80GB-HBM3")
    t4 = inv.pool("Tesla-T4")
    h200 = inv.pool("NVIDIA-H200", on=h100.cluster)
    inv.Node.objects.create(cluster=h100.cluster, pool=h100, name="h-0", model_key="H100-80GB", gpu_count=8)
    inv.Node.objects.create(cluster=t4.cluster, pool=t4, name="t-0", model_key="T4-16GB", gpu_count=4)
    inv.Node.objects.create(cluster=h100.cluster, pool=h200, name="g-0", model_key="H200-141GB", gpu_count=2)
    seed_demo_billing(cluster=h100.cluster)

    march = BillingPeriod.objects.get(label="2025-03")
    stored = ReportFile.objects.get(period=march, format="focus").file.open("rb").read().decode()
    assert validate(stored, origin_of=lambda row: row["x_OriginChargeId"]) == []
    records = list(csv.DictReader(io.StringIO(stored)))
    numbers = set(ReportLine.objects.filter(period=march).values_list("line_no", flat=True))
    assert {int(r["x_LineNumber"]) for r in records} == numbers  # nothing dropped
    by_pool: dict[str, Decimal] = {}
    for record in records:
        assert record["AllocatedMethodId"] == "gpuplatform-card-hours-v1"
        # One node a pool here: each origin is a node's charge, and the node is its pool's cards.
        assert (record["ResourceType"], record["ResourceName"]) == (
            "GPU node",
            record["ResourceId"].rsplit("/")[-1],
        )
        by_pool[record["x_Pool"]] = by_pool.get(record["x_Pool"], Decimal(0)) + Decimal(record["BilledCost"])
    for row in march.summary["reconciliation"]:
        assert by_pool[row["pool"]] == Decimal(row["physical"]), row["pool"]
    # 744 h x 2 H200 cards, no rate card: every one of those card-hours is in the file, at 0, marked.
    unpriced = [r for r in records if r["x_Unpriced"] == "true"]
    assert sum(Decimal(r["PricingQuantity"]) for r in unpriced) == 744 * 2
    assert {r["x_Pool"].rsplit("/", 1)[-1] for r in unpriced} == {"NVIDIA-H200"}
