"""The node page draws MIG instances on their cards (issue 11, item 8): a mixed-strategy node's
device plugin counts instances per node, so they are dealt to the cards in turn and placed first fit,
as the fragmentation input does; tenants get distinct Okabe-Ito colours with a legend."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import Allocation, Gpu, Node, ShareableUnit
from inventory.node_layout import OKABE_ITO, node_layout
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

H100 = "NVIDIA-H100-80GB-HBM3"


def mixed_node(**state) -> Node:
    """Two H100s under MIG mixed: the plugin advertises 4 x 1g.10gb and 2 x 3g.40gb for the node."""
    node = Node.objects.create(
        cluster=inv.cluster(),
        pool=inv.pool(),
        name="gpu-mig-0",
        product=H100,
        model_key="H100-80GB",
        gpu_count=2,
        mig_strategy="mixed",
        **state,
    )
    for index in (0, 1):
        Gpu.objects.create(node=node, index=index, product=H100, model_key="H100-80GB", mig_enabled=True)
    for profile, count, ge in (("1g.10gb", 4, "0.142857"), ("3g.40gb", 2, "0.428571")):
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"node/{node.name}/nvidia.com/mig-{profile}/-/{profile}/0",
            kind="mig_instance",
            resource_name=f"nvidia.com/mig-{profile}",
            count=count,
            ge_each=Decimal(ge),
            model_key="H100-80GB",
            mig_profile=profile,
        )
    return node


def hold(node: Node, tenant, profile: str, name: str) -> None:
    Allocation.objects.create(
        cluster=node.cluster,
        tenant=tenant,
        namespace=f"team-{tenant.slug}",
        holder_kind="Pod",
        holder_name=name,
        holder_uid=f"uid-{name}",
        unit_key=f"nvidia.com/mig-{profile}",
        resource_name=f"nvidia.com/mig-{profile}",
        count=1,
        ge=Decimal("0.142857"),
        model_key="H100-80GB",
        node=node,
        node_name=node.name,
        pool=node.pool,
        started_at=timezone.now(),
    )


def test_mig_instances_are_drawn_on_their_cards_by_slice(cast):
    node = mixed_node(ready=True)
    hold(node, cast.vision, "1g.10gb", "train-1")
    hold(node, cast.nlp, "1g.10gb", "train-2")

    layout = node_layout(node=node)

    # nothing is left "not tied to one card"; each card of 8 memory slices carries, first fit and
    # largest first: 3g.40gb on slices 0-3, then the two 1g.10gb it was dealt on slices 4 and 5
    assert layout.loose == []
    for card in layout.cards:
        assert card.slices == 8 and card.inferred
        assert [(s.block.label, s.block.start, s.block.size) for s in card.segments] == [
            ("3g.40gb", 0, 4),
            ("1g.10gb", 4, 1),
            ("1g.10gb", 5, 1),
        ]
        assert [(s.left, s.width) for s in card.segments] == [(0, 50), (50, 12.5), (62.5, 12.5)]
    # the 1g.10gb units are dealt card 0, card 1, card 0, card 1: vision holds the first, nlp the second
    holders = [[s.block.tenant for s in card.segments] for card in layout.cards]
    assert holders == [["", "vision", ""], ["", "nlp", ""]]
    # distinct colours from the palette, in slug order: nlp orange, vision sky blue
    assert layout.legend == [("nlp", *OKABE_ITO[0]), ("vision", *OKABE_ITO[1])]


def test_the_node_page_shows_the_drawing_the_legend_and_not_ready_beside_cordoned(cast, client):
    node = mixed_node(ready=False, cordoned=True)
    hold(node, cast.vision, "1g.10gb", "train-1")
    client.force_login(cast.pat)

    html = client.get(f"/inventory/nodes/{node.pk}/").content.decode()

    state = re.search(r'data-testid="node-state">(.*?)</p>', html, re.S).group(1)
    assert "not ready" in state and "cordoned" in state
    assert html.count('data-testid="mig-card"') == 2 and html.count('data-testid="segment"') == 6
    assert 'data-start="4" data-size="1"' in html
    assert "Nothing advertised on this card" not in html and "Units not tied to one card" not in html
    legend = re.search(r'data-testid="legend"[^>]*>(.*?)</div>', html, re.S).group(1)
    assert f'background:{OKABE_ITO[0][0]};color:{OKABE_ITO[0][1]}">vision' in legend


def test_a_dra_mig_device_sits_where_the_cluster_placed_it(cast):
    node = Node.objects.create(
        cluster=inv.cluster(),
        pool=inv.pool(),
        name="gpu-dra-0",
        product=H100,
        model_key="H100-80GB",
        gpu_count=1,
    )
    Gpu.objects.create(node=node, index=0, product=H100, model_key="H100-80GB", mig_enabled=True)
    ShareableUnit.objects.create(
        cluster=node.cluster,
        node=node,
        key="dra/gpu.nvidia.com/gpu-dra-0/gpu-0-mig-2g.20gb-4@slice",
        kind="dra_device",
        resource_name="gpu.nvidia.com",
        ge_each=Decimal("0.285714"),
        model_key="H100-80GB",
        mig_profile="2g.20gb",
        placement_start=4,
        placement_size=2,
        attributes={"index": 0},
    )

    [card] = node_layout(node=node).cards

    assert [(s.block.start, s.left, s.width) for s in card.segments] == [(4, 50, 25)]
    assert not card.inferred
