"""Who manages a node's MIG partitions, as its ResourceSlices show it.

The NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, formerly NVIDIA/k8s-dra-driver-gpu) with
its ``DynamicMIG`` feature gate (alpha, off by default) creates and destroys MIG devices per claim. It
then publishes every possible MIG placement as an abstract partitionable device (KEP-4815): attribute
``type: mig`` with a ``profile``, consuming counters (its capacities plus ``memory-slice-<i>``) from a
per-card counter set ``gpu-<minor>-counter-set``; the whole card consumes all of them. With
Kubernetes 1.34 counter sets and devices share a slice; from 1.35 the counters come in a slice of their
own and the devices in one slice per card. Without the gate the driver only announces MIG devices
that already exist (made by mig-parted) and those consume no counters. So a MIG device that consumes
counters is the sign: the driver owns that card's MIG layout, and mig-parted (or GPU Operator's
``nvidia.com/mig.config`` label, which drives it) must not touch the node.

The driver sets no node label for the gate, and on a node without a MIG-capable card it falls back
to whole GPUs: nothing to detect there, and nothing for mig-parted to fight either.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.domain.dra_devices import DraDevice, ResourceSlice

__all__ = ["NVIDIA_GPU_DRIVERS", "device_is_dynamic_mig", "slice_has_dynamic_mig"]

# The driver name its slices carry (both the NVIDIA and the kubernetes-sigs repositories).
NVIDIA_GPU_DRIVERS = frozenset({"gpu.nvidia.com"})


def device_is_dynamic_mig(device: DraDevice) -> bool:
    """An abstract MIG placement the driver creates on allocation: a MIG device consuming counters."""
    is_mig = device.type == "mig" or (device.type is None and bool(device.mig_profile))
    return is_mig and any(consumed.counters for consumed in device.consumes_counters)


def slice_has_dynamic_mig(piece: ResourceSlice) -> bool:
    """The slice is the NVIDIA driver's and announces MIG placements the driver makes itself."""
    return piece.driver in NVIDIA_GPU_DRIVERS and any(device_is_dynamic_mig(d) for d in piece.devices)


def node_has_dynamic_mig(slices: Iterable[ResourceSlice]) -> bool:
    return any(slice_has_dynamic_mig(piece) for piece in slices)
