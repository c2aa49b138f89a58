"""Late usage for a closed month: a real Prometheus answers an hour of March only after March closed.

The hour is 2025-03-10 10:00-11:00 of tests/metering/scenario.py, its per-share figures those of
tests/metering/test_collection.py (worked there by hand). Prometheus is down when the hour is metered,
so March closes with every usage row of the hour a gap (seen 0 of n, quantity 0). The retry job meters
the hour again once Prometheus answers: March's rows stay as they closed (the database refuses a
change) and the usage read now is booked in April, each line naming the March hour and share it
corrects, priced at March's rate cards on their basis.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
from django.db import IntegrityError, connection, transaction

from gpuplatform.audit.models import AuditEvent
from metering.models import Adjustment, BillingPeriod, MeteredHour, ReportLine, UsageHour
from metering.services.collection import meter_usage_hour, retry_incomplete_usage
from metering.services.ledger import meter_allocation_hour
from metering.services.periods import close_billing_period, start_closing_period
from metering.services.rates import create_rate_card
from metering.services.reports import build_period_report
from metering.services.sources import configure_metrics_source
from metering.tasks import meter_usage_hour_task
from tests.metering.prometheus import PrometheusServer, free_port, serve
from tests.metering.scenario import HOUR, build_fleet, the_hour
from tests.metering.usage_scenario import build, describe_cards

pytestmark = pytest.mark.django_db

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
CLOSED_AT = datetime(2025, 4, 2, tzinfo=UTC)
# The source keeps 60 days (set on the cluster): on 2 April the 10 March hour is still retried.
RETENTION = {"retention_hours": 60 * 24}


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    yield from serve(build(HOUR).series)


@pytest.fixture
def closed_march(cast, prometheus):
    """March closed with the hour metered while Prometheus was down. H100 priced on utilisation at
    2.50 USD, T4 blended (w = 0.5) at 0.40 USD, both from 1 March."""
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    describe_cards(fleet)
    create_rate_card(
        actor=cast.fiona, gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("2.50"),
        effective_from=MARCH, basis="utilisation",
    )  # fmt: skip
    create_rate_card(
        actor=cast.fiona, gpu_model="T4", currency="USD", price_per_ge_hour=D("0.40"),
        effective_from=MARCH, basis="blended", blend_weight=D("0.5"),
    )  # fmt: skip
    configure_metrics_source(
        actor=cast.pat, cluster_id=fleet.cluster.pk, url=f"http://127.0.0.1:{free_port()}", config=RETENTION
    )
    meter_allocation_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=CLOSED_AT)
    down = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=CLOSED_AT)
    assert "unreachable" in down.error
    march_id = BillingPeriod.objects.get(label="2025-03").pk
    start_closing_period(actor=cast.fiona, period_id=march_id, now=CLOSED_AT)
    close_billing_period(actor=cast.fiona, period_id=march_id, now=CLOSED_AT)
    return fleet


def march_usage():
    return sorted(
        UsageHour.objects.filter(hour=HOUR, source="prometheus").values_list(
            "share_key", "meter", "quantity", "samples_seen", "complete"
        )
    )


def test_late_prometheus_data_for_a_closed_month_is_booked_once_in_the_next_period(
    closed_march, cast, api, prometheus
):
    fleet = closed_march
    before = march_usage()
    assert len(before) == 30 and {(q, seen) for _, _, q, seen, _ in before} == {(D(0), 0)}
    assert retry_incomplete_usage(now=CLOSED_AT) == [(fleet.cluster.pk, HOUR)]

    # Prometheus answers now: the retry job (what metering.retry_incomplete_usage queues) meters it.
    configure_metrics_source(
        actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url, config=RETENTION
    )
    for cluster_id, hour in retry_incomplete_usage(now=CLOSED_AT):
        meter_usage_hour_task(str(cluster_id), hour.isoformat())

    # March is as it closed; the hour is complete now, so it is no longer retried.
    assert march_usage() == before
    assert MeteredHour.objects.get(source="prometheus").complete is True
    assert retry_incomplete_usage(now=CLOSED_AT) == []
    april = BillingPeriod.objects.get(label="2025-04")
    march = BillingPeriod.objects.get(label="2025-03")
    adjustments = Adjustment.objects.filter(period=april)
    # 10 shares x 3 meters, and the idle h100/1's unattributed utilisation (a key March never had).
    assert adjustments.count() == 31
    assert {(a.adjusts_period_id, a.hour) for a in adjustments} == {(march.pk, HOUR)}
    names = {str(a.pk): name for name, a in fleet.allocations.items()}
    used = {
        names.get(a.share_key, a.share_key): a.quantity_delta
        for a in adjustments.filter(meter="used_ge_hours")
    }
    assert used == {  # March booked 0 for each: the delta is the whole reading
        "v-h100": D("0.5"), "n-h100": D("0.4"), "v-mig-a": D("0.1"), "v-mig-b": D("0.2"),
        "n-mig": D("0.225"), "v-hami": D("0.2"), "n-hami": D("0.166666667"), "v-ts": D("0.514285714"),
        "n-ts": D("0.085714286"), "v-mps": D("0.3"),
        "unattributed/gpu-operator/nvidia-dcgm-exporter-57pvc": D("0.05"),
    }  # fmt: skip
    energy = adjustments.get(share_key=str(fleet.allocations["v-h100"].pk), meter="energy_kwh")
    assert (energy.quantity_delta, energy.tenant, energy.flavor_name) == (D("0.5"), cast.vision, "h100")
    (event,) = AuditEvent.objects.filter(action="usage.adjustment_booked")
    assert (event.object_id, event.after["adjusts_period"], event.after["adjustments"]) == (
        str(april.pk),
        "2025-03",
        31,
    )
    # used GE-hours: 0.5 + 0.4 + 0.1 + 0.2 + 0.225 + 0.2 + 0.166666667 + 0.514285714 + 0.085714286
    # + 0.3 + 0.05 = 2.741666667
    assert event.after["meters"]["used_ge_hours"]["quantity_delta"] == "2.741666667"

    # Metering the same late hour again (a backfill, a redelivered task) books nothing more.
    again = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=CLOSED_AT)
    assert (again.adjustments, again.complete) == (0, True)
    assert Adjustment.objects.count() == 31
    assert AuditEvent.objects.filter(action="usage.adjustment_booked").count() == 1

    april = build_period_report(period_id=april.pk, at=CLOSED_AT)
    lines = {
        (line.tenant_slug, line.pool_name): (line.card_hours, line.used_ge_hours, line.basis, line.amount)
        for line in ReportLine.objects.filter(period=april, kind="adjustment")
    }
    # Priced at March's cards on their basis, each line rounded once, half-even:
    # H100, utilisation, 2.50 x GE-hours used:
    #   vision h100 0.5 -> 1.25; nlp h100 0.4 -> 1.00; vision mig 0.1 + 0.2 = 0.3 -> 0.75;
    #   nlp mig 0.225 -> 0.5625 -> 0.56; vision hami 0.2 -> 0.50; nlp hami 0.166666667 -> 0.4166666675
    #   -> 0.42.
    # T4, blended w = 0.5, 0.40 x (0.5 x held card-hours (no change) + 0.5 x used):
    #   vision ts 0.5 x 0.514285714 = 0.257142857 -> 0.1028571428 -> 0.10;
    #   nlp ts 0.5 x 0.085714286 = 0.042857143 -> 0.0171428572 -> 0.02; vision mps 0.15 -> 0.06.
    # The exporter pod's idle utilisation: no tenant, no pool, no card prices it: shown unpriced.
    assert lines == {
        ("vision", "east/h100"): (D("0.5"), D("0.5"), "utilisation", D("1.25")),
        ("nlp", "east/h100"): (D("0.4"), D("0.4"), "utilisation", D("1.00")),
        ("vision", "east/h100-mig"): (D("0.3"), D("0.3"), "utilisation", D("0.75")),
        ("nlp", "east/h100-mig"): (D("0.225"), D("0.225"), "utilisation", D("0.56")),
        ("vision", "east/h100-hami"): (D("0.2"), D("0.2"), "utilisation", D("0.50")),
        ("nlp", "east/h100-hami"): (D("0.166666667"), D("0.166666667"), "utilisation", D("0.42")),
        ("vision", "east/t4-ts"): (D("0.257142857"), D("0.514285714"), "blended", D("0.10")),
        ("nlp", "east/t4-ts"): (D("0.042857143"), D("0.085714286"), "blended", D("0.02")),
        ("vision", "east/t4-mps"): (D("0.15"), D("0.3"), "blended", D("0.06")),
        ("", "east/"): (D(0), D("0.05"), "allocation", None),
    }
    rollups = {r["tenant"]: r["amount"] for r in april.summary["rollups"]}
    # vision 1.25 + 0.75 + 0.50 + 0.10 + 0.06 = 2.66; nlp 1.00 + 0.56 + 0.42 + 0.02 = 2.00
    assert rollups == {"acme": "4.66", "research": "4.66", "vision": "2.66", "nlp": "2.00"}

    # Finance's CSV of April shows each adjustment with the period it corrects.
    got = api(cast.fiona).get("/api/v1/reports/export/?period=2025-04&as=csv")
    records = list(csv.DictReader(io.StringIO(b"".join(got.streaming_content).decode())))
    adjusting = [r for r in records if r["kind"] == "adjustment"]
    assert {r["adjusts"] for r in adjusting} == {"2025-03"}
    assert sum(D(r["amount"]) for r in adjusting if r["amount"]) == D("4.66")

    # And March's rows still cannot be changed behind the code's back.
    with pytest.raises(IntegrityError, match="billing period 2025-03 is closed"), transaction.atomic():
        connection.cursor().execute(
            "UPDATE metering_usagehour SET quantity = 1 WHERE period_id = %s AND meter = 'used_ge_hours'",
            [march.pk],
        )
