"""Who owns a node's MIG layout, from the NVIDIA DRA driver's ResourceSlices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from inventory.domain.dra_devices import parse_resource_slice
from inventory.domain.mig_management import node_has_dynamic_mig, slice_has_dynamic_mig
from tests.inventory_domain import realworld

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


def _slices(docs: list[Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "List":
            found += [item for item in doc["items"] if item.get("kind") == "ResourceSlice"]
        elif doc.get("kind") == "ResourceSlice":
            found.append(doc)
    return found


def _dynamic() -> list[dict[str, Any]]:
    return _slices(list(yaml.safe_load_all((FIXTURES / "resourceslices-dynamic-mig.yaml").read_text())))


def test_split_slices_of_1_35_mark_the_node_by_its_device_slice() -> None:
    counters, devices, combined = (parse_resource_slice(obj=o) for o in _dynamic())
    # The counters-only slice has no device: on its own it says nothing.
    assert counters.shared_counters and not counters.devices
    assert slice_has_dynamic_mig(counters) is False
    assert slice_has_dynamic_mig(devices) is True
    assert node_has_dynamic_mig([counters, devices]) is True
    # 1.34's combined slice: counters and devices together.
    assert slice_has_dynamic_mig(combined) is True


def test_static_mig_devices_from_mig_parted_are_not_driver_managed() -> None:
    # The AKS capture: MIG devices mig-parted made, announced without counters (DynamicMIG off).
    slices = [
        parse_resource_slice(obj=o) for o in _slices(realworld.yaml_docs("resourceslice-nvidia-gpu.yaml"))
    ]
    assert any(d.type == "mig" for s in slices for d in s.devices)
    assert not any(slice_has_dynamic_mig(s) for s in slices)


def test_partitionable_devices_of_another_driver_are_not_nvidia_dynamic_mig() -> None:
    obj = _dynamic()[1]
    other = {**obj, "spec": {**obj["spec"], "driver": "gpu.example.com"}}
    assert slice_has_dynamic_mig(parse_resource_slice(obj=other)) is False


def test_a_whole_gpu_consuming_counters_alone_is_not_dynamic_mig() -> None:
    obj = _dynamic()[1]
    whole_only = {**obj, "spec": {**obj["spec"], "devices": obj["spec"]["devices"][:1]}}
    assert slice_has_dynamic_mig(parse_resource_slice(obj=whole_only)) is False
