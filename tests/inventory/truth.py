"""Compare the synced inventory with a kubesim scenario's ground truth (or with the live store)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from inventory.models import Allocation, Cluster, Gpu, ResourceClaim, ShareableUnit


def gpus_by_product(cluster: Cluster) -> Counter[str]:
    return Counter(
        Gpu.objects.filter(node__cluster=cluster, node__present=True).values_list("product", flat=True)
    )


def mig_instances(cluster: Cluster) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    rows = ShareableUnit.objects.filter(cluster=cluster, kind="mig_instance").values_list(
        "node__product", "mig_profile", "count"
    )
    for product, profile, count in rows:
        counted[(product, profile)] += count
    return counted


def shared_replicas(cluster: Cluster) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    kinds = {"time_slice_replica": "time-slicing", "mps_replica": "mps"}
    rows = ShareableUnit.objects.filter(cluster=cluster, kind__in=kinds).values_list(
        "kind", "node__product", "count"
    )
    for kind, product, count in rows:
        counted[(kinds[kind], product)] += count
    return counted


def hami_devices(cluster: Cluster) -> set[tuple[str, str, int | None, int | None]]:
    rows = ShareableUnit.objects.filter(cluster=cluster, kind="hami_gpu").values_list(
        "node__name", "device_uuid", "split_count", "memory_mib"
    )
    return set(rows)


def dra_devices(cluster: Cluster) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    rows = ShareableUnit.objects.filter(cluster=cluster, kind="dra_device", counted=True).values_list(
        "driver", "mig_profile"
    )
    for driver, profile in rows:
        counted[(driver, f"mig:{profile}" if profile else "gpu")] += 1
    return counted


def claims_by_state(cluster: Cluster) -> Counter[str]:
    rows = ResourceClaim.objects.filter(cluster=cluster, present=True).values_list("state", "deleting")
    return Counter(("deleted," if deleting else "") + state for state, deleting in rows)


def open_allocations(cluster: Cluster) -> Counter[tuple[str, str, str, str, int]]:
    """(holder kind, namespace, name, resource, count) of open intervals; HAMi shares as one row
    per card (count 1), like the truth's nvidia.com/gpu row counts cards."""
    counted: Counter[tuple[str, str, str, str, int]] = Counter()
    rows = Allocation.objects.filter(cluster=cluster, ended_at__isnull=True).values_list(
        "holder_kind", "namespace", "holder_name", "resource_name", "count"
    )
    for row in rows:
        counted[row] += 1
    return counted


def truth_allocations(truth: Any) -> Counter[tuple[str, str, str, str, int]]:
    counted: Counter[tuple[str, str, str, str, int]] = Counter()
    for a in truth.allocations:
        if a.unit.startswith("hami:"):
            if a.resource == "nvidia.com/gpu":
                for _ in range(a.count):
                    counted[(a.holder_kind, a.namespace, a.name, a.resource, 1)] += 1
            continue
        counted[(a.holder_kind, a.namespace, a.name, a.resource, a.count)] += 1
    return counted
