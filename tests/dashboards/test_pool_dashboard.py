"""The pool dashboard (/inventory/pools/<id>/dashboard/): the utilisation heatmap per card over the last
24 hours from the usage ledger, the pool's fragmentation, and its policy state (declared mode, latest
revision and rollout, each node's delivery), worked by hand on PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import Gpu, Node
from metering.dashboards.pool import heatmap_context
from metering.models import MeteredHour, UsageHour
from metering.services.periods import ensure_period
from policies.models import NodePolicyState, Rollout
from tests.inventory import factories as inv
from tests.policies import factories as pol

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 10, 13, 20, tzinfo=UTC)  # the last whole hour is 12:00


def node_with_cards(pool, name: str, uuids: list[str]) -> Node:
    node = Node.objects.create(
        cluster=pool.cluster, pool=pool, name=name, model_key="H100-80GB", gpu_count=len(uuids), ready=True
    )
    for index, uuid in enumerate(uuids):
        Gpu.objects.create(node=node, index=index, uuid=uuid, model_key="H100-80GB")
    return node


def card_use(pool, *, card: str, hour: datetime, quantity: str, share: str, complete: bool = True) -> None:
    UsageHour.objects.create(
        cluster=pool.cluster,
        period=ensure_period(at=hour),
        hour=hour,
        share_key=share,
        meter="used_ge_hours",
        pool=pool,
        pool_name=pool.name,
        card_key=card,
        quantity=Decimal(quantity),
        attribution="share",
        source="prometheus",
        complete=complete,
    )


def metered(pool, hour: datetime) -> None:
    MeteredHour.objects.create(cluster=pool.cluster, hour=hour, source="prometheus", complete=True)


@pytest.fixture
def busy_pool(db):
    pool = inv.pool("h100")
    node_with_cards(pool, "gpu-a", ["GPU-a0", "GPU-a1"])
    noon, eleven = datetime(2025, 3, 10, 12, tzinfo=UTC), datetime(2025, 3, 10, 11, tzinfo=UTC)
    metered(pool, noon)
    metered(pool, eleven)
    # GPU-a0 at 12:00: two shares using 0.5 and 0.25 of the card -> 75 %
    card_use(pool, card="GPU-a0", hour=noon, quantity="0.5", share="s1")
    card_use(pool, card="GPU-a0", hour=noon, quantity="0.25", share="s2")
    # GPU-a0 at 11:00: 0.45, but the samples had a gap -> 45 %, marked incomplete
    card_use(pool, card="GPU-a0", hour=eleven, quantity="0.45", share="s1", complete=False)
    # another pool's card on the same hour is not this pool's
    card_use(inv.pool("other"), card="GPU-z", hour=noon, quantity="1", share="s9")
    return pool


def test_heatmap_cells_per_card_and_hour(cast, busy_pool):
    context = heatmap_context(cast.pat, busy_pool, now=NOW)
    assert [h.hour for h in context["heat_hours"]][-2:] == [11, 12] and len(context["heat_hours"]) == 24
    rows = {r["label"]: r["cells"] for r in context["heat_rows"]}
    assert list(rows) == ["gpu-a/gpu0", "gpu-a/gpu1"]
    a0, a1 = rows["gpu-a/gpu0"], rows["gpu-a/gpu1"]
    assert [(c.percent, c.level, c.state) for c in a0[-2:]] == [
        (45.0, 2, "incomplete"),
        (75.0, 3, "measured"),
    ]
    # GPU-a1 had no holder in the two metered hours: idle, 0 %
    assert [(c.percent, c.level) for c in a1[-2:]] == [(0.0, 0), (0.0, 0)]
    # 10:00 and before were never metered: unknown, not 0
    assert {c.state for c in a0[:-2] + a1[:-2]} == {"unmetered"}
    # mean over the 4 measured cells: (45 + 75 + 0 + 0) / 4 = 30 %
    assert context["heat_mean"] == 30.0


def test_the_page_prints_each_cell_and_hides_cards_from_tenants(cast, client, busy_pool):
    now = timezone.now()
    last = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    metered(busy_pool, last)
    card_use(busy_pool, card="GPU-a1", hour=last, quantity="0.6", share="s3")
    client.force_login(cast.pat)
    html = client.get(f"/inventory/pools/{busy_pool.pk}/dashboard/").content.decode()
    cell = re.search(r'<td class="heat heat-3" title="gpu-a/gpu1 [^"]*: 60.0 % used">60</td>', html)
    assert cell is not None
    assert 'title="gpu-a/gpu0 ' in html and "not metered" in html
    # a tenant member sees the (shared) pool's dashboard but no card of it
    client.force_login(cast.alice)
    html = client.get(f"/inventory/pools/{busy_pool.pk}/dashboard/").content.decode()
    assert "it is the platform team&#x27;s view" in html or "it is the platform team's view" in html
    assert "GPU-a" not in html and "gpu-a/gpu" not in html


def test_policy_state_of_the_pool(cast, client):
    pool = pol.h100_pool("h100", nodes=2)
    pol.sharing_policy(pool)
    r1 = pol.revision(pool)
    rollout = Rollout.objects.create(pool=pool, revision=r1, state="running")
    first, second = Node.objects.filter(pool=pool).order_by("name")
    NodePolicyState.objects.create(
        node=first, desired_revision=r1, rollout=rollout, state="applied", applied_revision=1
    )
    NodePolicyState.objects.create(
        node=second, desired_revision=r1, rollout=rollout, state="drift", last_message="hash differs"
    )
    client.force_login(cast.pat)
    html = client.get(f"/inventory/pools/{pool.pk}/dashboard/").content.decode()
    assert "Declared: <strong>Exclusive whole GPU</strong>" in html
    assert "<strong>1 of 2</strong> nodes applied the desired revision." in html
    assert "drift: 1" in html and "applied: 1" in html and "hash differs" in html
    assert f'href="/policies/rollouts/{rollout.pk}/"' in html
    # the fragmentation of its 2 x 4 free cards: nothing stranded for whole GPUs
    assert "0 of 8 GPUs on 2 nodes have stranded capacity" in html


def test_an_empty_pool_and_a_foreign_one(cast, client):
    pool = inv.pool("empty")
    client.force_login(cast.pat)
    html = client.get(f"/inventory/pools/{pool.pk}/dashboard/").content.decode()
    assert "No card in this pool" in html
    assert "No sharing policy declared" in html and "No rollout on this pool yet" in html
    dedicated = inv.pool("nlp-only", tenant=cast.nlp)
    client.force_login(cast.alice)
    assert client.get(f"/inventory/pools/{dedicated.pk}/dashboard/").status_code == 404
    client.force_login(cast.bob)
    assert client.get(f"/inventory/pools/{dedicated.pk}/dashboard/").status_code == 200
