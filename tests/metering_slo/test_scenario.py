"""SLOs evaluated over a kubesim cluster, end to end: the `hami` scenario (1 node, seed 1) synced by
the real inventory sync; capacity requests over the API, two of them queued behind a full quota and
admitted 18-19 minutes later; contention on two shared cards read from a real Prometheus by the usage
metering task; the SLOs evaluated by the beat task at injected times; a local webhook receiver.

Every SLI and burn rate below is worked out by hand in the comments.

The scenario's cards used here (kubesim builds them from the seed; the sync reads their pods'
`hami.io/vgpu-devices-allocated`, a share's GE being the larger of its memory and cores fractions),
all held since before 2026-01-05 12:00 and all hour:

- GPU-b433e065: team-vision/train-000017 0.5 GE, team-nlp/finetune-000018 0.3 GE
- GPU-4e838f7b: team-recsys/notebook-000015 0.5 GE, team-recsys/finetune-000016 0.5 GE
- GPU-96db1e8c: team-nlp/infer-000014 0.5, team-infra/notebook-000013 0.3, sandbox-unowned/train-000020 0.2
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from celery import current_app

from inventory.models import Allocation, NodePool
from inventory.services import create_cluster
from inventory.sync.service import sync_cluster
from metering.models import AlertDelivery, AlertState, Meter, SliSample, SloAlert, UsageHour
from metering.services.sources import configure_metrics_source
from metering.slos.services import create_receiver, create_slo, standing
from metering.slos.tasks import evaluate_slos_task
from metering.tasks import meter_hour_task, meter_usage_hour_task
from quotas.models import Flavor, PriorityClass, Queue, Quota
from tests.metering.prometheus import PrometheusServer, Series, every
from tests.metering_slo.receiver import Receiver

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # the scenario's "now": its pods run across this hour
URL = "/api/v1/capacity-requests/"
GPU = "nvidia.com/gpu"
B433 = "GPU-b433e065-315c-4445-a892-2d2a689c92ce"
C4E83 = "GPU-4e838f7b-495f-4d45-ab99-91568102e5ca"
C96DB = "GPU-96db1e8c-aae5-4c8c-ade2-109a498e4796"
# (card, namespace, pod, HAMi utilisation ratio of the whole card, constant all hour) -> the pod's
# used GE-hours for the hour are the ratio itself (60 one-minute samples x ratio / 60).
USE = [
    # saturated, 0.72 + 0.2 = 0.92 >= 0.9: vision takes more than its 0.5; nlp gets 0.2 of its 0.3,
    # under 0.95 x 0.3 = 0.285: the one share not delivered
    (B433, "team-vision", "train-000017", 0.72),
    (B433, "team-nlp", "finetune-000018", 0.2),
    # saturated, 0.48 + 0.48 = 0.96: each got 0.48 >= 0.95 x 0.5 = 0.475, both delivered
    (C4E83, "team-recsys", "notebook-000015", 0.48),
    (C4E83, "team-recsys", "finetune-000016", 0.48),
    # not saturated, 0.3 + 0.1 + 0.1 = 0.5 < 0.9: nobody was held back, so none of it counts (though
    # notebook-000013 used 0.1 of its 0.3)
    (C96DB, "team-nlp", "infer-000014", 0.3),
    (C96DB, "team-infra", "notebook-000013", 0.1),
    (C96DB, "sandbox-unowned", "train-000020", 0.1),
]


def at(minutes: int, seconds: int = 0) -> datetime:
    return HOUR + timedelta(minutes=minutes, seconds=seconds)


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def eager_tasks():
    """Queued tasks (the alert deliveries) run where they are queued, as a worker would run them."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


@pytest.fixture
def prometheus():
    """The HAMi monitor's per-container utilisation of USE, 11:50 to 13:10 every minute."""
    series = [
        Series(
            "hami_container_device_utilization_ratio",
            {
                "device_uuid": card,
                "vdevice_index": "0",
                "zone": "vGPU",
                "container": "main",
                "namespace": namespace,
                "pod": pod,
            },
            [(t, ratio) for t in every(at(-10), at(70))],
        )
        for card, namespace, pod, ratio in USE
    ]
    server = PrometheusServer(series).start()
    yield server
    server.stop()


def test_slos_over_a_kubesim_scenario_with_slow_admissions_and_contention(
    cast, api, kubesim_factory, prometheus, receiver, eager_tasks, django_capture_on_commit_callbacks
):
    sim = kubesim_factory(scenario="hami", nodes=1, seed=1)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    held = {
        a.holder_name: (a.gpu.uuid, a.ge)
        for a in Allocation.objects.filter(gpu__isnull=False, ended_at__isnull=True).select_related("gpu")
    }
    for card, _, pod, _ in USE:  # the scenario as the docstring says
        assert held[pod][0] == card
    assert [held[p][1] for p in ("train-000017", "finetune-000018", "notebook-000015")] == [
        Decimal("0.5"), Decimal("0.3"), Decimal("0.5")
    ]  # fmt: skip

    # vision's nominal is 4 of the A100 pool's 8 GPUs; nlp lends nothing (nominal 0)
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-A100-80GB-PCIe")
    a100 = Flavor.objects.create(
        name="a100", pool=pool, gpu_model="A100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    PriorityClass.objects.create(name="batch", value=100)
    for team, nominal in ((cast.vision, 4), (cast.nlp, 0)):
        Queue.objects.create(tenant=team, name="default")
        Quota.objects.create(tenant=team, flavor=a100, resource=GPU, nominal=nominal)
    hook = create_receiver(actor=cast.pat, name="oncall", url=receiver.url)
    waits = create_slo(
        actor=cast.pat, name="queue-wait", sli="queue_wait", objective="0.95", window_days=1,
        receiver_ids=[hook.pk],
    )  # fmt: skip
    shares = create_slo(
        actor=cast.pat, name="shares", sli="share_delivery", objective="0.9", window_days=1,
        receiver_ids=[hook.pk],
    )  # fmt: skip
    configure_metrics_source(actor=cast.pat, cluster_id=cluster.pk, url=prometheus.url)
    alice = api(cast.alice)

    def submit(minutes: int, amount: int, seconds: int = 0) -> dict:
        with time_machine.travel(at(minutes, seconds), tick=False):
            response = alice.post(
                URL, {"tenant": "vision", "flavor": "a100", "priority_class": "batch", "amount": amount},
                format="json",
            )  # fmt: skip
        assert response.status_code == 201, response.json()
        return response.json()

    def release(minutes: int, request: dict) -> None:
        with time_machine.travel(at(minutes), tick=False):
            assert alice.post(f"{URL}{request['id']}/release/", {}, format="json").status_code == 200

    def evaluate(moment: datetime) -> None:
        with time_machine.travel(moment, tick=False), django_capture_on_commit_callbacks(execute=True):
            evaluate_slos_task()

    # 12:00:30 A takes the whole nominal at once; B (12:01) and C (12:02) queue behind it
    a = submit(0, 4, 30)
    b, c = submit(1, 2), submit(2, 1)
    assert (a["state"], b["state"], c["state"]) == ("admitted", "pending", "pending")
    # 12:16: the bucket [12:00, 12:05) has settled (10 minutes after its end): A admitted within
    # 600 s, B and C not (still waiting) -> 1 good of 3. Burn against a 5% budget: (2/3) / 0.05 =
    # 13.33x over 5 min, 30 min, 1 h and 6 h alike (no other events in the day). Fast burn needs
    # 14.4x: no. Slow burn needs 6x: it fires, once.
    evaluate(at(16))
    bucket = SliSample.objects.get(slo=waits, start=HOUR)
    assert (bucket.good, bucket.total) == (1, 3)
    burning = SloAlert.objects.get(slo=waits, state=AlertState.FIRING)
    assert burning.rule == "slow_burn"
    assert burning.long_burn == burning.short_burn == Decimal("13.3333")  # kept to 4 places
    # delivered once, though both the commit hook and the due-deliveries sweep queued it
    assert [(p["event"], p["alert"]["rule"]) for _, p in receiver.posts] == [("firing", "slow_burn")]

    # 12:20 A is released: B and C are admitted now, 19 and 18 minutes after they asked
    release(20, a)
    assert {alice.get(f"{URL}{r['id']}/").json()["state"] for r in (b, c)} == {"admitted"}
    # evaluated again and again while it burns: no second alert, no second post
    for moment in (at(17), at(21), at(30)):
        evaluate(moment)
    assert SloAlert.objects.filter(slo=waits).count() == 1
    assert len(receiver.posts) == 1

    # 12:30 B and C are released; E (12:31) and F (12:32) are admitted at once
    release(30, b)
    release(30, c)
    e, f = submit(31, 2), submit(32, 2)
    assert (e["state"], f["state"]) == ("admitted", "admitted")

    # metering of 12:00-13:00 after the hour: the allocation ledger, then the usage from Prometheus
    with time_machine.travel(at(65), tick=False):
        meter_hour_task(str(cluster.pk), HOUR.isoformat())
        usage = meter_usage_hour_task(str(cluster.pk), HOUR.isoformat())
    assert usage["source"] == "prometheus" and not usage["error"]
    used = dict(
        UsageHour.objects.filter(meter=Meter.USED_GE_HOURS, complete=True, hour=HOUR).values_list(
            "allocation__holder_name", "quantity"
        )
    )
    assert used == {pod: Decimal(str(ratio)) for _, _, pod, ratio in USE}

    # 12:46: [12:30, 12:35) has settled, 2 good of 2. Over the last 30 min (12:05-12:35) 0 bad: the
    # slow burn's short window is quiet, so it resolves. Over 6 h: 2 bad of 5 -> 0.4 / 0.05 = 8x.
    evaluate(at(46))
    assert list(
        SliSample.objects.filter(slo=waits, total__gt=0)
        .order_by("start")
        .values_list("start", "good", "total")
    ) == [(HOUR, 1, 3), (at(30), 2, 2)]
    assert SloAlert.objects.get(slo=waits).state == AlertState.RESOLVED
    now = standing(slo=waits, now=at(46))
    assert now.sli == Decimal("0.6")  # 3 good of 5 over the day
    assert now.budget_remaining == 1 - Decimal(2) / (5 * Decimal("0.05"))  # -7: spent 8 times over
    assert now.burn == {"5m": Decimal(0), "30m": Decimal(0), "1h": Decimal(8), "6h": Decimal(8)}

    # 15:01: the hour 12:00-13:00 has settled for share delivery (2 hours). Saturated cards hold 4
    # shares, 3 delivered -> SLI 0.75; 1 bad of 4 against a 10% budget -> 2.5x over 1 h and 6 h. The
    # 5- and 30-minute windows hold no whole hourly bucket: no rate, so no rule can fire.
    evaluate(at(181))
    assert list(SliSample.objects.filter(slo=shares).values_list("start", "good", "total")) == [(HOUR, 3, 4)]
    share_now = standing(slo=shares, now=at(181))
    assert share_now.sli == Decimal("0.75")
    assert share_now.budget_remaining == 1 - Decimal(1) / (4 * Decimal("0.1"))  # -1.5
    assert share_now.burn == {"5m": None, "30m": None, "1h": Decimal("2.5"), "6h": Decimal("2.5")}
    assert not SloAlert.objects.filter(slo=shares).exists()
    evaluate(at(182))  # again: nothing new
    assert SliSample.objects.filter(slo=shares).count() == 1

    # the receiver heard of the one alert exactly once firing and once resolved, each delivery once
    assert [(p["event"], p["slo"]["name"]) for _, p in receiver.posts] == [
        ("firing", "queue-wait"), ("resolved", "queue-wait")
    ]  # fmt: skip
    assert receiver.accepted == [str(d.pk) for d in AlertDelivery.objects.order_by("created_at")]
