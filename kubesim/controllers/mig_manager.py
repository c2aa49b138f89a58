"""NVIDIA's mig-manager: applies the geometry named by `nvidia.com/mig.config` and reports progress.

As mig-parted's deployments/gpu-operator reconfigure does it, once per change of the label (the
manager's informer reacts to label changes only):
- a config name the mig-parted file does not hold, or one the node's GPUs cannot place
  (`nvidia-mig-parted assert --valid-config`): `nvidia.com/mig.config.state=failed`;
- the config already applied: `success` at once, nothing touched (`assert` passes);
- otherwise `pending`, the operator's GPU clients are paused, and `nvidia-mig-parted apply` runs. It
  fails while user GPU workloads still hold the GPUs (a MIG mode change needs a GPU reset, and GPU
  instances in use cannot be destroyed: "In use by another client"), so a node with running GPU pods
  or allocated claims ends `failed`, with a Warning event naming them, and is not retried until the
  label changes again (drain, then set the label: to another config and back if it must be the same);
- applied: GFD labels, extended resources and, on DRA nodes, the driver's ResourceSlices (a new pool
  generation), then `success`.
The mig-parted file is ConfigMap `gpu-operator/default-mig-parted-config`, key `config.yaml`: the one
the GPU Operator mounts when ClusterPolicy `spec.migManager.config.name` is left empty.
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
                continue  # tried once for this label value; the next label change tries again
            if configs is None:
                configs = mig_configs(self.ctx.cache)
            entries = configs.get(desired)
            layout = resolve_entries(entries, hw[0], hw[1]) if entries else None
            name = node["metadata"]["name"]
            if layout is None:
                writes += self._fail(node, desired, entries is None)
            elif desired == annotations.get(MIG_APPLIED):
                done = {MIG_CONFIG_STATE: "success"}
                if self.ctx.patch(
                    "nodes", None, name, {"metadata": {"labels": done, "annotations": {MIG_FAILED: None}}}
                ):
                    writes += 1
            elif state != "pending":
                if self.ctx.patch(
                    "nodes", None, name, {"metadata": {"labels": {MIG_CONFIG_STATE: "pending"}}}
                ):
                    writes += 1
            else:
                writes += self._apply_when_idle(node, desired, layout)
        return writes

    def _fail(self, node: dict[str, Any], desired: str, unknown: bool, busy: str | None = None) -> int:
        name = node["metadata"]["name"]
        patch = {"metadata": {"labels": {MIG_CONFIG_STATE: "failed"}, "annotations": {MIG_FAILED: desired}}}
        updated = self.ctx.patch("nodes", None, name, patch)
        if updated is None:
            return 0
        if busy:
            reason = (
                f"GPUs in use by {busy} (In use by another client); drain the node, then set the label again"
            )
        elif unknown:
            reason = f'config "{desired}" not found'
        else:
            reason = f'config "{desired}" does not fit the GPUs of this node'
        self.ctx.event(
            updated, "Warning", "MigConfigFailed", f"Failed to apply MIG configuration: {reason}", COMPONENT
        )
        return 1

    def _apply_when_idle(self, node: dict[str, Any], desired: str, layout: list[list[PlacedInstance]]) -> int:
        name = node["metadata"]["name"]
        busy = gpu_workloads_on(self.ctx, name)
        if busy:
            shown = ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
            return self._fail(node, desired, False, busy=shown)
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
