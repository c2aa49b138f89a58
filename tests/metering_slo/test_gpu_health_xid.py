"""The gpu_health SLI with DCGM XID errors read from a real Prometheus (backfilled with promtool), per
5-minute bucket, against figures worked out by hand.

The fleet is tests/metering/scenario.py's six cards on five nodes (2025-03-10). The XID gauge holds the
last code a card reported (0: none); what each card's exporter says, one sample a minute:

- h100/0 (dcgm-exporter 4.8.3: ``hostname``, ``err_code``/``err_msg`` labels, a new series when the code
  changes): 0 until 10:06, then 79 (fallen off the bus) from 10:07 on.
- h100/1 (an old build behind kube-prometheus: ``Hostname`` is the exporter pod, no err labels): 0, then
  13 (an application's graphics exception: not critical) from 10:02 on.
- h100-mig/0: 0 throughout, but no sample at 10:06 and 10:07 (a scrape gap).
- h100-hami/0: 0, then 48 (double-bit ECC) from 10:12 on.
- t4-ts/0: 0 throughout; the inventory holds the card unhealthy.
- t4-mps/0: 0 throughout; the inventory does not know its UUID, so it is matched by node and index.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from gpuplatform.errors import ValidationFailed
from inventory.models import Gpu
from metering.models import SliSample
from metering.services.sources import configure_metrics_source
from metering.slos.services import create_slo, evaluate_slo
from tests.metering.prometheus import PrometheusServer, Series, free_port
from tests.metering.scenario import build_fleet
from tests.metering.usage_scenario import UUIDS, describe_cards

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 10, 10, 0, tzinfo=UTC)
XID = "DCGM_FI_DEV_XID_ERRORS"
MESSAGES = {0: "No Error", 13: "Graphics Engine Exception", 48: "DBE (Double Bit Error) ECC Error",
            79: "GPU has fallen off the bus"}  # fmt: skip


def at(minutes: int, seconds: int = 0) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


def gauge(
    labels: dict[str, str], codes: dict[int, int], *, err_labels: bool, missing: frozenset[int] = frozenset()
):
    """One card's XID gauge from 09:50 to 10:24: ``codes`` maps the first minute of each code. With err
    labels (3.x+), every code is its own series, as the exporter labels the sample with it."""
    changes = sorted(codes.items())
    series: dict[int, Series] = {}
    for minute in range(-10, 25):
        if minute in missing:
            continue
        code = [c for start, c in changes if start <= minute][-1]
        extra = {"err_code": str(code), "err_msg": MESSAGES[code]} if err_labels else {}
        key = code if err_labels else 0
        series.setdefault(key, Series(XID, labels | extra)).samples.append((at(minute).timestamp(), code))
    return list(series.values())


def card(key: str, host_label: str, host: str, **more: str) -> dict[str, str]:
    return {
        "gpu": key.split("/")[1],
        "UUID": UUIDS[key],
        "device": f"nvidia{key.split('/')[1]}",
        "modelName": "NVIDIA H100 80GB HBM3" if key.startswith("h100") else "Tesla T4",
        host_label: host,
        "instance": "10.0.0.1:9400",
        "job": "gpu-metrics",
        **more,
    }


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    exporter = "nvidia-dcgm-exporter-57pvc"
    old_build = card("h100/1", "Hostname", exporter, pod=exporter, namespace="gpu-operator")
    series = [
        *gauge(card("h100/0", "hostname", "h100-0"), {-10: 0, 7: 79}, err_labels=True),
        *gauge(old_build, {-10: 0, 2: 13}, err_labels=False),
        *gauge(
            card("h100-mig/0", "hostname", "h100-mig-0"), {-10: 0}, err_labels=True, missing=frozenset({6, 7})
        ),
        *gauge(card("h100-hami/0", "hostname", "h100-hami-0"), {-10: 0, 12: 48}, err_labels=True),
        *gauge(card("t4-ts/0", "hostname", "t4-ts-0"), {-10: 0}, err_labels=True),
        *gauge(card("t4-mps/0", "hostname", "t4-mps-0"), {-10: 0}, err_labels=True),
    ]
    server = PrometheusServer(series).start()
    yield server
    server.stop()


@pytest.fixture
def fleet(cast, prometheus):
    fleet = build_fleet()
    describe_cards(fleet)
    Gpu.objects.filter(node=fleet.nodes["t4-ts"]).update(healthy=False)
    Gpu.objects.filter(node=fleet.nodes["t4-mps"]).update(uuid="")  # a device-plugin node: no UUID
    configure_metrics_source(actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url)
    return fleet


def buckets(slo):
    return list(SliSample.objects.filter(slo=slo).order_by("start").values_list("start", "good", "total"))


def test_critical_xids_make_a_card_unhealthy_for_the_bucket_and_a_gap_is_unknown(cast, fleet):
    slo = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99", window_days=1)
    for minute in (5, 10, 15):
        evaluate_slo(slo_id=slo.pk, now=at(minute, 30))  # the bucket just ended each time
    assert buckets(slo) == [
        # [10:00, 10:05): only t4-ts is bad (the inventory says so); h100/1's XID 13 is an application's
        (at(0), 5, 6),
        # [10:05, 10:10): h100/0 reports 79 at 10:07 -> bad; h100-mig was seen at 3 of 5 steps and
        # shows no fault: unknown, in neither count; good h100/1, hami, mps of 5 judged
        (at(5), 3, 5),
        # [10:10, 10:15): 79 still held by h100/0, 48 on hami from 10:12, t4-ts: 3 bad; 3 good
        (at(10), 3, 6),
    ]


def test_prometheus_down_leaves_the_bucket_unmeasured_then_a_retry_in_time_measures_it(
    cast, fleet, prometheus
):
    configure_metrics_source(
        actor=cast.pat, cluster_id=fleet.cluster.pk, url=f"http://127.0.0.1:{free_port()}"
    )
    slo = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99", window_days=1)
    evaluate_slo(slo_id=slo.pk, now=at(5, 30))
    # nothing read: every card unknown, the inventory's unhealthy t4-ts too (0 of 1 would read as a
    # fleet of broken cards): no sample for [10:00, 10:05), not 0 of 0, not 6 of 6
    assert buckets(slo) == []
    # Prometheus back a minute later, the bucket still the one just ended: measured, 5 of 6
    configure_metrics_source(actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url)
    evaluate_slo(slo_id=slo.pk, now=at(6, 30))
    assert buckets(slo) == [(at(0), 5, 6)]


def test_the_critical_codes_and_the_metric_are_the_clusters_to_set(cast, fleet, prometheus):
    configure_metrics_source(
        actor=cast.pat,
        cluster_id=fleet.cluster.pk,
        url=prometheus.url,
        config={"critical_xids": [13, 79], "xid": [{"name": XID}]},
    )
    slo = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99", window_days=1)
    evaluate_slo(slo_id=slo.pk, now=at(5, 30))
    # 13 is now critical: h100/1 (13 from 10:02) and t4-ts bad; 4 good of 6
    assert buckets(slo) == [(at(0), 4, 6)]
    for bad in ({"critical_xids": []}, {"critical_xids": ["79"]}, {"critical_xids": [0]}):
        with pytest.raises(ValidationFailed) as refused:
            configure_metrics_source(
                actor=cast.pat, cluster_id=fleet.cluster.pk, url=prometheus.url, config=bad
            )
        assert refused.value.field == "config.critical_xids"
