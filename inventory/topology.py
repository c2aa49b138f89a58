"""A pool's NVLink cliques as its present nodes report them: one query for any number of pools."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum

from inventory.domain.node_topology import CLIQUE_LABEL, parse_node_topology
from inventory.models import Node


@dataclass(frozen=True)
class CliqueSummary:
    """The nodes of one pool in one NVLink clique ("" = the nodes on no NVLink fabric)."""

    clique: str
    nvlink_domain: str
    clique_id: int | None
    nodes: int
    cards: int
    driver_managed_mig: int  # of those nodes, how many have MIG managed by the DRA driver

    def as_dict(self) -> dict[str, Any]:
        return {
            "nvlink_clique": self.clique or None,
            "nvlink_domain": self.nvlink_domain or None,
            "clique_id": self.clique_id,
            "nodes": self.nodes,
            "cards": self.cards,
            "driver_managed_mig_nodes": self.driver_managed_mig,
        }


def pool_cliques(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, list[CliqueSummary]]:
    """Per pool, its cliques by name, the nodes without fabric last."""
    ids = list(pool_ids)
    found: dict[uuid.UUID, list[CliqueSummary]] = defaultdict(list)
    if not ids:
        return found
    rows = (
        Node.objects.filter(pool_id__in=ids, present=True)
        .values("pool_id", "nvlink_clique")
        .annotate(
            nodes=Count("pk"),
            cards=Sum("gpu_count"),
            managed=Count("pk", filter=Q(driver_managed_mig=True)),
        )
        .order_by("pool_id", "nvlink_clique")
    )
    for row in rows:
        parsed = parse_node_topology(labels={CLIQUE_LABEL: row["nvlink_clique"]}, topology_labels=())
        found[row["pool_id"]].append(
            CliqueSummary(
                clique=row["nvlink_clique"],
                nvlink_domain=parsed.nvlink_domain,
                clique_id=parsed.clique_id,
                nodes=row["nodes"],
                cards=row["cards"] or 0,
                driver_managed_mig=row["managed"],
            )
        )
    for summaries in found.values():
        summaries.sort(key=lambda s: (s.clique == "", s.clique))
    return found
