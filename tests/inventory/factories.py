"""Small inventory rows for API and isolation tests, without a simulator."""

from __future__ import annotations

import copy
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from inventory.crypto import encrypt_text
from inventory.models import Allocation, Cluster, Gpu, Node, NodePool, ResourceClaim, ShareableUnit, Workload


def cluster(name: str = "east") -> Cluster:
    found, _ = Cluster.objects.get_or_create(
        name=name,
        defaults={"api_endpoint": "https://east.example:6443", "kubeconfig_encrypted": encrypt_text("x")},
    )
    return found


def pool(name: str = "NVIDIA-H100-80GB-HBM3", *, tenant: Any = None, on: Cluster | None = None) -> NodePool:
    found, _ = NodePool.objects.get_or_create(cluster=on or cluster(), name=name, defaults={"tenant": tenant})
    return found


def node(name: str = "gpu-0", *, in_pool: NodePool | None = None) -> Node:
    the_pool = in_pool or pool()
    found, _ = Node.objects.get_or_create(
        cluster=the_pool.cluster,
        name=name,
        defaults={
            "pool": the_pool,
            "product": "NVIDIA-H100-80GB-HBM3",
            "model_key": "H100-80GB",
            "gpu_count": 1,
        },
    )
    return found


def whole_gpus(node: Node, count: int) -> ShareableUnit:
    """One device-plugin unit on ``node`` advertising ``count`` whole H100s."""
    return ShareableUnit.objects.create(
        cluster=node.cluster,
        node=node,
        key=f"node/{node.name}/nvidia.com/gpu",
        kind="whole_gpu",
        resource_name="nvidia.com/gpu",
        count=count,
        ge_each=Decimal(1),
        model_key="H100-80GB",
    )


def gpu(*, on: Node | None = None) -> Gpu:
    the_node = on or node()
    found, _ = Gpu.objects.get_or_create(
        node=the_node,
        index=0,
        defaults={"product": the_node.product, "model_key": "H100-80GB", "memory_mib": 81559},
    )
    ShareableUnit.objects.get_or_create(
        cluster=the_node.cluster,
        key=f"node/{the_node.name}/nvidia.com/gpu/0/-/0",
        defaults={
            "node": the_node,
            "gpu": found,
            "kind": "whole_gpu",
            "resource_name": "nvidia.com/gpu",
            "ge_each": Decimal(1),
            "model_key": "H100-80GB",
        },
    )
    return found


def claim(*, tenant: Any, namespace: str, name: str = "claim-1") -> ResourceClaim:
    found, _ = ResourceClaim.objects.get_or_create(
        cluster=cluster(),
        uid=f"uid-{namespace}-{name}",
        defaults={"tenant": tenant, "namespace": namespace, "name": name, "state": "allocated"},
    )
    return found


def allocation(
    *, tenant: Any, namespace: str, name: str = "pod-1", hours_ago: int = 2, open: bool = True
) -> Allocation:
    existing = Allocation.objects.filter(holder_uid=f"uid-{namespace}-{name}").first()
    if existing is not None:
        return existing
    now = timezone.now()
    the_node = node()
    return Allocation.objects.create(
        cluster=the_node.cluster,
        tenant=tenant,
        namespace=namespace,
        holder_kind="Pod",
        holder_name=name,
        holder_uid=f"uid-{namespace}-{name}",
        unit_key="nvidia.com/gpu",
        resource_name="nvidia.com/gpu",
        count=1,
        ge=Decimal(1),
        model_key="H100-80GB",
        node=the_node,
        node_name=the_node.name,
        pool=the_node.pool,
        started_at=now - timedelta(hours=hours_ago),
        ended_at=None if open else now - timedelta(hours=hours_ago - 1),
    )


def workload(*, tenant: Any, namespace: str, name: str = "job-train-1a2b3") -> Workload:
    """A Kueue Workload of ``tenant``'s, waiting on gpuplatform's budget check."""
    found, _ = Workload.objects.get_or_create(
        cluster=cluster(),
        uid=f"uid-{namespace}-{name}",
        defaults={
            "tenant": tenant,
            "namespace": namespace,
            "name": name,
            "queue_name": "default",
            "cluster_queue": tenant.slug if tenant else "",
            "state": "quota_reserved",
            "explanation": "Quota reserved; waiting for gpuplatform.",
            "pod_sets": [{"name": "main", "count": 1, "requests": {"nvidia.com/gpu": "1"}}],
        },
    )
    return found


H100 = "NVIDIA-H100-80GB-HBM3"
XID_TAINT = "tainted by gpu.nvidia.com/xid=79:NoSchedule"
HAMI_CORDON = "cordoned by HAMi (hami.io/device-cordon)"


def h100_cards(
    *, nodes: int, blocked: dict[tuple[int, int], str], dra_driver: str = "", dra_nodes: int = 0
) -> NodePool:
    """Nodes h100-0… of 8 H100s, one unit a card; ``blocked`` names the (node, index) cards a taint or
    cordon keeps from being offered, in the pool page's words (XID_TAINT, HAMI_CORDON). The first
    ``dra_nodes`` nodes publish their cards as ``dra_driver``'s devices, the others as whole GPUs."""
    the_pool = pool(H100)
    for n in range(nodes):
        the_node = Node.objects.create(
            cluster=the_pool.cluster,
            pool=the_pool,
            name=f"h100-{n}",
            product=H100,
            model_key="H100-80GB",
            gpu_count=8,
        )
        dra = n < dra_nodes
        for index in range(8):
            Gpu.objects.create(node=the_node, index=index, product=H100, model_key="H100-80GB")
            ShareableUnit.objects.create(
                cluster=the_node.cluster,
                node=the_node,
                key=f"dra/{dra_driver}/{the_node.name}/gpu-{index}@{the_node.name}-slice"
                if dra
                else f"node/{the_node.name}/gpu-{index}",
                kind="dra_device" if dra else "whole_gpu",
                resource_name=dra_driver if dra else "nvidia.com/gpu",
                count=1,
                ge_each=Decimal(1),
                model_key="H100-80GB",
                device_uuid=f"GPU-{n}-{index}",
                attributes={"index": index} if dra else {},
                unavailable=blocked.get((n, index), ""),
            )
    return the_pool


def running_gpu_pod(
    template: dict[str, Any], name: str, *, node: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A copy of a kubesim pod, renamed, bound to ``node`` and running with one whole GPU: the pod a
    watch test creates to see it reach its row."""
    pod = copy.deepcopy(template)
    pod["metadata"] = {"name": name, "namespace": pod["metadata"]["namespace"]}
    if labels:
        pod["metadata"]["labels"] = labels
    pod["spec"]["nodeName"] = node
    pod["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1"},
        "requests": {"nvidia.com/gpu": "1"},
    }
    pod["status"] = {"phase": "Running", "startTime": "2026-01-06T10:00:00Z"}
    return pod
