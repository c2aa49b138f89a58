"""Hierarchical quota arithmetic: Kueue's resource-node model, applied to the tenant tree.

Every tenant is a node holding, per (flavor, resource):

- subtree quota SQ = own nominal + what each child lends up (child SQ minus child guaranteed);
- guaranteed G = SQ - lending_limit (0 without a lending limit): kept for the subtree, never lent;
- usage U = own admitted amounts + what each child uses beyond its G (it "bubbles up").

A request of `a` at tenant t fits when `a <= available(t)`, where available walks from the root down,
capping what each node may take from its parent by its borrowing limit. Every call is O(depth): no
per-tenant scan, which is what makes `decide` cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from .model import QuotaSpec

Key = tuple[str, str, str]  # (tenant, flavor, resource)
Place = tuple[str, str]  # (flavor, resource)


class TreeError(ValueError):
    """The tenant tree or its quotas are inconsistent (unknown parent, cycle, duplicate quota)."""


@dataclass(slots=True)
class Node:
    id: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    root: str = ""
    path: tuple[str, ...] = ()  # self, parent, ..., root


class QuotaTree:
    """Static part: the tree and its subtree/guaranteed quotas. Built once per snapshot."""

    def __init__(self, *, parents: dict[str, str | None], quotas: Iterable[QuotaSpec]) -> None:
        self.nodes: dict[str, Node] = {t: Node(id=t, parent=p) for t, p in parents.items()}
        for node in self.nodes.values():
            if node.parent is not None:
                if node.parent not in self.nodes:
                    raise TreeError(f"tenant {node.id!r} has unknown parent {node.parent!r}")
                self.nodes[node.parent].children.append(node.id)
        for node in self.nodes.values():
            node.children.sort()  # determinism: never depend on input order
        self.order = self._post_order()
        self.nominal: dict[Key, int] = {}
        self.borrowing_limit: dict[Key, int] = {}
        self.lending_limit: dict[Key, int] = {}
        for q in quotas:
            key = (q.tenant, q.flavor, q.resource)
            if q.tenant not in self.nodes:
                raise TreeError(f"quota for unknown tenant {q.tenant!r}")
            if key in self.nominal:
                raise TreeError(f"duplicate quota {key}")
            if q.nominal < 0 or (q.borrowing_limit or 0) < 0 or (q.lending_limit or 0) < 0:
                raise TreeError(f"negative quota {key}")
            self.nominal[key] = q.nominal
            if q.borrowing_limit is not None:
                self.borrowing_limit[key] = q.borrowing_limit
            if q.lending_limit is not None:
                self.lending_limit[key] = q.lending_limit
        self.places: set[Place] = {(f, r) for (_, f, r) in self.nominal}
        self.subtree: dict[Key, int] = {}
        self.guaranteed: dict[Key, int] = {}
        self._accumulate()
        self._potential: dict[Key, int] = {}

    def _post_order(self) -> list[str]:
        state: dict[str, int] = {}  # 1 visiting, 2 done: a cycle shows as a revisit while visiting
        for start in sorted(self.nodes):
            if start in state:
                continue
            # Walk up to the root first so that each node's path is known top-down.
            chain: list[str] = []
            cur: str | None = start
            while cur is not None and cur not in state:
                state[cur] = 1
                chain.append(cur)
                cur = self.nodes[cur].parent
            if cur is not None and state[cur] == 1:
                raise TreeError(f"tenant tree has a cycle through {cur!r}")
            for t in reversed(chain):
                node = self.nodes[t]
                parent = self.nodes[node.parent] if node.parent is not None else None
                node.path = (t, *parent.path) if parent else (t,)
                node.root = node.path[-1]
                state[t] = 2
        # Children before parents: deeper first, then by id for a stable order.
        return sorted(self.nodes, key=lambda t: (-len(self.nodes[t].path), t))

    def _accumulate(self) -> None:
        for t in self.order:
            node = self.nodes[t]
            for f, r in self.places:
                key = (t, f, r)
                sq = self.nominal.get(key, 0)
                for c in node.children:
                    sq += self.subtree.get((c, f, r), 0) - self.guaranteed.get((c, f, r), 0)
                if sq:
                    self.subtree[key] = sq
                lend = self.lending_limit.get(key)
                if lend is not None and sq - lend > 0:
                    self.guaranteed[key] = sq - lend

    def has_quota(self, tenant: str, flavor: str, resource: str) -> bool:
        return (tenant, flavor, resource) in self.nominal

    def potential(self, tenant: str, flavor: str, resource: str) -> int:
        """Most the tenant could ever hold with no other usage (Kueue's potentialAvailable)."""
        key = (tenant, flavor, resource)
        cached = self._potential.get(key)
        if cached is None:
            cached = 0
            for t in reversed(self.nodes[tenant].path):
                k = (t, flavor, resource)
                if t == self.nodes[t].root:
                    cached = self.subtree.get(k, 0)
                    continue
                cached += self.guaranteed.get(k, 0)
                limit = self.borrowing_limit.get(k)
                if limit is not None:
                    cached = min(cached, self.subtree.get(k, 0) + limit)
            self._potential[key] = cached
        return cached


class Ledger:
    """Mutable usage layered over a parent ledger, so that trials never touch the snapshot.

    usage: (tenant, flavor, resource) -> U; free: (flavor, resource) -> physically free amount;
    committed: (tenant, flavor or "") -> GE-hours burned plus still to burn this month.
    """

    __slots__ = ("committed", "free", "parent", "removed", "usage")

    def __init__(self, parent: Ledger | None = None) -> None:
        self.parent = parent
        self.usage: dict[Key, int] = {}
        self.free: dict[Place, int] = {}
        self.committed: dict[tuple[str, str], Fraction] = {}
        self.removed: set[str] = set()  # allocations preempted in this layer

    def u(self, key: Key) -> int:
        layer: Ledger | None = self
        while layer is not None:
            v = layer.usage.get(key)
            if v is not None:
                return v
            layer = layer.parent
        return 0

    def free_of(self, place: Place) -> int:
        layer: Ledger | None = self
        while layer is not None:
            v = layer.free.get(place)
            if v is not None:
                return v
            layer = layer.parent
        return 0

    def committed_of(self, key: tuple[str, str]) -> Fraction:
        layer: Ledger | None = self
        while layer is not None:
            v = layer.committed.get(key)
            if v is not None:
                return v
            layer = layer.parent
        return Fraction(0)

    def is_removed(self, request_id: str) -> bool:
        layer: Ledger | None = self
        while layer is not None:
            if request_id in layer.removed:
                return True
            layer = layer.parent
        return False

    def child(self) -> Ledger:
        return Ledger(self)


def available(tree: QuotaTree, ledger: Ledger, tenant: str, flavor: str, resource: str) -> int:
    """How much more the tenant can take now (Kueue's `available`); may be negative if over-admitted."""
    avail = 0
    for t in reversed(tree.nodes[tenant].path):
        k = (t, flavor, resource)
        used = ledger.u(k)
        if tree.nodes[t].parent is None:
            avail = tree.subtree.get(k, 0) - used
            continue
        g = tree.guaranteed.get(k, 0)
        limit = tree.borrowing_limit.get(k)
        if limit is not None:
            stored_in_parent = tree.subtree.get(k, 0) - g
            used_in_parent = max(0, used - g)
            avail = min(avail, stored_in_parent - used_in_parent + limit)
        avail += max(0, g - used)
    return avail


def add_usage(tree: QuotaTree, ledger: Ledger, tenant: str, flavor: str, resource: str, val: int) -> None:
    """Charge `val` at tenant; what exceeds each node's guaranteed part is charged to its parent."""
    t: str | None = tenant
    while t is not None and val > 0:
        k = (t, flavor, resource)
        used = ledger.u(k)
        local = max(0, tree.guaranteed.get(k, 0) - used)
        ledger.usage[k] = used + val
        val -= local
        t = tree.nodes[t].parent


def remove_usage(tree: QuotaTree, ledger: Ledger, tenant: str, flavor: str, resource: str, val: int) -> None:
    """Inverse of `add_usage`: release first what was stored in the parent."""
    t: str | None = tenant
    while t is not None and val > 0:
        k = (t, flavor, resource)
        used = ledger.u(k)
        stored_in_parent = used - tree.guaranteed.get(k, 0)
        ledger.usage[k] = used - val
        if stored_in_parent <= 0:
            return
        val = min(val, stored_in_parent)
        t = tree.nodes[t].parent
