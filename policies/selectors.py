"""Reads the compiler needs from inventory: a pool as plain data, and the sharing mode its nodes run
as detected from what they report (labels, configs, the units they advertise)."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from inventory.models import Node, NodePool, ShareableUnit
from policies.compiler import ModelCards, PoolSpec, SharingMode, SharingSpec, normalise_parameters
from policies.models import NodeAgent, SharingPolicy


def pool_spec(*, pool: NodePool) -> PoolSpec:
    """The pool's GPU models with their cards and nodes, from the present nodes (one query)."""
    cards: dict[str, int] = defaultdict(int)
    nodes: dict[str, int] = defaultdict(int)
    names: list[str] = []
    managed: list[str] = []
    rows = Node.objects.filter(pool=pool, present=True).values_list(
        "name", "model_key", "gpu_count", "driver_managed_mig"
    )
    for name, model_key, gpu_count, driver_managed in rows:
        names.append(name)
        if driver_managed:
            managed.append(name)
        if model_key and gpu_count:
            cards[model_key] += gpu_count
            nodes[model_key] += 1
    return PoolSpec(
        cluster=pool.cluster.name,
        name=pool.name,
        models=tuple(ModelCards(key, cards[key], nodes[key]) for key in sorted(cards)),
        node_names=tuple(sorted(names)),
        driver_managed_mig_nodes=tuple(sorted(managed)),
    )


def sharing_spec(policy: SharingPolicy) -> SharingSpec:
    mode = SharingMode(policy.mode)
    return SharingSpec(
        mode=mode,
        parameters=normalise_parameters(mode, policy.parameters),
        resource_name=policy.resource_name,
    )


DRIVER_MANAGED_MIG = "driver-managed MIG (DRA driver, DynamicMIG)"

# Names every pool may advertise: not a pool's own name, so not one a form should keep.
CLUSTER_WIDE_NAMES = frozenset({"", "nvidia.com/gpu", "nvidia.com/gpu.shared"})


@dataclass(frozen=True)
class Detected:
    """The sharing mode a pool's present nodes run. ``mode`` is "" with no node reporting GPUs and
    "mixed" when nodes disagree (``per_mode`` counts nodes per mode either way); ``parameters`` and
    ``resource_name`` are what a declaration matching the nodes would hold (single mode only)."""

    mode: str
    per_mode: dict[str, int] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    resource_name: str = ""
    # Of those nodes, how many have their MIG managed by the NVIDIA DRA driver (DynamicMIG).
    driver_managed_mig: int = 0

    @property
    def mixed(self) -> bool:
        return self.mode == "mixed"

    @property
    def label(self) -> str:
        """The mode in words: DRA nodes whose driver owns MIG are told apart from plain DRA."""
        if self.mode == SharingMode.DRA and self.driver_managed_mig:
            every = self.driver_managed_mig == sum(self.per_mode.values())
            return (
                DRIVER_MANAGED_MIG if every else f"dra, {self.driver_managed_mig} nodes {DRIVER_MANAGED_MIG}"
            )
        return self.mode

    @property
    def summary(self) -> str:
        if not self.mode:
            return "no node reports GPUs yet"
        parts = ", ".join(
            f"{n} node{'s' if n != 1 else ''} {mode}" for mode, n in sorted(self.per_mode.items())
        )
        return f"mixed: {parts}" if self.mixed else parts


def _node_mode(node: Mapping[str, Any], kinds: set[str]) -> str:
    if "hami_gpu" in kinds or node["sharing_strategy"] == "hami":
        return SharingMode.HAMI
    if "dra_device" in kinds or node["driver_managed_mig"]:
        return SharingMode.DRA
    if "mig_instance" in kinds or (node["mig_strategy"] in ("single", "mixed") and "whole_gpu" not in kinds):
        return SharingMode.MIG
    if node["sharing_strategy"] == "mps" or "mps_replica" in kinds:
        return SharingMode.MPS
    if node["sharing_strategy"] == "time-slicing" or "time_slice_replica" in kinds:
        return SharingMode.TIME_SLICING
    return SharingMode.EXCLUSIVE


def detect_sharing(*, pool_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Detected]:
    """Per pool: the mode its present GPU nodes run, read from GFD's labels (sharing strategy, MIG
    strategy, replicas) and the units they advertise. Two queries whatever the pool count."""
    ids = list(pool_ids)
    nodes = list(
        Node.objects.filter(pool_id__in=ids, present=True, gpu_count__gt=0).values(
            "pk",
            "pool_id",
            "model_key",
            "gpu_count",
            "sharing_strategy",
            "mig_strategy",
            "replicas",
            "driver_managed_mig",
        )
    )
    units: dict[uuid.UUID, list[tuple[str, str, str, int]]] = defaultdict(list)
    for node_id, kind, resource, profile, count in ShareableUnit.objects.filter(
        node_id__in=[n["pk"] for n in nodes]
    ).values_list("node_id", "kind", "resource_name", "mig_profile", "count"):
        units[node_id].append((kind, resource, profile, count))
    per_pool: dict[uuid.UUID, list[tuple[str, dict[str, Any], str]]] = defaultdict(list)
    managed: Counter[uuid.UUID] = Counter(n["pool_id"] for n in nodes if n["driver_managed_mig"])
    for node in nodes:
        mine = units.get(node["pk"], [])
        mode = _node_mode(node, {u[0] for u in mine})
        node_parameters: dict[str, Any] = {}
        if mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
            node_parameters = {"replicas": node["replicas"]}
        elif mode == SharingMode.MIG:
            per_card: Counter[str] = Counter()
            for kind, _resource, profile, count in mine:
                if kind == "mig_instance" and profile:
                    per_card[profile] += count
            cards = node["gpu_count"] or 1
            node_parameters = {
                "strategy": node["mig_strategy"] or "mixed",
                "geometry": {node["model_key"]: {p: c // cards for p, c in sorted(per_card.items())}}
                if node["model_key"] and per_card
                else {},
            }
        names = {u[1] for u in mine if u[0] != "mig_instance"} - CLUSTER_WIDE_NAMES
        per_pool[node["pool_id"]].append((str(mode), node_parameters, min(names) if len(names) == 1 else ""))
    found: dict[uuid.UUID, Detected] = {}
    for pool in ids:
        rows = per_pool.get(pool, [])
        counts = dict(Counter(mode for mode, _, _ in rows))
        if not rows:
            found[pool] = Detected(mode="")
        elif len(counts) > 1:
            found[pool] = Detected(mode="mixed", per_mode=counts, driver_managed_mig=managed[pool])
        else:
            mode = rows[0][0]
            parameters: dict[str, Any] = {}
            if mode in (SharingMode.TIME_SLICING, SharingMode.MPS):
                replicas = {p["replicas"] for _, p, _ in rows}
                parameters = {"replicas": replicas.pop()} if len(replicas) == 1 else {}
            elif mode == SharingMode.MIG:
                geometry: dict[str, Any] = {}
                for _, p, _ in rows:
                    geometry.update(p.get("geometry") or {})
                parameters = {"strategy": rows[0][1]["strategy"], "geometry": geometry}
            names = {name for _, _, name in rows}
            found[pool] = Detected(
                mode=mode,
                per_mode=counts,
                parameters=parameters,
                resource_name=names.pop() if len(names) == 1 else "",
                driver_managed_mig=managed[pool],
            )
    return found


@dataclass(frozen=True)
class AgentCoverage:
    """How many of the pool's present nodes have an agent that reports (live credential, seen within
    AGENT_OFFLINE_AFTER): a revision only reaches nodes through their agents."""

    reporting: int
    nodes: int

    @property
    def warning(self) -> str:
        if self.nodes == 0 or self.reporting > 0:
            return ""
        return (
            f"No node agent reports from this pool's {self.nodes} node{'s' if self.nodes != 1 else ''}: "
            "a published revision reaches no node, and a rollout stays at 0 converged until agents "
            "register (docs/agents.md)."
        )

    def as_dict(self) -> dict[str, Any]:
        return {"reporting": self.reporting, "nodes": self.nodes, "warning": self.warning}


def agent_coverage(*, pool_id: uuid.UUID) -> AgentCoverage:
    """Two queries."""
    since = timezone.now() - timedelta(seconds=settings.AGENT_OFFLINE_AFTER)
    nodes = Node.objects.filter(pool_id=pool_id, present=True)
    reporting = (
        NodeAgent.objects.filter(node__in=nodes, revoked_at__isnull=True)
        .filter(models.Q(last_seen_at__gte=since) | models.Q(registered_at__gte=since))
        .values("node_id")
        .distinct()
        .count()
    )
    return AgentCoverage(reporting=reporting, nodes=nodes.count())
