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
