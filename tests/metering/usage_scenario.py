"""The metering scenario's cards as the DCGM exporter and the HAMi monitor report them, for a real
Prometheus. Label shapes follow realworld/metrics (one card per shape): 4.8.3 labels (``hostname``,
pod labels), an old build behind kube-prometheus (``Hostname`` = the exporter pod, ``exported_*``,
GPU_UTIL only), H100 MIG samples (parent UUID + GPU_I_ID), HAMi current and legacy names side by side,
time-slicing with a series per pod carrying the card's values, MPS with an energy counter reset.

Each test's expected figures are worked out by hand beside it (tests/metering/test_collection.py).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from inventory.models import Gpu, ShareableUnit
from tests.metering.prometheus import Series
from tests.metering.scenario import Fleet

UUIDS = {
    "h100/0": "GPU-0a11aaaa-0000-4000-8000-000000000001",
    "h100/1": "GPU-1b22bbbb-0000-4000-8000-000000000002",
    "h100-mig/0": "GPU-2c33cccc-0000-4000-8000-000000000003",
    "h100-hami/0": "GPU-3d44dddd-0000-4000-8000-000000000004",
    "t4-ts/0": "GPU-4e55eeee-0000-4000-8000-000000000005",
    "t4-mps/0": "GPU-5f66ffff-0000-4000-8000-000000000006",
}
WATTS = {"h100/0": 500, "h100/1": 300, "h100-mig/0": 400, "h100-hami/0": 200, "t4-ts/0": 70, "t4-mps/0": 50}
STEP = 60


def describe_cards(fleet: Fleet) -> None:
    """What the inventory would hold for these cards: UUIDs, sharing modes, HAMi units."""
    Gpu.objects.create(node=fleet.nodes["h100"], index=1, model_key="H100-80GB")
    for key, uuid in UUIDS.items():
        pool, index = key.split("/")
        Gpu.objects.filter(node=fleet.nodes[pool], index=int(index)).update(uuid=uuid, memory_mib=81920)
    fleet.nodes["h100-mig"].mig_strategy = "mixed"
    fleet.nodes["t4-ts"].sharing_strategy = "time-slicing"
    fleet.nodes["t4-mps"].sharing_strategy = "mps"
    for name in ("h100-mig", "t4-ts", "t4-mps"):
        fleet.nodes[name].save()
    gpu = Gpu.objects.get(node=fleet.nodes["h100-hami"], index=0)
    ShareableUnit.objects.create(
        cluster=fleet.cluster, node=fleet.nodes["h100-hami"], gpu=gpu, key=f"hami/{gpu.uuid}",
        kind="hami_gpu", resource_name="nvidia.com/gpu", ge_each=1, device_uuid=gpu.uuid, memory_mib=81920,
    )  # fmt: skip
    for profile, ge in (("1g.20gb", "0.25"), ("3g.40gb", "0.5")):
        ShareableUnit.objects.create(
            cluster=fleet.cluster, node=fleet.nodes["h100-mig"], gpu=gpu, key=f"mig/{profile}",
            kind="mig_instance", resource_name=f"nvidia.com/mig-{profile}", ge_each=ge, mig_profile=profile,
        )  # fmt: skip


def _minutes(hour: datetime, start: int, stop: int) -> list[float]:
    base = hour.timestamp()
    return [base + m * STEP for m in range(start, stop)]


class Scenario:
    """Series for one hour H: samples from H-10min to H+70min (the hours around it stay defined)."""

    def __init__(self, hour: datetime) -> None:
        self.hour = hour
        self.series: list[Series] = []
        self.drop: dict[tuple[str, str], set[int]] = {}  # (card key, metric) -> minutes missing
        self.poison: dict[tuple[str, str], dict[int, float]] = {}  # -> minute -> NaN / negative

    def add(self, name: str, labels: dict[str, str], value: float, start: int, stop: int, card: str) -> None:
        drop = self.drop.get((card, name), set())
        poison = self.poison.get((card, name), {})
        samples = [
            (t, poison.get(m, value))
            for m, t in zip(range(start, stop), _minutes(self.hour, start, stop), strict=True)
            if m not in drop
        ]
        self.series.append(Series(name, labels, samples))

    def energy(self, labels: dict[str, str], card: str, reset_at: int | None = None) -> None:
        """A counter in mJ rising at the card's constant power; a reset restarts it at one step's worth."""
        per_step = WATTS[card] * STEP * 1000
        value = 7_000_000_000.0
        samples = []
        for m, t in zip(range(-10, 71), _minutes(self.hour, -10, 71), strict=True):
            value = per_step if m == reset_at else value + per_step
            samples.append((t, value))
        self.series.append(Series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, samples))


def dcgm_base(card: str, host_label: str, host: str, model: str) -> dict[str, str]:
    return {
        "gpu": card.split("/")[1],
        "UUID": UUIDS[card],
        "device": f"nvidia{card.split('/')[1]}",
        "modelName": model,
        host_label: host,
        "DCGM_FI_DRIVER_VERSION": "535.129.03",
        "instance": "10.0.0.1:9400",
        "job": "gpu-metrics",
    }


def pod(namespace: str, name: str, prefix: str = "") -> dict[str, str]:
    return {f"{prefix}container": "main", f"{prefix}namespace": namespace, f"{prefix}pod": name}


def build(hour: datetime, *, scenario: Scenario | None = None) -> Scenario:
    s = scenario or Scenario(hour)
    h100 = "NVIDIA H100 80GB HBM3"
    # h100/0: dcgm-exporter 4.8.3 (hostname), v-h100 holds it all hour. PROF wins over GPU_UTIL.
    card = dcgm_base("h100/0", "hostname", "h100-0", h100) | {"pci_bus_id": "00000000:1A:00.0"}
    held = card | pod("team-vision", "v-h100")
    s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", held, 0.5, -10, 71, "h100/0")
    s.add("DCGM_FI_DEV_GPU_UTIL", held, 70, -10, 71, "h100/0")
    s.add("DCGM_FI_DEV_FB_USED", held, 40960, -10, 71, "h100/0")
    s.energy(held, "h100/0")
    # h100/1: an old build behind kube-prometheus: Hostname is the exporter pod, the workload is in
    # exported_*, pod/namespace name the exporter; GPU_UTIL (percent) only. n-h100 holds 10:00-10:30,
    # then the card idles at 10% with nobody on it.
    card = dcgm_base("h100/1", "Hostname", "nvidia-dcgm-exporter-57pvc", h100) | {
        "pod": "nvidia-dcgm-exporter-57pvc",
        "namespace": "gpu-operator",
    }
    held = card | pod("team-nlp", "n-h100", "exported_")
    s.add("DCGM_FI_DEV_GPU_UTIL", card, 0, -10, 0, "h100/1")
    s.add("DCGM_FI_DEV_GPU_UTIL", held, 80, 0, 30, "h100/1")
    s.add("DCGM_FI_DEV_GPU_UTIL", card, 10, 30, 71, "h100/1")
    s.add("DCGM_FI_DEV_FB_USED", card, 0, -10, 0, "h100/1")
    s.add("DCGM_FI_DEV_FB_USED", held, 8192, 0, 30, "h100/1")
    s.add("DCGM_FI_DEV_FB_USED", card, 0, 30, 71, "h100/1")
    s.energy(card, "h100/1")
    # h100-mig/0: MIG instances carry the parent UUID and GPU_I_ID; pod labels only when held.
    card = dcgm_base("h100-mig/0", "hostname", "h100-mig-0", h100)
    for gi, profile, who, ratio, mib, start, stop in (
        ("1", "1g.20gb", "v-mig-a", 0.4, 10240, -10, 71),
        ("2", "1g.20gb", "v-mig-b", 0.8, 5120, -10, 71),
        ("3", "3g.40gb", "n-mig", 0.6, 20480, -5, 45),
    ):
        ns = "team-vision" if who.startswith("v") else "team-nlp"
        inst = card | {"GPU_I_ID": gi, "GPU_I_PROFILE": profile}
        s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", inst | pod(ns, who), ratio, start, stop, "h100-mig/0")
        s.add("DCGM_FI_DEV_FB_USED", inst | pod(ns, who), mib, start, stop, "h100-mig/0")
        if stop < 71:
            s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", inst, 0, stop, 71, "h100-mig/0")
            s.add("DCGM_FI_DEV_FB_USED", inst, 0, stop, 71, "h100-mig/0")
    s.energy(card, "h100-mig/0")
    # h100-hami/0: the HAMi monitor; v-hami under the current names, n-hami (10:10-10:30) exported
    # under both the legacy and the current names (--legacy-metrics): counted once.
    uuid = UUIDS["h100-hami/0"]
    cur = {"device_uuid": uuid, "vdevice_index": "0", "zone": "vGPU", "container": "main"}
    s.add(
        "hami_container_device_utilization_ratio",
        cur | {"namespace": "team-vision", "pod": "v-hami"},
        0.2,
        -10,
        71,
        "hami",
    )
    s.add(
        "hami_vgpu_memory_used_bytes",
        cur | {"namespace": "team-vision", "pod": "v-hami"},
        4 * 2**30,
        -10,
        71,
        "hami",
    )
    s.add(
        "hami_container_device_utilization_ratio",
        cur | {"namespace": "team-nlp", "pod": "n-hami"},
        0.5,
        10,
        30,
        "hami",
    )
    s.add(
        "hami_vgpu_memory_used_bytes",
        cur | {"namespace": "team-nlp", "pod": "n-hami"},
        2 * 2**30,
        10,
        30,
        "hami",
    )
    legacy = {
        "deviceuuid": uuid,
        "vdeviceid": "0",
        "zone": "vGPU",
        "ctrname": "main",
        "podnamespace": "team-nlp",
        "podname": "n-hami",
    }
    s.add("Device_utilization_desc_of_container", legacy, 50, 10, 30, "hami")
    s.add("Device_memory_desc_of_container", legacy, 2 * 2**30, 10, 30, "hami")
    card = dcgm_base("h100-hami/0", "hostname", "h100-hami-0", h100)
    s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", card, 0.7, -10, 71, "h100-hami/0")
    s.energy(card, "h100-hami/0")
    # t4-ts/0: time-slicing; the exporter repeats the card's values on a series per pod.
    t4 = "Tesla T4"
    card = dcgm_base("t4-ts/0", "hostname", "t4-ts-0", t4)
    for who, ns, start, stop in (("v-ts", "team-vision", -10, 71), ("n-ts", "team-nlp", 40, 71)):
        s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", card | pod(ns, who), 0.6, start, stop, "t4-ts/0")
        s.add("DCGM_FI_DEV_FB_USED", card | pod(ns, who), 7168, start, stop, "t4-ts/0")
    s.energy(card, "t4-ts/0")
    # t4-mps/0: MPS, one client; its energy counter resets at 10:30 (a driver reload).
    card = dcgm_base("t4-mps/0", "hostname", "t4-mps-0", t4)
    s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", card | pod("team-vision", "v-mps"), 0.3, -10, 71, "t4-mps/0")
    s.add("DCGM_FI_DEV_FB_USED", card | pod("team-vision", "v-mps"), 2048, -10, 71, "t4-mps/0")
    s.energy(card, "t4-mps/0", reset_at=30)
    return s


def with_faults(hour: datetime) -> Scenario:
    """The same cards at another hour, with a 10-minute scrape gap on h100/0 and NaN and negative
    samples on two MIG instances."""
    s = Scenario(hour)
    s.drop[("h100/0", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")] = set(range(20, 30))
    s.drop[("h100/0", "DCGM_FI_DEV_GPU_UTIL")] = set(range(20, 30))
    s.poison[("h100-mig/0", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")] = dict.fromkeys(range(5, 10), math.nan)
    s.poison[("h100-mig/0", "DCGM_FI_DEV_FB_USED")] = dict.fromkeys(range(5, 10), -1.0)
    # A series missing its UUID label (a misconfigured exporter): 90% all hour, kept by its host.
    s.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {"gpu": "0", "Hostname": "stray-node"}, 0.9, -10, 71, "stray")
    return build(hour, scenario=s)


def later(hour: datetime, hours: int) -> datetime:
    return hour + timedelta(hours=hours)
