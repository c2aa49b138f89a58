"""Per-share usage from a real Prometheus (backfilled with promtool), against figures worked by hand:
the exporters' label drift and the faults.

The hour over a fleet synced from kubesim is tests/metering/test_collection_kubesim.py. Here the fleet is
built in the database (tests/metering/scenario.py) so that each card can carry one label shape of
realworld/metrics and hand-placed faults: the hour is 2025-03-10 10:00-11:00, what each card reports is
in tests/metering/usage_scenario.py. One point stands for a minute (scrape every 60 s): 60 points an hour.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from django.core.management import call_command

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import Forbidden, ValidationFailed
from metering.collection.config import SourceConfig
from metering.models import MeteredHour, MetricsSource, UsageHour
from metering.prom import PrometheusUsageSource, plan_chunks
from metering.services.collection import build_plan, meter_usage_hour, retry_incomplete_usage
from metering.services.sources import configure_metrics_source
from metering.tasks import meter_usage_hour_task
from tests.metering.prometheus import PrometheusServer, free_port, serve, silent_server
from tests.metering.scenario import HOUR, build_fleet, the_hour
from tests.metering.usage_scenario import UUIDS, build, describe_cards, with_faults

LATER = datetime(2025, 3, 20, tzinfo=UTC)
FAULTY = HOUR + timedelta(hours=2)


@pytest.fixture(scope="session")
def prometheus() -> Iterator[PrometheusServer]:
    yield from serve(build(HOUR).series + with_faults(FAULTY).series)


@pytest.fixture
def fleet(cast, prometheus):
    fleet = build_fleet()
    fleet.allocations = the_hour(fleet, cast)
    describe_cards(fleet)
    configure_metrics_source(actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url)
    return fleet


def usage(fleet, hour=HOUR):
    names = {str(a.pk): name for name, a in fleet.allocations.items()}
    return {
        (names.get(r.share_key, r.share_key), r.meter): (
            r.quantity,
            r.attribution,
            r.samples_seen,
            r.samples_expected,
        )
        for r in UsageHour.objects.filter(hour=hour, source="prometheus")
    }


pytestmark = pytest.mark.django_db


def test_the_hour_per_share_equals_the_figures_worked_by_hand(fleet):
    done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)

    got = usage(fleet)
    used = {k[0]: v for k, v in got.items() if k[1] == "used_ge_hours"}
    # Whole GPU, pod labels (4.8.3): PROF 0.5 all hour (GPU_UTIL 70% ignored) -> 0.5 GE-h.
    assert used["v-h100"] == (D("0.500000000"), "share", 60, 60)
    # Old build behind kube-prometheus: exported_pod names it, GPU_UTIL 80% for 30 points -> 0.4.
    assert used["n-h100"] == (D("0.400000000"), "share", 30, 30)
    # ... and the card idling at 10% after 10:30 with nobody on it: 0.1 x 30/60, kept as unattributed
    # under the labels' own pod (the exporter's, as kube-prometheus leaves pod on an idle sample).
    assert used["unattributed/gpu-operator/nvidia-dcgm-exporter-57pvc"] == (
        D("0.050000000"),
        "unattributed",
        30,
        30,
    )
    # MIG by GPU_I_ID: ratio of the instance x its GE: 0.4 x 1/4; 0.8 x 1/4; 0.6 x 45/60 x 1/2.
    assert used["v-mig-a"] == (D("0.100000000"), "share", 60, 60)
    assert used["v-mig-b"] == (D("0.200000000"), "share", 60, 60)
    assert used["n-mig"] == (D("0.225000000"), "share", 45, 45)
    # HAMi per container: 0.2 of the card all hour; n-hami 50% (legacy) = 0.5 (current) for 20
    # points, counted once -> 0.5 x 20/60.
    assert used["v-hami"] == (D("0.200000000"), "share", 60, 60)
    assert used["n-hami"] == (D("0.166666667"), "share", 20, 20)
    # Time-slicing: the card's 0.6 GE-h split by GE x seconds: v-ts 0.5 x 3600 = 1800, n-ts
    # 0.25 x 1200 = 300 -> 0.6 x 1800/2100 and 0.6 x 300/2100.
    assert used["v-ts"] == (D("0.514285714"), "split_by_allocation", 60, 60)
    assert used["n-ts"] == (D("0.085714286"), "split_by_allocation", 60, 60)
    # MPS, one client: the card's 0.3.
    assert used["v-mps"] == (D("0.300000000"), "split_by_allocation", 60, 60)

    memory = {k[0]: v[0] for k, v in got.items() if k[1] == "memory_gib_hours"}
    assert memory == {
        "v-h100": D("40.000000000"),  # 40960 MiB all hour
        "n-h100": D("4.000000000"),  # 8 GiB x 30/60
        "v-mig-a": D("10.000000000"),
        "v-mig-b": D("5.000000000"),
        "n-mig": D("15.000000000"),  # 20 GiB x 45/60
        "v-hami": D("4.000000000"),
        "n-hami": D("0.666666667"),  # 2 GiB x 20/60
        "v-ts": D("6.000000000"),  # 7 GiB x 6/7
        "n-ts": D("1.000000000"),  # 7 GiB x 1/7
        "v-mps": D("2.000000000"),
    }
    energy = {k[0]: v[0] for k, v in got.items() if k[1] == "energy_kwh"}
    assert energy == {
        "v-h100": D("0.500000000"),  # 500 W x 1 h, its card's only holder
        "n-h100": D("0.300000000"),  # 300 W: the card's only holder this hour
        # 400 W split by GE x seconds: 900, 900, 1350 of 3150
        "v-mig-a": D("0.114285714"),
        "v-mig-b": D("0.114285714"),
        "n-mig": D("0.171428571"),
        # 200 W: 0.25 x 3600 = 900 and 0.5 x 1200 = 600
        "v-hami": D("0.120000000"),
        "n-hami": D("0.080000000"),
        "v-ts": D("0.060000000"),  # 70 W x 1800/2100
        "n-ts": D("0.010000000"),
        "v-mps": D("0.050000000"),  # 50 W across a counter reset at 10:30: never negative, not lost
    }
    assert done.complete is True
    assert MeteredHour.objects.get(source="prometheus").complete is True
    row = UsageHour.objects.get(share_key=str(fleet.allocations["v-h100"].pk), meter="used_ge_hours")
    assert (row.tenant, row.flavor_name, row.card_key) == (
        fleet.allocations["v-h100"].tenant,
        "h100",
        UUIDS["h100/0"],
    )


def test_metering_the_hour_again_gives_identical_rows(fleet):
    fields = (
        "share_key",
        "meter",
        "quantity",
        "attribution",
        "samples_seen",
        "samples_expected",
        "complete",
        "tenant_id",
    )
    meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    first = list(
        UsageHour.objects.filter(source="prometheus").order_by("share_key", "meter").values_list(*fields)
    )
    meter_usage_hour_task(str(fleet.cluster.pk), HOUR.isoformat())
    again = list(
        UsageHour.objects.filter(source="prometheus").order_by("share_key", "meter").values_list(*fields)
    )
    assert again == first
    assert MeteredHour.objects.get(source="prometheus").attempts == 2


def test_chunked_queries_give_the_same_rows_and_stay_under_the_budget(fleet):
    whole = PrometheusUsageSource(url=fleet_url(fleet), config=SourceConfig())
    chunked = PrometheusUsageSource(url=fleet_url(fleet), config=SourceConfig(sample_budget=1000))
    fields = ("share_key", "meter", "quantity", "samples_seen", "samples_expected")
    meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER, source=whole)
    first = list(UsageHour.objects.order_by("share_key", "meter").values_list(*fields))
    done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER, source=chunked)
    assert list(UsageHour.objects.order_by("share_key", "meter").values_list(*fields)) == first
    # 16 UUID-prefix chunks and one for the rest, 25 queries each; Prometheus counted what each read.
    assert done.queries == 17 * 25
    assert done.max_query_samples is not None and done.max_query_samples <= 1000


def test_only_the_family_reading_two_names_is_split_when_one_name_fits_the_budget(fleet):
    plan, _ = build_plan(cluster_id=fleet.cluster.pk, hour=HOUR)
    # Memory, energy and each HAMi name read one name per series: series x 60 points fits exactly.
    # Utilisation reads PROF_GR_ENGINE_ACTIVE or GPU_UTIL, twice that: 16 prefix chunks and the rest.
    budget = plan.expected_series * 60
    source = PrometheusUsageSource(url=fleet_url(fleet), config=SourceConfig(sample_budget=budget))
    fields = ("share_key", "meter", "quantity", "samples_seen", "samples_expected")
    meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    first = list(UsageHour.objects.order_by("share_key", "meter").values_list(*fields))
    readings = source.read_hour(plan=plan)
    per_family = Counter(
        q.label.split("/")[0] + ("/hami" if "/hami/" in q.label else "") for q in readings.queries
    )
    # utilisation: (3 share + 2 card queries) x 17 chunks; memory 3 + 2; energy 3; HAMi 2 names x 3 each way
    assert per_family == {
        "utilisation": 85,
        "memory": 5,
        "energy": 3,
        "utilisation/hami": 6,
        "memory/hami": 6,
    }
    assert all(q.samples is not None and q.samples <= budget for q in readings.queries)
    meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER, source=source)
    assert list(UsageHour.objects.order_by("share_key", "meter").values_list(*fields)) == first


def fleet_url(fleet):
    return MetricsSource.objects.get(cluster=fleet.cluster).url


def test_a_gap_and_nan_samples_give_incomplete_rows_not_zeros(fleet):
    done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=FAULTY, now=LATER)

    got = usage(fleet, FAULTY)
    # Ten minutes missing on h100/0: 50 of 60 points, what was seen kept (0.5 x 50/60), incomplete.
    assert got[("v-h100", "used_ge_hours")] == (D("0.416666667"), "share", 50, 60)
    # NaN samples on the MIG card make the series-hour unusable: not summed, the row a gap (0 of 60).
    assert got[("v-mig-a", "used_ge_hours")] == (D(0), "share", 0, 60)
    # Memory was scraped throughout: complete.
    assert got[("v-h100", "memory_gib_hours")] == (D("40.000000000"), "share", 60, 60)
    # So do negative memory samples (found by min_over_time): never summed as if good.
    assert got[("v-mig-a", "memory_gib_hours")] == (D(0), "share", 0, 60)
    assert "negative samples not used" in MeteredHour.objects.get(hour=FAULTY).last_error
    assert "non-finite" in MeteredHour.objects.get(hour=FAULTY).last_error
    # A series without its UUID label is kept, by its host: 0.9 x 60/60.
    assert got[("unattributed/host/stray-node", "used_ge_hours")] == (
        D("0.900000000"),
        "unattributed",
        60,
        60,
    )
    rows = UsageHour.objects.filter(hour=FAULTY, source="prometheus")
    assert {r.complete for r in rows if r.samples_seen < r.samples_expected} == {False}
    assert not [r for r in rows if r.quantity == 0 and r.complete and r.samples_expected]
    assert done.complete is False
    assert retry_incomplete_usage(now=LATER) == [(fleet.cluster.pk, FAULTY)]
    # Past the source's retention (15 days by default) the hour is no longer retried: it stays shown.
    assert retry_incomplete_usage(now=FAULTY + timedelta(days=16)) == []


def test_prometheus_down_is_recorded_as_incomplete_rows_then_metered_on_retry(fleet, cast, prometheus):
    configure_metrics_source(
        actor=cast.pat, cluster_id=fleet.cluster.pk, url=f"http://127.0.0.1:{free_port()}"
    )

    down = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)

    assert "unreachable" in down.error
    marker = MeteredHour.objects.get(source="prometheus")
    assert (marker.complete, marker.attempts) == (False, 1)
    assert "unreachable" in marker.last_error
    rows = UsageHour.objects.filter(hour=HOUR, source="prometheus")
    assert rows.count() == 30  # every share and meter, each seen 0 of n: shown as a gap
    assert {(r.quantity, r.samples_seen, r.complete) for r in rows} == {(D(0), 0, False)}
    assert retry_incomplete_usage(now=LATER) == [(fleet.cluster.pk, HOUR)]

    configure_metrics_source(actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url)
    for cluster_id, hour in retry_incomplete_usage(now=LATER):  # what metering.retry_incomplete_usage queues
        meter_usage_hour_task(str(cluster_id), hour.isoformat())

    marker.refresh_from_db()
    assert (marker.complete, marker.attempts, marker.last_error) == (True, 2, "")
    assert UsageHour.objects.get(
        hour=HOUR, share_key=str(fleet.allocations["v-h100"].pk), meter="used_ge_hours", source="prometheus"
    ).quantity == D("0.5")


def test_a_query_prometheus_refuses_is_recorded_and_changes_nothing_already_read(fleet, cast):
    # A real Prometheus whose per-query sample limit is tiny answers 422 "too many samples".
    meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    before = list(
        UsageHour.objects.order_by("share_key", "meter").values_list("share_key", "meter", "quantity")
    )
    for server in serve(build(HOUR).series, flags=["--query.max-samples=20"]):
        configure_metrics_source(actor=cast.pat, cluster_id=fleet.cluster.pk, url=server.url)
        refused = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER)
    assert "answered 422" in refused.error and "too many samples" in refused.error
    marker = MeteredHour.objects.get(source="prometheus")
    assert (marker.complete, marker.attempts) == (False, 2)
    after = list(
        UsageHour.objects.order_by("share_key", "meter").values_list("share_key", "meter", "quantity")
    )
    assert after == before  # an outage never overwrites what an earlier attempt read


def test_a_prometheus_too_slow_to_answer_is_a_recorded_timeout(fleet):
    with silent_server() as url:
        slow = PrometheusUsageSource(url=url, config=SourceConfig(timeout_seconds=1))
        done = meter_usage_hour(cluster_id=fleet.cluster.pk, hour=HOUR, now=LATER, source=slow)
    assert "timed out after 1s" in done.error
    assert done.complete is False
    assert "timed out" in MeteredHour.objects.get(source="prometheus").last_error


def test_only_platform_admins_configure_a_source_and_bad_names_are_refused(fleet, cast):
    with pytest.raises(Forbidden):
        configure_metrics_source(actor=cast.fiona, cluster_id=fleet.cluster.pk, url="https://prom.test:9090")
    with pytest.raises(ValidationFailed) as bad:
        configure_metrics_source(
            actor=cast.pat,
            cluster_id=fleet.cluster.pk,
            url="https://prom.test:9090",
            config={"pod_labels": ["pod name"]},
        )
    assert bad.value.field == "config.pod_labels"
    events = AuditEvent.objects.filter(action="metrics_source.configured")
    assert events.count() == 1  # the fixture's; the refused ones changed nothing


def test_chunks_cover_every_uuid_once():
    chunks = plan_chunks(expected_series=50_000, points=60, budget=5_000_000)  # 6M samples: split
    assert len(chunks) == 17
    assert chunks[0].on("UUID") == 'UUID=~"GPU-0.*"'
    assert chunks[10].on("UUID") == 'UUID=~"GPU-[aA].*"'
    assert chunks[-1].on("UUID") == 'UUID!~"GPU-[0-9a-fA-F]{1}.*"'


def test_backfill_usage_rebuilds_both_bases_with_progress(fleet):
    out = io.StringIO()
    call_command("backfill_usage", "--from", "2025-03-10T10:00Z", "--to", "2025-03-10T11:00Z", stdout=out)

    assert "[1/1] east 2025-03-10T10:00Z: 10 rows; usage (prometheus) 31 rows, complete" in out.getvalue()
    assert UsageHour.objects.filter(hour=HOUR, source="ledger").count() == 10
    # 10 shares x 3 meters, and the idle card's unattributed utilisation
    assert UsageHour.objects.filter(hour=HOUR, source="prometheus").count() == 31
