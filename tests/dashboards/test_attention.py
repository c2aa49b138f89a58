"""The overview's "What needs attention" (gpuplatform/ui/attention.py and each app's source), as the
page shows it: each condition made in the database, the item it raises (title, detail, link, for whom),
and the near misses that raise nothing. The clock stands at NOW, so every figure is worked by hand."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.test import Client

from inventory.models import Node, SyncState
from metering.models import AlertState, Slo, SloAlert, UsageHour
from metering.services.periods import ensure_period
from policies.models import NodePolicyState, Rollout
from quotas.models import Budget, CapacityRequest
from tests.inventory import factories as inv
from tests.policies import factories as pol
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 11, 0, 0, tzinfo=UTC)  # 10 days into March's 31
GPU = "nvidia.com/gpu"


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False):
        yield


def attention(client: Client, user) -> dict[str, dict[str, str]]:
    """key -> the item's severity, its text as read, and where it links."""
    client.force_login(user)
    html = client.get("/").content.decode()
    section = re.search(r'data-testid="needs-attention">(.*?)</section>', html, re.S)
    assert section is not None
    items = {}
    for key, severity, body in re.findall(
        r'<li data-testid="attention-([a-z-]+)" class="attention-([a-z]+)">(.*?)</li>', section.group(1), re.S
    ):
        href = re.search(r'<a href="([^"]+)">', body)
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body)).replace("&#x27;", "'").strip()
        items[key] = {"severity": severity, "text": text, "url": href.group(1) if href else ""}
    if not items:
        assert "Nothing needs attention" in section.group(1)
    return items


def node(name: str, *, ready: bool = True, cordoned: bool = False, present: bool = True) -> Node:
    made = inv.node(name)
    Node.objects.filter(pk=made.pk).update(ready=ready, cordoned=cordoned, present=present)
    return made


def held(tenant, *, ge: int, admitted: datetime, ended: datetime | None) -> CapacityRequest:
    return adm.held_request(tenant=tenant, ge=ge, created=admitted, admitted=admitted, ended=ended)


def pending(tenant, *, waited: timedelta) -> CapacityRequest:
    return CapacityRequest.objects.create(
        tenant=tenant,
        queue=adm.queue(tenant=tenant),
        flavor=adm.flavor(),
        priority_class=adm.priority_class(),
        amounts={GPU: 1},
        ge=Decimal(1),
        state="pending",
        created_at=NOW - waited,
    )


def usage_gap(tenant, *, hour: datetime, share: str, complete: bool = False) -> UsageHour:
    return UsageHour.objects.create(
        cluster=inv.cluster(),
        period=ensure_period(at=hour),
        hour=hour,
        share_key=share,
        meter="used_ge_hours",
        tenant=tenant,
        quantity=Decimal("0.5"),
        attribution="share",
        source="prometheus",
        complete=complete,
    )


def slo_alert(name: str, *, state: str = AlertState.FIRING) -> SloAlert:
    slo = Slo.objects.create(name=name, sli="queue_wait", objective=Decimal("0.99"))
    return SloAlert.objects.create(
        slo=slo,
        rule="fast_burn",
        state=state,
        long_burn=Decimal("15.2"),
        short_burn=Decimal("16.0"),
        opened_at=NOW - timedelta(minutes=20),
        resolved_at=None if state == AlertState.FIRING else NOW - timedelta(minutes=5),
    )


def sync_state(cluster_name: str, *, succeeded_ago: timedelta, failed_ago: timedelta | None = None) -> None:
    SyncState.objects.create(
        cluster=inv.cluster(cluster_name),
        kind="nodes",
        last_success_at=NOW - succeeded_ago,
        last_error_at=None if failed_ago is None else NOW - failed_ago,
        last_error="" if failed_ago is None else "connection refused",
    )


def test_near_misses_raise_nothing(cast, client):
    # every condition just short of its line
    node("gpu-ok")
    node("gpu-gone", ready=False, cordoned=True, present=False)  # left the cluster: not counted
    # INVENTORY_RESYNC_SECONDS is 600: a sync lags after 2 x 600 = 1200 s without a success
    sync_state("east", succeeded_ago=timedelta(seconds=1199))
    # QUEUE_WAIT_ATTENTION_SECONDS is 600: 9 min 59 s is not late
    pending(cast.vision, waited=timedelta(minutes=9, seconds=59))
    # a gap 8 days ago is outside the week looked at; a complete hour is no gap
    usage_gap(cast.vision, hour=NOW - timedelta(days=8), share="old")
    usage_gap(cast.vision, hour=NOW - timedelta(hours=2), share="fine", complete=True)
    slo_alert("resolved-one", state=AlertState.RESOLVED)
    # vision: 1 GE for 24 h on 10 March = 24 GE-hours of a 100 budget (24 %), forecast 24 x 31 / 10 =
    # 74.4: on track
    Budget.objects.create(tenant=cast.vision, flavor=None, limit_ge_hours=Decimal(100))
    held(cast.vision, ge=1, admitted=datetime(2025, 3, 10, tzinfo=UTC), ended=NOW)
    # a node that applied its revision; a rollout that failed 8 days ago
    pool = pol.h100_pool("h100", nodes=1)
    r1 = pol.revision(pool)
    Node.objects.filter(pool=pool).update(ready=True)
    NodePolicyState.objects.create(node=Node.objects.get(pool=pool), desired_revision=r1, state="applied")
    Rollout.objects.create(pool=pool, revision=r1, state="failed", finished_at=NOW - timedelta(days=8))

    for user in (cast.pat, cast.fiona, cast.alice, cast.charlie):
        assert attention(client, user) == {}, user.username


def test_nodes_not_ready_and_cordoned_are_told_to_platform_roles_only(cast, client):
    a = node("gpu-a", ready=False)
    node("gpu-b", ready=False, cordoned=True)
    node("gpu-c", cordoned=True)
    node("gpu-d")
    node("gpu-gone", ready=False, present=False)

    items = attention(client, cast.pat)

    # present and not ready: gpu-a, gpu-b (gpu-gone left the cluster); cordoned: gpu-b, gpu-c; all
    # in one pool, whose page lists each with its state
    assert items["nodes-not-ready"] == {
        "severity": "critical",
        "text": "critical 2 nodes not ready — their cards count as capacity nobody can be admitted onto",
        "url": f"/inventory/pools/{a.pool_id}/",
    }
    assert items["nodes-cordoned"]["url"] == f"/inventory/pools/{a.pool_id}/"
    assert items["nodes-cordoned"]["text"].startswith("warning 2 nodes cordoned — ")
    assert items["nodes-cordoned"]["severity"] == "warning"
    # critical first
    assert list(items) == ["nodes-not-ready", "nodes-cordoned"]
    assert set(attention(client, cast.fiona)) == {"nodes-not-ready", "nodes-cordoned"}
    assert attention(client, cast.alice) == {}


def test_one_node_not_ready_links_to_that_node_and_nodes_in_several_pools_to_the_first(cast, client):
    lone = node("gpu-a", ready=False)

    assert attention(client, cast.pat)["nodes-not-ready"]["url"] == f"/inventory/nodes/{lone.pk}/"

    node("gpu-b", ready=False)  # same pool: the pool's page lists both
    assert attention(client, cast.pat)["nodes-not-ready"]["url"] == f"/inventory/pools/{lone.pool_id}/"

    elsewhere = inv.node("gpu-c", in_pool=inv.pool("NVIDIA-T4"))
    Node.objects.filter(pk=elsewhere.pk).update(ready=False)
    # two pools: the first node by name, whose page names its pool
    assert attention(client, cast.pat)["nodes-not-ready"]["url"] == f"/inventory/nodes/{lone.pk}/"


def test_clusters_whose_sync_lags_or_fails(cast, client):
    sync_state("east", succeeded_ago=timedelta(seconds=1201))  # 1201 s > 2 x 600 s
    sync_state("west", succeeded_ago=timedelta(seconds=30))
    sync_state("north", succeeded_ago=timedelta(seconds=60), failed_ago=timedelta(seconds=10))  # failing now
    sync_state("south", succeeded_ago=timedelta(seconds=60), failed_ago=timedelta(seconds=90))  # recovered

    items = attention(client, cast.pat)

    assert items["clusters-sync-lag"]["text"] == (
        "warning 2 clusters lagging in sync — east, north: the inventory may not show what the cluster "
        "runs now"
    )
    assert attention(client, cast.bob) == {}


def test_requests_pending_past_the_queue_wait_target_in_the_queues_each_person_sees(cast, client, settings):
    pending(cast.vision, waited=timedelta(minutes=11))
    pending(cast.vision, waited=timedelta(minutes=25))
    pending(cast.vision, waited=timedelta(minutes=9))
    pending(cast.nlp, waited=timedelta(hours=3))

    # alice sees vision's queue: 11 and 25 min are past 10 min, 9 min is not; the oldest waited 25 min
    assert attention(client, cast.alice)["requests-pending-late"] == {
        "severity": "warning",
        "text": "warning 2 requests pending over 10 min — the oldest has waited 25 min; each says why it "
        "waits on the queue page",
        "url": "/queues/",
    }
    assert attention(client, cast.bob)["requests-pending-late"]["text"].startswith(
        "warning 1 request pending over 10 min — the oldest has waited 3 h;"
    )  # hours from 120 min on
    assert attention(client, cast.pat)["requests-pending-late"]["text"].startswith(
        "warning 3 requests pending over 10 min"
    )
    assert attention(client, cast.charlie) == {}

    # a 30 min target: only nlp's request is late
    settings.QUEUE_WAIT_ATTENTION_SECONDS = 1800
    assert attention(client, cast.alice) == {}
    assert attention(client, cast.pat)["requests-pending-late"]["text"].startswith(
        "warning 1 request pending over 30 min"
    )


def test_a_pending_request_of_three_days_reads_in_days(cast, client):
    pending(cast.vision, waited=timedelta(days=3, hours=1))
    text = attention(client, cast.alice)["requests-pending-late"]["text"]
    assert "the oldest has waited 3 days;" in text  # 73 h: days from 48 h on


def test_slo_alerts_firing(cast, client):
    alert = slo_alert("queue-wait-research")
    slo_alert("gpu-health", state=AlertState.RESOLVED)

    items = attention(client, cast.pat)

    assert items["slo-alerts-firing"] == {
        "severity": "critical",
        "text": "critical 1 SLO alert firing — queue-wait-research: the error budget burns faster than "
        "the objective allows",
        "url": f"/slos/{alert.slo_id}/",
    }
    # two SLOs firing: the item links to the list of SLOs
    slo_alert("queue-wait-nlp")
    items = attention(client, cast.pat)
    assert items["slo-alerts-firing"]["text"].startswith(
        "critical 2 SLO alerts firing — queue-wait-nlp, queue-wait-research:"
    )
    assert items["slo-alerts-firing"]["url"] == "/slos/"
    assert "slo-alerts-firing" not in attention(client, cast.alice)


def test_usage_hours_with_gaps_counted_per_cluster_hour_as_each_person_may_see_them(cast, client):
    h1, h2 = NOW - timedelta(hours=3), NOW - timedelta(days=6)
    usage_gap(cast.vision, hour=h1, share="vision-1")
    usage_gap(cast.nlp, hour=h1, share="nlp-1")  # the same cluster-hour: one hour with gaps
    usage_gap(cast.nlp, hour=h2, share="nlp-2")
    usage_gap(cast.nlp, hour=NOW - timedelta(days=7, hours=1), share="nlp-old")  # before the week

    assert attention(client, cast.pat)["usage-incomplete"] == {
        "severity": "warning",
        "text": "warning 2 usage hours incomplete — samples missing in the last 7 days: retried, shown, "
        "never read as zero",
        "url": "/metering/",
    }
    assert attention(client, cast.alice)["usage-incomplete"]["text"].startswith(
        "warning 1 usage hour incomplete"
    )
    assert attention(client, cast.bob)["usage-incomplete"]["text"].startswith(
        "warning 2 usage hours incomplete"
    )
    assert attention(client, cast.charlie) == {}


def test_budgets_over_near_and_forecast_over(cast, client):
    march_10 = datetime(2025, 3, 10, tzinfo=UTC)
    # vision: 1 GE from 1 to 5 March = 96 GE-hours of 100: 96 % spent, near
    Budget.objects.create(tenant=cast.vision, flavor=None, limit_ge_hours=Decimal(100))
    held(cast.vision, ge=1, admitted=datetime(2025, 3, 1, tzinfo=UTC), ended=datetime(2025, 3, 5, tzinfo=UTC))
    # nlp: 2 GE for 6 h on 10 March = 12 GE-hours of 10: over
    Budget.objects.create(tenant=cast.nlp, flavor=None, limit_ge_hours=Decimal(10))
    held(cast.nlp, ge=2, admitted=march_10, ended=march_10 + timedelta(hours=6))
    # globex-ml: 1 GE for 2 h = 2 of 5 (40 %), but 10 of 31 days gone: forecast 2 x 31 / 10 = 6.2 > 5
    Budget.objects.create(tenant=cast.globex_ml, flavor=None, limit_ge_hours=Decimal(5))
    held(cast.globex_ml, ge=1, admitted=march_10, ended=march_10 + timedelta(hours=2))
    # globex (its subtree: globex-ml's 2 GE-hours) on 100: forecast 6.2, on track
    Budget.objects.create(tenant=cast.globex, flavor=None, limit_ge_hours=Decimal(100))

    items = attention(client, cast.fiona)

    assert items["budgets-over"] == {
        "severity": "critical",
        "text": "critical 1 budget over budget this month — nlp: a hard budget refuses admissions once spent",
        "url": f"/tenants/{cast.nlp.pk}/dashboard/",
    }
    assert items["budgets-near"]["text"] == (
        "warning 2 budgets near the limit or forecast over it — globex-ml, vision: a hard budget refuses "
        "admissions once spent"
    )
    assert items["budgets-near"]["url"] == f"/tenants/{cast.globex_ml.pk}/dashboard/"
    # each tenant-admin is told of its own budget only
    assert set(attention(client, cast.alice)) == {"budgets-near"}
    assert attention(client, cast.alice)["budgets-near"]["text"].startswith("warning 1 budget near")
    assert set(attention(client, cast.bob)) == {"budgets-over"}
    assert attention(client, cast.charlie) == {}


def test_policy_delivery_in_trouble_and_rollouts_failed_this_week_for_platform_admins(cast, client):
    pool = pol.h100_pool("h100", nodes=6)
    r1 = pol.revision(pool)
    nodes = list(Node.objects.filter(pool=pool).order_by("name"))
    for n, state in zip(nodes, ["drift", "failed", "failed", "blocked", "offline", "applied"], strict=True):
        NodePolicyState.objects.create(node=n, desired_revision=r1, state=state)
    Rollout.objects.create(pool=pool, revision=r1, state="failed", finished_at=NOW - timedelta(days=2))
    Rollout.objects.create(pool=pool, revision=r1, state="succeeded", finished_at=NOW - timedelta(days=1))
    latest = Rollout.objects.create(
        pool=pool, revision=r1, state="failed", finished_at=NOW - timedelta(hours=5)
    )

    items = attention(client, cast.pat)

    dashboard = f"/inventory/pools/{pool.pk}/dashboard/"
    assert items["policy-nodes-drift"] == {
        "severity": "critical",
        "text": "critical 1 node drift — policy delivery: the node's agent is drift (its applied bundle is "
        "not the desired one)",
        "url": dashboard,
    }
    assert items["policy-nodes-failed"]["text"].startswith("critical 2 nodes failed — ")
    assert items["policy-nodes-blocked"]["severity"] == "warning"
    assert items["policy-nodes-blocked"]["text"].startswith("warning 1 node blocked — ")
    assert items["policy-nodes-offline"]["text"].startswith("warning 1 node offline — ")
    assert "policy-nodes-applied" not in items
    assert items["policy-rollouts-failed"] == {
        "severity": "critical",
        "text": "critical 2 rollouts failed this week — latest: r1 on h100, rolled back",
        "url": f"/policies/rollouts/{latest.pk}/",
    }
    # critical items come before warnings
    severities = [item["severity"] for item in items.values()]
    assert severities == sorted(severities, key=["critical", "warning"].index)
    # finance and tenants are not told of policy delivery
    assert not any(key.startswith("policy-") for key in attention(client, cast.fiona))
    assert attention(client, cast.alice) == {}
