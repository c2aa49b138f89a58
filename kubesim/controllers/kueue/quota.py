"""Kueue's quota tree: ClusterQueues and Cohorts as nodes holding nominal quota per (flavor, resource).

A port of the arithmetic in Kueue v0.19's pkg/cache/scheduler/resource_node.go, which is what decides
whether a Workload fits: a node's quota beyond its lendingLimit stays local, the rest is lent to the
parent; a node may borrow from its parent up to its borrowingLimit; usage past the local part is
recorded in the parent. Amounts are Decimals in the resource's base unit (cores, bytes, devices).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kubesim.quantity import QuantityError, parse

FlavorResource = tuple[str, str]  # (flavor, resource)
ZERO = Decimal(0)


def amount(text: Any) -> Decimal:
    """A quantity (string or number) as a Decimal; an unparseable one counts as zero."""
    try:
        return parse(str(text))[0]
    except QuantityError:
        return ZERO


@dataclass
class Quota:
    nominal: Decimal = ZERO
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


@dataclass
class Node:
    """A ClusterQueue (is_queue) or a Cohort; `subtree` and `usage` are filled by QuotaTree."""

    name: str
    is_queue: bool
    parent: Node | None = None
    quotas: dict[FlavorResource, Quota] = field(default_factory=dict)
    subtree: dict[FlavorResource, Decimal] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)

    def local_quota(self, fr: FlavorResource) -> Decimal:
        lending = self.quotas.get(fr, Quota()).lending_limit
        if lending is None:
            return ZERO
        return max(ZERO, self.subtree.get(fr, ZERO) - lending)

    def local_available(self, fr: FlavorResource) -> Decimal:
        return max(ZERO, self.local_quota(fr) - self.usage.get(fr, ZERO))

    def available(self, fr: FlavorResource) -> Decimal:
        """What a workload in this node can still take now (its own quota plus what it may borrow)."""
        if self.parent is None:
            return self.subtree.get(fr, ZERO) - self.usage.get(fr, ZERO)
        parent_available = self.parent.available(fr)
        borrowing = self.quotas.get(fr, Quota()).borrowing_limit
        if borrowing is not None:
            local = self.local_quota(fr)
            stored_in_parent = self.subtree.get(fr, ZERO) - local
            used_in_parent = max(ZERO, self.usage.get(fr, ZERO) - local)
            parent_available = min(stored_in_parent - used_in_parent + borrowing, parent_available)
        return self.local_available(fr) + parent_available

    def potential_available(self, fr: FlavorResource) -> Decimal:
        """What it could take with nothing else running: the most a workload here can ever get."""
        if self.parent is None:
            return self.subtree.get(fr, ZERO)
        avail = self.local_quota(fr) + self.parent.potential_available(fr)
        borrowing = self.quotas.get(fr, Quota()).borrowing_limit
        if borrowing is not None:
            avail = min(self.subtree.get(fr, ZERO) + borrowing, avail)
        return avail

    def add_usage(self, fr: FlavorResource, value: Decimal) -> None:
        local_available = self.local_available(fr)
        self.usage[fr] = self.usage.get(fr, ZERO) + value
        if self.parent is not None and value > local_available:
            self.parent.add_usage(fr, value - local_available)

    def borrowed(self, fr: FlavorResource) -> Decimal:
        """Usage above this queue's nominal quota (ClusterQueue status `borrowed`)."""
        return max(ZERO, self.usage.get(fr, ZERO) - self.quotas.get(fr, Quota()).nominal)


def quotas_of(resource_groups: list[dict[str, Any]] | None) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for group in resource_groups or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                borrowing, lending = res.get("borrowingLimit"), res.get("lendingLimit")
                out[(flavor["name"], res["name"])] = Quota(
                    nominal=amount(res.get("nominalQuota", 0)),
                    borrowing_limit=None if borrowing is None else amount(borrowing),
                    lending_limit=None if lending is None else amount(lending),
                )
    return out


class QuotaTree:
    """ClusterQueues under their cohorts (Cohort objects, or implicit ones a cohortName names)."""

    def __init__(self, cluster_queues: list[dict[str, Any]], cohorts: list[dict[str, Any]]) -> None:
        self.cohorts: dict[str, Node] = {}
        self.queues: dict[str, Node] = {}
        for obj in cohorts:
            node = self._cohort(obj["metadata"]["name"])
            node.quotas = quotas_of((obj.get("spec") or {}).get("resourceGroups"))
        for obj in cohorts:
            parent_name = (obj.get("spec") or {}).get("parentName")
            if parent_name:
                self._attach(self.cohorts[obj["metadata"]["name"]], self._cohort(parent_name))
        for obj in cluster_queues:
            spec = obj.get("spec") or {}
            node = Node(obj["metadata"]["name"], True, quotas=quotas_of(spec.get("resourceGroups")))
            self.queues[node.name] = node
            if spec.get("cohortName"):
                self._attach(node, self._cohort(spec["cohortName"]))
        for root in [n for n in self.cohorts.values() if n.parent is None and not self._cyclic(n)]:
            self._fill_subtree(root)
        for node in self.queues.values():
            if node.parent is None:
                node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}

    def _cohort(self, name: str) -> Node:
        if name not in self.cohorts:
            self.cohorts[name] = Node(name, False)
        return self.cohorts[name]

    def _attach(self, child: Node, parent: Node) -> None:
        child.parent = parent
        parent.children.append(child)

    def _cyclic(self, node: Node) -> bool:
        seen: set[str] = set()
        current: Node | None = node
        while current is not None:
            if current.name in seen:
                return True
            seen.add(current.name)
            current = current.parent
        return False

    def _fill_subtree(self, node: Node) -> None:
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in node.children:
            if child.is_queue:
                child.subtree = {fr: q.nominal for fr, q in child.quotas.items()}
            else:
                self._fill_subtree(child)
            for fr, quota in child.subtree.items():
                node.subtree[fr] = node.subtree.get(fr, ZERO) + quota - child.local_quota(fr)

    def add_usage(self, queue: str, usage: dict[FlavorResource, Decimal]) -> None:
        node = self.queues.get(queue)
        if node is None:
            return
        for fr, value in usage.items():
            node.add_usage(fr, value)
