"""Pools with nodes and cards for policy tests, without a simulator."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from inventory.models import Allocation, Gpu, Node, NodePool
from policies.models import AdmissionApply, AdmissionRule, PolicyRevision, SharingPolicy
from tests.inventory import factories as inv


def h100_pool(name: str = "h100", *, nodes: int = 2, cards: int = 4, cluster: Any = None) -> NodePool:
    """``nodes`` nodes of ``cards`` H100 80GB each (8 cards by default)."""
    pool = inv.pool(name, on=cluster)
    for i in range(nodes):
        node = Node.objects.create(
            cluster=pool.cluster,
            pool=pool,
            name=f"{name}-node-{i}",
            product="NVIDIA-H100-80GB-HBM3",
            model_key="H100-80GB",
            gpu_count=cards,
        )
        for index in range(cards):
            Gpu.objects.create(node=node, index=index, model_key="H100-80GB", memory_mib=81559)
    return pool


def gpu_pod(pool: NodePool, *, node: str, namespace: str, pod: str, tenant: Any = None) -> Allocation:
    """An open allocation: a running pod holding one GPU on ``node``."""
    the_node = Node.objects.get(cluster=pool.cluster, name=node)
    return Allocation.objects.create(
        cluster=pool.cluster,
        tenant=tenant,
        namespace=namespace,
        holder_kind="Pod",
        holder_name=pod,
        holder_uid=f"uid-{pod}",
        unit_key=f"node/{node}/nvidia.com/gpu",
        resource_name="nvidia.com/gpu",
        count=1,
        ge=Decimal(1),
        model_key="H100-80GB",
        node_name=node,
        node=the_node,
        pool=pool,
        started_at=timezone.now() - timedelta(hours=1),
    )


def sharing_policy(pool: NodePool) -> SharingPolicy:
    found, _ = SharingPolicy.objects.get_or_create(pool=pool, defaults={"mode": "exclusive"})
    return found


def revision(pool: NodePool) -> PolicyRevision:
    """A published revision row, for isolation and query-count sweeps (no compiler involved)."""
    found = PolicyRevision.objects.filter(pool=pool).first()
    return found or PolicyRevision.objects.create(
        pool=pool,
        number=1,
        policy={"mode": "exclusive", "parameters": {}, "resource_name": "nvidia.com/gpu-x"},
        bundle={"files": [], "labels": {}, "configmaps": []},
        content_hash="sha256:0",
        signature="-",
        key_id="-",
    )


def admission_rule(*, tenant: Any, pool: NodePool) -> AdmissionRule:
    found, _ = AdmissionRule.objects.get_or_create(tenant=tenant, pool=pool, defaults={"max_per_pod": 2})
    return found


def admission_apply(cluster: Any = None) -> AdmissionApply:
    """A finished apply of admission rules to a cluster (a platform object)."""
    return AdmissionApply.objects.create(
        cluster=cluster or inv.cluster(),
        state="done",
        applied=["ValidatingAdmissionPolicy/gpuplatform-tenant-nlp"],
    )
