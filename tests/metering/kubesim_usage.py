"""A kubesim scenario as the collection tests' fleet, and the DCGM / HAMi series its cards would report.

The fleet is kubesim's `mixed` scenario kept small: one node per pool, 2 GPUs a node, 4 pods a node and
no DRA claims (DRA nodes keep their idle devices), written to a folder kubesim loads, so the inventory is
what the real sync makes of it. The series cover exactly the scenario's GPU nodes, cards and holding pods
(``Scenario.truth``); what the data plane knows and the inventory does not (which card of a node a
device-plugin pod got, which GPU instance, the card UUIDs of device-plugin nodes) is decided here, as
the kubelet's pod-resources would tell the exporter. Every holder uses its card the same all hour;
the figures each test expects are worked out by hand beside it (tests/metering/test_collection_kubesim.py).
"""

from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kubesim.scenarios import Scenario, build
from tests.metering.prometheus import Series

NODES, SEED = 12, 1
STEP = 60

# Per holding pod: the card (index on its node), the GPU instance (id, profile) where MIG, the usage it
# reports (ratio 0-1) and its memory (MiB; bytes for HAMi). Time-sliced and MPS pods report their card's
# figures (CARD below), as the exporter repeats the card's values on a series per pod.
HOLDS: dict[str, tuple[int, tuple[str, str] | None, float | None, int | None]] = {
    # L40S whole GPUs: one per pod
    "finetune-000005": (0, None, 0.5, 20480),
    "notebook-000006": (1, None, 0.9, 10240),  # old exporter behind kube-prometheus: GPU_UTIL only
    # H100 MIG all-balanced (mixed): all three on card 0
    "train-000011": (0, ("2", "3g.40gb"), 0.8, 30720),
    "infer-000010": (0, ("5", "2g.20gb"), 0.5, 16384),
    "infer-000009": (0, ("13", "1g.10gb"), 0.7, 8192),
    # H200 MIG all-balanced: a 3g and a 2g on card 0, the other 2g on card 1
    "triton-000013": (0, ("1", "3g.71gb"), 0.6, 40960),
    "finetune-000014": (0, ("3", "2g.35gb"), 0.9, 20480),
    "train-000015": (1, ("3", "2g.35gb"), 0.4, 10240),
    # A100 40GB MIG single all-1g.5gb: three 1g.5gb on card 0, one of them idle
    "triton-000017": (0, ("7", "1g.5gb"), 0.9, 4096),
    "train-000018": (0, ("8", "1g.5gb"), 0.5, 2048),
    "finetune-000019": (0, ("9", "1g.5gb"), 0.0, 0),
    # T4 time-slicing x4, L40S time-slicing x2, L40S MPS x4: two pods on card 0, one on card 1
    "finetune-000021": (0, None, None, None),
    "train-000022": (0, None, None, None),
    "infer-000023": (1, None, None, None),
    "notebook-000025": (0, None, None, None),
    "infer-000026": (0, None, None, None),
    "notebook-000027": (1, None, None, None),
    "notebook-000029": (0, None, None, None),
    "infer-000030": (0, None, None, None),
    "infer-000031": (1, None, None, None),
    # HAMi A100 80GB: per container, on the card the pod's annotation names
    "finetune-000033": (-1, None, 0.1, 2 << 30),
    "train-000034": (-1, None, 0.3, 4 << 30),
    "infer-000035": (-1, None, 0.2, 1 << 30),
}
# Time-sliced and MPS cards' own figures (ratio, MiB), per (node, card index).
CARD = {
    ("gpu-t4-timeslicing-0000", 0): (0.6, 6144),
    ("gpu-t4-timeslicing-0000", 1): (0.2, 2048),
    ("gpu-l40s-timeslicing-0000", 0): (0.8, 16384),
    ("gpu-l40s-timeslicing-0000", 1): (0.5, 4096),
    ("gpu-l40s-mps-0000", 0): (0.5, 8192),
    ("gpu-l40s-mps-0000", 1): (0.3, 1024),
}
# Power (W) per (node, card index): the energy counter rises by it all hour.
WATTS = {
    ("gpu-h100-exclusive-0000", 0): 100,
    ("gpu-h100-exclusive-0000", 1): 100,
    ("gpu-l40s-exclusive-0000", 0): 300,
    ("gpu-l40s-exclusive-0000", 1): 200,
    ("gpu-h100-mig-balanced-0000", 0): 420,
    ("gpu-h100-mig-balanced-0000", 1): 60,
    ("gpu-h200-mig-balanced-0000", 0): 500,
    ("gpu-h200-mig-balanced-0000", 1): 250,
    ("gpu-a100-40-mig-1g-0000", 0): 150,
    ("gpu-a100-40-mig-1g-0000", 1): 50,
    ("gpu-t4-timeslicing-0000", 0): 70,
    ("gpu-t4-timeslicing-0000", 1): 40,
    ("gpu-l40s-timeslicing-0000", 0): 250,
    ("gpu-l40s-timeslicing-0000", 1): 150,
    ("gpu-l40s-mps-0000", 0): 200,
    ("gpu-l40s-mps-0000", 1): 100,
    ("gpu-a100-80-hami-0000", 0): 300,
    ("gpu-a100-80-hami-0000", 1): 50,
}
OLD_EXPORTER = "nvidia-dcgm-exporter-7xk2p"  # the exporter pod on the L40S exclusive node
# DCGM_FI_DEV_XID_ERRORS: 0 on every card, except (minute of the hour, code) from then on.
XIDS = {
    ("gpu-t4-timeslicing-0000", 1): (12, 79),  # fallen off the bus: critical
    ("gpu-a100-80-hami-0000", 0): (11, 31),  # a workload's memory page fault: not critical
}
XID_MESSAGES = {0: "No Error", 31: "GPU memory page fault", 79: "GPU has fallen off the bus"}


def write_scenario(folder: Path) -> Scenario:
    """Build the scenario and write its objects where ``kubesim.start(objects_dir=...)`` loads them."""
    scenario = build("mixed", nodes=NODES, seed=SEED, pods_per_node=4, gpus_per_node=2, claims_per_node=0)
    items = {"apiVersion": "v1", "kind": "List", "items": scenario.objects}
    (folder / "scenario.json").write_text(json.dumps(items))
    return scenario


def card_uuid(node: str, index: int) -> str:
    """A device-plugin card's UUID as NVML would give it (kubesim keeps none for such nodes)."""
    return f"GPU-{uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f'{node}/{index}')}"


@dataclass
class Generated:
    series: list[Series]
    uuids: dict[tuple[str, int], str]  # (node, index) -> the UUID the exporter reports


def generate(scenario: Scenario, hour: datetime, hami_uuids: dict[tuple[str, int], str]) -> Generated:
    """Series from ``hour`` - 10 min to ``hour`` + 70 min, every minute, for the scenario's metered nodes
    (every GPU node but DRA's) and holding pods. ``hami_uuids``: the HAMi cards' UUIDs as the node's
    register annotation gives them."""
    base = hour.timestamp()
    times = [base + m * STEP for m in range(-10, 71)]
    out: list[Series] = []
    uuids: dict[tuple[str, int], str] = {}

    def gauge(name: str, labels: dict[str, str], value: float) -> None:
        out.append(Series(name, labels, [(t, value) for t in times]))

    nodes = {n: info for n, info in scenario.truth.nodes.items() if info.mechanism != "dra"}
    hami_devices = _hami_devices(scenario)
    busy_hami = set(hami_devices.values())
    for node, info in nodes.items():
        for index in range(info.gpus):
            uuids[(node, index)] = hami_uuids.get((node, index)) or card_uuid(node, index)
    for node, info in sorted(nodes.items()):
        for index in range(info.gpus):
            labels = {
                "gpu": str(index),
                "UUID": uuids[(node, index)],
                "device": f"nvidia{index}",
                "modelName": info.product.replace("-", " "),
                "hostname": node,
                "instance": f"{node}:9400",
                "job": "gpu-metrics",
            }
            if node == "gpu-l40s-exclusive-0000" and index == 1:
                labels.pop("hostname")
                labels |= {"Hostname": OLD_EXPORTER, "pod": OLD_EXPORTER, "namespace": "gpu-operator"}
            energy = []
            value = 5_000_000_000.0
            for t in times:
                energy.append((t, value))
                value += WATTS[(node, index)] * STEP * 1000  # mJ a minute
            out.append(Series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, energy))
            # dcgm-exporter 3.x+ labels the XID sample with its code: a new series when it changes
            start, code = XIDS.get((node, index), (99, 0))
            for value, (first, stop) in ((0, (-10, start)), (code, (start, 71))):
                if first < stop:
                    xid = labels | {"err_code": str(value), "err_msg": XID_MESSAGES[value]}
                    points = [(base + m * STEP, float(value)) for m in range(first, stop)]
                    out.append(Series("DCGM_FI_DEV_XID_ERRORS", xid, points))
            if (node, index) in CARD:
                continue  # time-sliced / MPS: only per pod (below)
            if info.mechanism == "hami":
                # the card's own figure beside HAMi's per-container ones (not used for shares)
                gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, 0.6 if labels["UUID"] in busy_hami else 0.0)
            elif not any(_holds(scenario, node, index)):
                gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, 0.0)  # idle: no pod labels
                gauge("DCGM_FI_DEV_FB_USED", labels, 0.0)
    for a in _holders(scenario, nodes):
        index, instance, ratio, memory = HOLDS[a.name]
        if a.node == "gpu-a100-80-hami-0000":
            device = hami_devices[a.name]
            hami = {"device_uuid": device, "vdevice_index": "0", "zone": "vGPU", "container": "main"}
            hami |= {"namespace": a.namespace, "pod": a.name}
            gauge("hami_container_device_utilization_ratio", hami, float(ratio or 0))
            gauge("hami_vgpu_memory_used_bytes", hami, float(memory or 0))
            continue
        labels = {
            "gpu": str(index),
            "UUID": uuids[(a.node, index)],
            "device": f"nvidia{index}",
            "modelName": nodes[a.node].product.replace("-", " "),
            "hostname": a.node,
            "instance": f"{a.node}:9400",
            "job": "gpu-metrics",
            "container": "main",
            "namespace": a.namespace,
            "pod": a.name,
        }
        if instance is not None:
            labels |= {"GPU_I_ID": instance[0], "GPU_I_PROFILE": instance[1]}
        if a.name == "notebook-000006":
            labels.pop("hostname")
            labels |= {"Hostname": OLD_EXPORTER, "pod": OLD_EXPORTER, "namespace": "gpu-operator"}
            labels |= {
                "exported_pod": a.name,
                "exported_namespace": a.namespace,
                "exported_container": "main",
            }
            gauge("DCGM_FI_DEV_GPU_UTIL", labels, float(ratio or 0) * 100)
            gauge("DCGM_FI_DEV_FB_USED", labels, float(memory or 0))
            continue
        if ratio is None:
            ratio, memory = CARD[(a.node, index)]
        gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, float(ratio))
        gauge("DCGM_FI_DEV_FB_USED", labels, float(memory or 0))
    return Generated(out, uuids)


def _holders(scenario: Scenario, nodes: dict) -> list:
    """The scenario's holding pods on metered nodes, once each (a HAMi pod has a row per resource)."""
    seen: dict[str, object] = {}
    for a in scenario.truth.allocations:
        if a.holder_kind == "Pod" and a.node in nodes:
            seen.setdefault(a.name, a)
    return list(seen.values())


def _hami_devices(scenario: Scenario) -> dict[str, str]:
    """pod -> the card UUID its ``hami.io/vgpu-devices-allocated`` annotation names (one device each)."""
    out = {}
    for obj in scenario.objects:
        annotations = obj["metadata"].get("annotations") or {}
        allocated = annotations.get("hami.io/vgpu-devices-allocated")
        if obj["kind"] == "Pod" and allocated:
            out[obj["metadata"]["name"]] = allocated.split(",", 1)[0]
    return out


def _holds(scenario: Scenario, node: str, index: int):
    for a in scenario.truth.allocations:
        if a.node == node and a.holder_kind == "Pod" and HOLDS.get(a.name, (None,))[0] == index:
            yield a.name
