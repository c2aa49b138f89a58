"""SLOs evaluated over real requests, inventory and a local webhook receiver, with numbers worked out
by hand: the SLI per bucket, the burn rates, one alert per rule, delivered exactly once despite a
failed first attempt, and resolved when the burning stops."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine

from inventory.models import Gpu
from metering.models import AlertDelivery, AlertState, DeliveryState, SliSample, SloAlert
from metering.slos.services import create_receiver, create_slo, deliver, evaluate_slo, standing
from quotas.services.requests import submit_request
from tests.metering_slo.receiver import Receiver
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


@pytest.fixture
def receiver():
    r = Receiver(fail=1)
    yield r
    r.close()


def _submit(cast, amount: int, at: datetime, tenant: str = "vision"):
    actor = cast.alice if tenant == "vision" else cast.bob
    with time_machine.travel(at, tick=False):
        return submit_request(
            actor=actor, tenant=tenant, flavor="h100", amount=amount, priority_class="batch"
        )


def test_queue_wait_burns_its_budget_alerts_once_and_resolves(cast, receiver):
    # 6 physical H100s; nominal vision 4 + nlp 4 = 8: more promised than there is
    make_catalog(cast, physical=6, vision=4, nlp=4)
    # nlp holds 4 of the 6 since the day before (outside the 1-day window measured below)
    _submit(cast, 4, T0 - timedelta(days=1, hours=1), tenant="nlp")
    first = _submit(cast, 2, T0 + timedelta(minutes=1))  # fits the 2 left: admitted at once (good)
    second = _submit(cast, 2, T0 + timedelta(minutes=2))  # within nominal, no room: waits (bad)
    _submit(cast, 5, T0 + timedelta(minutes=3))  # more than vision's nominal: not this SLI's
    assert (first.request.state, second.request.state) == ("admitted", "pending")

    hook = create_receiver(actor=cast.pat, name="oncall", url=receiver.url)
    with time_machine.travel(T0 - timedelta(minutes=15), tick=False):
        slo = create_slo(
            actor=cast.pat,
            name="queue-wait",
            sli="queue_wait",
            objective="0.99",
            window_days=1,
            params={"within_seconds": 60},
            receiver_ids=[hook.pk],
        )

    # at 10:06 the buckets up to 10:05 have settled (60 s): [10:00, 10:05) holds 1 good of 2
    done = evaluate_slo(slo_id=slo.pk, now=T0 + timedelta(minutes=6))
    bucket = SliSample.objects.get(slo=slo, start=T0)
    assert (bucket.good, bucket.total) == (1, 2)
    assert not SliSample.objects.filter(slo=slo, total__gt=0).exclude(start=T0).exists()
    # burn: 50% errors against a 1% budget = 50x over every window that holds the bucket
    assert done.firing == {"fast_burn": (Decimal(50), Decimal(50)), "slow_burn": (Decimal(50), Decimal(50))}
    assert SloAlert.objects.filter(slo=slo, state=AlertState.FIRING).count() == 2
    now = standing(slo=slo, now=T0 + timedelta(minutes=6))
    assert now.sli == Decimal("0.5")
    assert now.budget_remaining == 1 - Decimal(1) / (2 * Decimal("0.01"))  # -49: overspent 50 times
    assert now.burn["1h"] == Decimal(50) and now.burn["5m"] == Decimal(50)

    # evaluated again a minute later: nothing new written, no second alert, no second delivery
    again = evaluate_slo(slo_id=slo.pk, now=T0 + timedelta(minutes=7))
    assert (again.opened, again.resolved) == ([], [])
    deliveries = list(AlertDelivery.objects.filter(alert__slo=slo, event="firing"))
    assert len(deliveries) == 2  # one per rule, to the one receiver

    # the receiver fails the first post: retried after its backoff, then delivered, then never again
    one = deliveries[0]
    t = T0 + timedelta(minutes=7)
    assert deliver(delivery_id=one.pk, now=t).state == DeliveryState.PENDING
    assert deliver(delivery_id=one.pk, now=t + timedelta(seconds=10)).attempts == 1  # not due yet
    assert deliver(delivery_id=one.pk, now=t + timedelta(seconds=31)).state == DeliveryState.DELIVERED
    deliver(delivery_id=one.pk, now=t + timedelta(hours=1))
    assert [key for key, _ in receiver.posts] == [str(one.pk), str(one.pk)]
    assert receiver.accepted == [str(one.pk)]
    assert receiver.posts[-1][1]["event"] == "firing" and receiver.posts[-1][1]["slo"]["name"] == "queue-wait"

    # an hour later the last 5 minutes (and 30) are quiet: both rules resolve, each notified once
    later = evaluate_slo(slo_id=slo.pk, now=T0 + timedelta(hours=7))
    assert len(later.resolved) == 2 and not later.opened
    assert AlertDelivery.objects.filter(alert__slo=slo, event="resolved").count() == 2


def test_gpu_health_and_quota_backed_measure_the_bucket_just_ended(cast):
    catalog = make_catalog(cast, physical=6, vision=4, nlp=4)
    node = catalog.pool.nodes.get()
    for index in range(6):
        Gpu.objects.create(node=node, index=index, healthy=index != 0)  # one card of six unhealthy
    at = T0 + timedelta(minutes=7)
    health = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99", window_days=1)
    backed = create_slo(actor=cast.pat, name="backed", sli="quota_backed", objective="0.95", window_days=1)
    evaluate_slo(slo_id=health.pk, now=at)
    evaluate_slo(slo_id=backed.pk, now=at)
    # the bucket just ended, [10:00, 10:05): 5 healthy of 6; the one flavor resource promises 8 on 6
    # cards of which 5/6 are healthy (5 units): not backed
    assert list(SliSample.objects.filter(slo=health).values_list("start", "good", "total")) == [(T0, 5, 6)]
    assert list(SliSample.objects.filter(slo=backed).values_list("start", "good", "total")) == [(T0, 0, 1)]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"sli": "latency"}, "slo.unknown_sli"),
        ({"objective": "1"}, "slo.objective_invalid"),
        ({"objective": "ninety"}, "slo.objective_invalid"),
        ({"window_days": 0}, "slo.window_invalid"),
        ({"params": {"within_seconds": -5}}, "slo.param_invalid"),
        ({"params": {"rm -rf": 1}}, "slo.unknown_param"),
    ],
)
def test_bad_slos_are_refused_with_a_stable_code_and_nothing_is_made(cast, api, body, code):
    client = api(cast.pat)
    payload = {"name": "x", "sli": "queue_wait", "objective": "0.99", "window_days": 30, **body}
    response = client.post("/api/v1/slos/", payload, format="json")
    assert response.status_code == 400, response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == code
    assert client.get("/api/v1/slos/").json()["count"] == 0


def test_slos_are_the_platforms(cast, api):
    slo = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99")
    assert api(cast.pat).get(f"/api/v1/slos/{slo.pk}/").status_code == 200
    assert api(cast.alice).get(f"/api/v1/slos/{slo.pk}/").status_code == 404
    assert (
        api(cast.alice)
        .post("/api/v1/slos/", {"name": "y", "sli": "gpu_health", "objective": "0.9"}, format="json")
        .status_code
        == 403
    )


def test_the_slo_pages_show_where_it_stands_and_tenants_why_they_see_none(cast, receiver):
    from django.test import Client

    make_catalog(cast, physical=6, vision=4, nlp=4)
    slo = create_slo(actor=cast.pat, name="gpus", sli="gpu_health", objective="0.99", window_days=1)
    admin = Client()
    admin.force_login(cast.pat)
    page = admin.get("/slos/").content.decode()
    assert 'data-testid="slos"' in page and "GPU health" in page and "no events yet" in page
    detail = admin.get(f"/slos/{slo.pk}/").content.decode()
    assert "objective 99 % over 1 day" in detail and 'data-testid="no-samples"' in detail
    tenant = Client()
    tenant.force_login(cast.alice)
    assert 'data-testid="slos-platform-only"' in tenant.get("/slos/").content.decode()
    assert tenant.get(f"/slos/{slo.pk}/").status_code == 404
