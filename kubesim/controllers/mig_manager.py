"""NVIDIA's mig-manager: applies the geometry named by `nvidia.com/mig.config` and reports progress.

State label `nvidia.com/mig.config.state`: pending as soon as a new config is seen; failed for an
unknown config or one the node's GPUs cannot hold (mig-parted validates placements); success once
applied. Repartitioning resets the GPUs, which fails while GPU workloads run ("In use by another
client"), so the manager keeps the node pending with a Warning event until it is idle, then applies:
GFD labels, extended resources and, on DRA nodes, the driver's ResourceSlices (a new pool generation).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubesim.controllers.base import Context
from kubesim.controllers.cache import TERMINAL
from kubesim.controllers.node_state import hardware, managed_by_device_plugin, mig_configs, rewrite_node
from kubesim.scenarios import dra
from kubesim.scenarios.ids import Timestamps, gpu_uuid, name_suffix
from kubesim.scenarios.mig_geometry import PlacedInstance, resolve_entries
from kubesim.scenarios.nodes import ANNOTATION_PREFIX, MIG_APPLIED, MIG_CONFIG, MIG_CONFIG_STATE

MIG_FAILED = ANNOTATION_PREFIX + "mig-config-failed"
COMPONENT = "nvidia-mig-manager"


def gpu_workloads_on(ctx: Context, node_name: str) -> list[str]:
    """Pods on the node that use GPUs (extended resources or DRA claims) and have not finished."""
    busy = []
    for pod in ctx.cache.objects["pods"].values():
        spec = pod["spec"]
        if spec.get("nodeName") != node_name or (pod.get("status") or {}).get("phase") in TERMINAL:
            continue
        uses_gpu = bool(spec.get("resourceClaims")) or any(
            name.startswith("nvidia.com/")
            for container in spec.get("containers") or []
            for section in ("requests", "limits")
            for name in ((container.get("resources") or {}).get(section) or {})
        )
        if uses_gpu:
            busy.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
    for claim in ctx.cache.objects["resourceclaims"].values():
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
        if any(r.get("pool") == node_name and r.get("driver") == dra.DRIVER for r in results):
            busy.append(f"resourceclaim {claim['metadata']['namespace']}/{claim['metadata']['name']}")
    return sorted(set(busy))


class MigManager:
    name = "mig-manager"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._warned: set[tuple[str, str]] = set()

    def reconcile(self) -> int:
        writes = 0
        configs = None
        for node in self.ctx.cache.values("nodes"):
            labels = node["metadata"].get("labels") or {}
            annotations = node["metadata"].get("annotations") or {}
            desired = labels.get(MIG_CONFIG)
            hw = hardware(node)
            if not desired or hw is None or not hw[0].mig_capable:
                continue
            state = labels.get(MIG_CONFIG_STATE)
            if desired == annotations.get(MIG_APPLIED) and state == "success":
                continue
            if state == "failed" and annotations.get(MIG_FAILED) == desired:
                continue
            if configs is None:
                configs = mig_configs(self.ctx.cache)
            entries = configs.get(desired)
            layout = resolve_entries(entries, hw[0], hw[1]) if entries else None
            name = node["metadata"]["name"]
            if layout is None:
                writes += self._fail(node, desired, entries is None)
            elif state != "pending":
                if self.ctx.patch(
                    "nodes", None, name, {"metadata": {"labels": {MIG_CONFIG_STATE: "pending"}}}
                ):
                    writes += 1
            else:
                writes += self._apply_when_idle(node, desired, layout)
        return writes

    def _fail(self, node: dict[str, Any], desired: str, unknown: bool) -> int:
        name = node["metadata"]["name"]
        patch = {"metadata": {"labels": {MIG_CONFIG_STATE: "failed"}, "annotations": {MIG_FAILED: desired}}}
        updated = self.ctx.patch("nodes", None, name, patch)
        if updated is None:
            return 0
        reason = (
            f'config "{desired}" not found'
            if unknown
            else f'config "{desired}" does not fit the GPUs of this node'
        )
        self.ctx.event(
            updated, "Warning", "MigConfigFailed", f"Failed to apply MIG configuration: {reason}", COMPONENT
        )
        return 1

    def _apply_when_idle(self, node: dict[str, Any], desired: str, layout: list[list[PlacedInstance]]) -> int:
        name = node["metadata"]["name"]
        busy = gpu_workloads_on(self.ctx, name)
        if busy:
            if (name, desired) not in self._warned:
                self._warned.add((name, desired))
                shown = ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
                self.ctx.event(
                    node,
                    "Warning",
                    "MigConfigBlocked",
                    f'MIG configuration "{desired}" waits: GPUs in use by {shown}; drain the node to apply',
                    COMPONENT,
                )
                return 1
            return 0
        updated = rewrite_node(
            self.ctx,
            node,
            layout,
            extra_labels={MIG_CONFIG_STATE: "success"},
            extra_annotations={MIG_APPLIED: desired, MIG_FAILED: None},
        )
        if updated is None:
            return 0
        if not managed_by_device_plugin(node):
            self._republish_slices(node, layout)
        self._warned.discard((name, desired))
        self.ctx.event(
            updated, "Normal", "MigConfigApplied", f'Applied MIG configuration "{desired}"', COMPONENT
        )
        return 1

    def _republish_slices(self, node: dict[str, Any], layout: list[list[PlacedInstance]]) -> None:
        """The DRA driver restarts on the new geometry: a new pool generation, then the old slices go."""
        name = node["metadata"]["name"]
        old = [
            rs
            for rs in self.ctx.cache.values("resourceslices")
            if rs["spec"].get("nodeName") == name and rs["spec"].get("driver") == dra.DRIVER
        ]
        if not old or any(rs["spec"].get("sharedCounters") for rs in old):
            return  # no DRA driver here, or partitionable GPUs that MIG configs do not drive
        hw = hardware(node)
        if hw is None:
            return
        model, gpus = hw
        generation = max(int(rs["spec"]["pool"].get("generation", 0)) for rs in old) + 1
        uuids = [gpu_uuid(name, i) for i in range(gpus)]  # the same physical GPUs as before
        pool = dra.build_pool(
            node=name,
            node_uid=node["metadata"].get("uid", ""),
            model=model,
            mode="mig" if any(layout) else "gpu",
            uuids=uuids,
            layout=layout,
            generation=generation,
            ts=Timestamps(datetime.fromtimestamp(self.ctx.clock(), tz=UTC)),
            age_seconds=0,
            slice_suffixes=[name_suffix(self.ctx.rng) for _ in range(4)],
        )
        for rs in pool.slices:
            self.ctx.create("resourceslices", rs)
        for rs in old:
            self.ctx.delete("resourceslices", None, rs["metadata"]["name"])
