"""A store loaded with a small scenario, and controllers driven by hand with a fake clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesim.controllers import ControllerSet, start_controllers
from kubesim.scenarios import build
from kubesim.store import Store


@dataclass
class FakeClock:
    now: float = 1_767_614_400.0  # 2026-01-05T12:00:00Z

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Cluster:
    store: Store
    controllers: ControllerSet
    clock: FakeClock
    created: list[str] = field(default_factory=list)

    def settle(self) -> None:
        assert self.controllers.settle(30), "controllers did not settle"

    def node(self, name: str) -> dict[str, Any]:
        node = self.store.get("nodes", None, name)
        assert node is not None
        return node

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.store.get("pods", namespace, name)
        assert pod is not None
        return pod

    def nodes_of_pool(self, pool: str) -> list[str]:
        return [
            n["metadata"]["name"]
            for n in self.store.list("nodes", label_selector=f"gpuplatform.io/node-pool={pool}")
        ]

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.store.list("events") if e["reason"] == reason]


def cluster(
    scenario: str, nodes: int, *, enabled: set[str] | None = None, seed: int = 1, **options: Any
) -> Cluster:
    """Only the nodes (and daemon pods) of a scenario, unless options ask for workloads."""
    options.setdefault("pods_per_node", 0)
    options.setdefault("claims_per_node", 0)
    built = build(scenario, nodes=nodes, seed=seed, **options)
    store = Store(clock=FakeClock())
    store.bulk_load(built.objects)
    clock = FakeClock()
    controllers = start_controllers(store, enabled=enabled, seed=seed, clock=clock, background=False)
    return Cluster(store, controllers, clock)


def gpu_pod(
    name: str,
    resources: dict[str, str],
    *,
    namespace: str = "team-vision",
    node_selector: dict[str, str] | None = None,
    tolerate: bool = True,
    claims: list[dict[str, str]] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "resources": {"requests": {"cpu": "1", **resources}, "limits": dict(resources)},
    }
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if node_selector:
        spec["nodeSelector"] = node_selector
    if claims:
        spec["resourceClaims"] = claims
        container["resources"]["claims"] = [{"name": c["name"]} for c in claims]
    if scheduler:
        spec["schedulerName"] = scheduler
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def claim(
    name: str,
    device_class: str,
    *,
    selector: str | None = None,
    count: int = 1,
    namespace: str = "team-vision",
    memory: str | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "deviceClassName": device_class,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


# The "consumable-capacity" scenario's pools: one H100 in the NVIDIA driver's "memory" mode, one in 4 shares.
MEMORY_POOL = "h100-dra-shares-memory"
SHARES_POOL = "h100-dra-shares-4"


def use_share(store: Store, pool: str, name: str, memory: str | None = None) -> None:
    """A claim on a share of a consumable-capacity card (``memory`` of it, or the policy's default) and
    a pod in ``pool`` that uses it."""
    store.create("resourceclaims", claim(name, "gpu.nvidia.com", memory=memory))
    pod = gpu_pod(
        name,
        {},
        node_selector={"gpuplatform.io/node-pool": pool},
        claims=[{"name": "gpu", "resourceClaimName": name}],
    )
    store.create("pods", pod)


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled")
