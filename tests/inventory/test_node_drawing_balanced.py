"""A mixed-strategy MIG node in the all-balanced geometry is drawn whole (issue 27): the device plugin
counts 2 x 1g.10gb, 1 x 2g.20gb and 1 x 3g.40gb per card (the GFD labels of a real H100 node,
realworld/node-gfd-h100-mig-mixed.labels.json), and each card holds all four, as the driver lays them
out (realworld/nvidia-smi-mig.txt, DCGM#138: 2g.20gb at 0:2, 1g.10gb at 2:1 and 3:1, 3g.40gb at 4:4).

Plain largest-first first fit put 3g.40gb on 0-3 and 2g.20gb on 4-5, left slice 7 free (no 1g may
start there) and listed one 1g.10gb per card as "could not be placed": eight on the demo's 8-card node."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from inventory.domain.gpu_models import resolve_gpu_model
from inventory.fragmentation.geometry import first_fit_layout
from inventory.models import Gpu, Node, ShareableUnit
from inventory.node_layout import node_layout
from tests.inventory import factories as inv
from tests.kubesim_scenarios.helpers import realworld

H100 = "NVIDIA-H100-80GB-HBM3"
GE = {"1g.10gb": "0.142857", "2g.20gb": "0.285714", "3g.40gb": "0.5"}


def captured_counts() -> tuple[int, dict[str, int]]:
    """Cards and MIG instances per profile, as GFD labels the captured node."""
    labels = json.loads(realworld("node-gfd-h100-mig-mixed.labels.json").read_text())
    prefix, suffix = "nvidia.com/mig-", ".count"
    counts = {
        key.removeprefix(prefix).removesuffix(suffix): int(value)
        for key, value in labels.items()
        if key.startswith(prefix) and key.endswith(suffix)
    }
    return int(labels["nvidia.com/gpu.count"]), counts


def balanced_node(cards: int) -> Node:
    """``cards`` H100s under MIG mixed, each as the captured card: the plugin counts per node."""
    _, per_card = captured_counts()
    node = Node.objects.create(
        cluster=inv.cluster(),
        pool=inv.pool(),
        name="gpu-mig-balanced",
        product=H100,
        model_key="H100-80GB",
        gpu_count=cards,
        mig_strategy="mixed",
        ready=True,
    )
    for index in range(cards):
        Gpu.objects.create(node=node, index=index, product=H100, model_key="H100-80GB", mig_enabled=True)
    for profile, count in per_card.items():
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"node/{node.name}/nvidia.com/mig-{profile}/-/{profile}/0",
            kind="mig_instance",
            resource_name=f"nvidia.com/mig-{profile}",
            count=count * cards,
            ge_each=Decimal(GE[profile]),
            model_key="H100-80GB",
            mig_profile=profile,
        )
    return node


def test_the_captured_card_is_laid_out_as_the_driver_lays_it():
    cards, counts = captured_counts()
    assert cards == 1 and counts == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    profiles = [name for name, n in counts.items() for _ in range(n)]

    layout = first_fit_layout(model=resolve_gpu_model(product=H100), profiles=profiles)

    # the lgi capture of the same geometry: 2g.20gb 0:2, 1g.10gb 2:1 and 3:1, 3g.40gb 4:4
    assert sorted((i.start, i.profile) for i in layout) == [
        (0, "2g.20gb"),
        (2, "1g.10gb"),
        (3, "1g.10gb"),
        (4, "3g.40gb"),
    ]


def test_what_cannot_fit_is_still_left_out():
    # 8 x 1g.10gb: seven starts (0-6) and seven compute slices; the eighth fits nowhere
    layout = first_fit_layout(model=resolve_gpu_model(product=H100), profiles=["1g.10gb"] * 8)

    assert [i.start for i in layout] == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.django_db
def test_an_eight_card_balanced_node_draws_every_unit_on_a_card(cast, client):
    node = balanced_node(8)

    layout = node_layout(node=node)

    # 16 + 8 + 8 = 32 instances, 4 per card, none left over
    assert layout.loose == []
    for card in layout.cards:
        assert [(s.block.label, s.block.start, s.block.size) for s in card.segments] == [
            ("2g.20gb", 0, 2),
            ("1g.10gb", 2, 1),
            ("1g.10gb", 3, 1),
            ("3g.40gb", 4, 4),
        ]
        # the eight memory slices are all drawn: 25 + 12.5 + 12.5 + 50 percent of the card
        assert sum(s.width for s in card.segments) == 100
    client.force_login(cast.pat)
    html = client.get(f"/inventory/nodes/{node.pk}/").content.decode()
    assert html.count('data-testid="segment"') == 32
    assert "could not be placed" not in html and "Units not tied to one card" not in html
