"""The overview reads like a product (issue 11, item 8): fleet capacity in cards beside what the
nodes advertise, allocated and free, from inventory/capacity.py; nodes that need attention; and for
finance one panel of billing periods linking to metering's own pages."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import Allocation, Gpu, Node, ShareableUnit
from metering.models import ReportLine, UsageHour
from quotas.models import CapacityRequest
from tests.inventory import factories as inv
from tests.metering import factories as met
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db


def time_sliced_node(pool, name: str, *, ready: bool = True, cordoned: bool = False) -> Node:
    """4 H100 cards, each time-sliced into 4 replicas of 0.5 GE: 16 units advertising 8 GE."""
    node = Node.objects.create(
        cluster=pool.cluster,
        pool=pool,
        name=name,
        model_key="H100-80GB",
        gpu_count=4,
        ready=ready,
        cordoned=cordoned,
    )
    for index in range(4):
        Gpu.objects.create(node=node, index=index, model_key="H100-80GB")
    ShareableUnit.objects.create(
        cluster=pool.cluster,
        node=node,
        key=f"node/{name}/nvidia.com/gpu.shared",
        kind="time_slice_replica",
        resource_name="nvidia.com/gpu.shared",
        count=16,
        ge_each=Decimal("0.5"),
        model_key="H100-80GB",
    )
    return node


def held(node: Node, tenant, ge: str) -> None:
    Allocation.objects.create(
        cluster=node.cluster,
        tenant=tenant,
        namespace="team-vision",
        holder_kind="Pod",
        holder_name="p",
        holder_uid=f"uid-{node.name}-{ge}",
        unit_key="nvidia.com/gpu.shared",
        resource_name="nvidia.com/gpu.shared",
        count=3,
        ge=Decimal(ge),
        model_key="H100-80GB",
        node=node,
        node_name=node.name,
        pool=node.pool,
        started_at=timezone.now() - timedelta(hours=1),
    )


def cells(html: str, testid: str) -> list[list[str]]:
    table = re.search(rf'data-testid="{testid}">(.*?)</table>', html, re.S).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_the_overview_shows_cards_beside_advertised_capacity(cast, client):
    # given: a shared pool of one node, 4 cards advertised as 16 half-GE replicas, 1.5 GE held
    pool = inv.pool("h100-shared")
    node = time_sliced_node(pool, "ts-0", ready=False)
    held(node, cast.vision, "1.5")
    client.force_login(cast.pat)

    html = client.get("/").content.decode()

    # then: cards 4, allocated 1.5, free 4 - 1.5 = 2.5; advertised 8 GE, allocated 1.5, free 6.5
    [row] = cells(html, "fleet-capacity")
    assert row[0] == "east/h100-shared" and row[1] == "H100-80GB"
    assert row[2:5] == ["4", "1.50", "2.50"]
    assert row[6:] == ["8.00 (16 units)", "1.50", "6.50"]
    assert "1 not ready" in re.search(r'data-testid="attention">(.*?)</p>', html, re.S).group(1)


def test_a_tenant_sees_only_the_pools_it_may_use_and_no_node_counts(cast, client):
    time_sliced_node(inv.pool("h100-shared"), "ts-0")
    time_sliced_node(inv.pool("nlp-only", tenant=cast.nlp), "ts-1", cordoned=True)
    client.force_login(cast.alice)

    html = client.get("/").content.decode()

    assert [row[0] for row in cells(html, "fleet-capacity")] == ["east/h100-shared"]
    assert 'data-testid="attention"' not in html and 'data-testid="finance"' not in html


def test_finance_sees_billing_periods_with_what_was_metered_and_charged(cast, client):
    period = met.period()
    vision, nlp = met.usage(tenant=cast.vision), met.usage(tenant=cast.nlp)
    UsageHour.objects.filter(pk=vision.pk).update(quantity=Decimal("3.5"))
    UsageHour.objects.filter(pk=nlp.pk).update(quantity=Decimal("1.25"))
    met.report_line(tenant=cast.vision)  # 2.50 USD
    ReportLine.objects.create(
        period=period,
        line_no=2,
        kind="charge",
        tenant=cast.nlp,
        tenant_slug="nlp",
        ge_hours=Decimal(4),
        card_hours=Decimal(4),
        amount=Decimal("10.00"),
        currency="USD",
    )
    client.force_login(cast.fiona)

    html = client.get("/").content.decode()

    # 3.5 + 1.25 = 4.75 GE-hours; 2.50 + 10.00 = 12.50 USD
    [row] = cells(html, "billing-periods")
    assert row[:4] == [period.label, "Open", "4.75", "12.50 USD"]
    assert 'href="/metering/"' in html


def test_the_overview_shows_pending_demand_and_what_awaits_the_viewers_decision(cast, client):
    # given: vision waits for 1 + 1 GE of shared-h100 (one of them for approval), nlp for 1
    adm.capacity_request(tenant=cast.vision)
    waiting = adm.capacity_request(tenant=cast.vision)
    CapacityRequest.objects.filter(pk=waiting.pk).update(approval="awaiting")
    adm.capacity_request(tenant=cast.nlp)

    # rita (above both) sees 3 requests, 3 GE, and one awaiting her decision
    client.force_login(cast.rita)
    html = client.get("/").content.decode()
    assert cells(html, "pending-demand") == [["shared-h100", "3", "3.00"]]
    assert "1 awaiting your decision" in html
    # dana (member of vision) sees vision's 2 and decides nothing
    client.force_login(cast.dana)
    html = client.get("/").content.decode()
    assert cells(html, "pending-demand") == [["shared-h100", "2", "2.00"]]
    assert 'data-testid="awaiting"' not in html
