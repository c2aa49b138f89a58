"""Which node labels and tolerations make a ResourceFlavor select exactly one pool's nodes.

Kueue places an admitted Workload on its flavor by adding the flavor's ``nodeLabels`` as a node
selector, so those labels must hold on every node of the pool and on no other node of the cluster.
A pool is the cluster's pool label with the GFD product suffixes stripped (``Tesla-T4`` groups
``Tesla-T4`` and ``Tesla-T4-SHARED`` nodes), so the pool label alone does not always do; the labels
are picked from what the pool's nodes have in common, greedily (the one ruling out most other nodes
first, the pool label winning ties), until no other node matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from quotas.kueue.model import NodeInput, Taint

# Per-node by nature: equal on a one-node pool, never a way to name a pool.
VOLATILE_LABELS = frozenset({"kubernetes.io/hostname", "nvidia.com/gfd.timestamp"})
# Taints the node lifecycle sets and lifts: tolerating them would keep pods on sick nodes.
LIFECYCLE_TAINT_PREFIX = "node.kubernetes.io/"


def distinguishing_labels(*, pool: str, nodes: Sequence[NodeInput], pool_label: str) -> dict[str, str] | None:
    """Labels true of every node of ``pool`` and, together, of no other node; None when there are
    none (or the pool has no node to read them from)."""
    members = [n for n in nodes if n.pool == pool]
    if not members:
        return None
    common = {
        (key, value)
        for key, value in members[0].labels.items()
        if key not in VOLATILE_LABELS and value != members[0].name
    }
    for node in members[1:]:
        common &= set(node.labels.items())
    others = [n for n in nodes if n.pool != pool]
    chosen: dict[str, str] = {}
    remaining = others
    while remaining:
        best = None
        best_key: tuple[int, int, str, str] | None = None
        for key, value in common:
            if key in chosen:
                continue
            ruled_out = sum(1 for n in remaining if n.labels.get(key) != value)
            if ruled_out == 0:
                continue
            rank = (-ruled_out, 0 if key == pool_label else 1, key, value)
            if best_key is None or rank < best_key:
                best, best_key = (key, value), rank
        if best is None:
            return None
        chosen[best[0]] = best[1]
        remaining = [n for n in remaining if n.labels.get(best[0]) == best[1]]
    if not chosen:
        # The only nodes of the cluster: a shared label (the pool label first) still names the pool
        # for the nodes that join later.
        if not common:
            return None
        key, value = min(common, key=lambda kv: (kv[0] != pool_label, kv))
        chosen[key] = value
    return chosen


def pool_tolerations(*, pool: str, nodes: Sequence[NodeInput]) -> list[dict[str, str]]:
    """Tolerations for the taints every node of the pool carries (GPU pools are often tainted so that
    only GPU work lands there), lifecycle taints left out."""
    members = [n for n in nodes if n.pool == pool]
    if not members:
        return []
    common: set[Taint] = set(members[0].taints)
    for node in members[1:]:
        common &= set(node.taints)
    tolerations = []
    for taint in sorted(common, key=lambda t: (t.key, t.effect, t.value)):
        if taint.key.startswith(LIFECYCLE_TAINT_PREFIX):
            continue
        toleration = {"key": taint.key, "effect": taint.effect}
        if taint.value:
            toleration |= {"operator": "Equal", "value": taint.value}
        else:
            toleration["operator"] = "Exists"
        tolerations.append(toleration)
    return tolerations
