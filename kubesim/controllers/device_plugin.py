"""NVIDIA's device plugin (with GFD): applies the config named by `nvidia.com/device-plugin.config`.

Time-slicing and MPS multiply what the node advertises by the replicas, `renameByDefault` moves the
shares to `nvidia.com/gpu.shared`, and `flags.migStrategy` switches between single and mixed; GFD
relabels replicas, sharing strategy and product. A key that names no config leaves the node as it is,
with a Warning event, as the real plugin skips reconfiguration. Running pods keep their devices.
"""

from __future__ import annotations

from kubesim.controllers.base import Context
from kubesim.controllers.node_state import (
    current_layout,
    device_plugin_config,
    hardware,
    managed_by_device_plugin,
    rewrite_node,
)
from kubesim.scenarios.nodes import DEVICE_PLUGIN_CONFIG, DP_APPLIED

COMPONENT = "nvidia-device-plugin"


class DevicePlugin:
    name = "device-plugin"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._warned: set[tuple[str, str]] = set()

    def reconcile(self) -> int:
        writes = 0
        for node in self.ctx.cache.values("nodes"):
            hw = hardware(node)
            if hw is None or not managed_by_device_plugin(node):
                continue
            desired = (node["metadata"].get("labels") or {}).get(DEVICE_PLUGIN_CONFIG)
            if desired == (node["metadata"].get("annotations") or {}).get(DP_APPLIED):
                continue
            name = node["metadata"]["name"]
            sharing = device_plugin_config(self.ctx.cache, desired)
            if sharing is None:
                if (name, str(desired)) not in self._warned:
                    self._warned.add((name, str(desired)))
                    self.ctx.event(
                        node,
                        "Warning",
                        "InvalidDevicePluginConfig",
                        f'device plugin config "{desired}" not found or invalid; keeping the current one',
                        COMPONENT,
                    )
                    writes += 1
                continue
            for line in sharing.ignored:
                self.ctx.event(node, "Warning", "DevicePluginConfigIgnored", line, COMPONENT)
                writes += 1
            layout = current_layout(self.ctx.cache, node, *hw)
            updated = rewrite_node(
                self.ctx,
                node,
                layout,
                extra_labels={},
                extra_annotations={DP_APPLIED: desired},
                sharing=sharing,
            )
            if updated is not None:
                writes += 1
        return writes
