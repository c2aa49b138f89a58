"""GPU models and their MIG profiles, as the data plane reports them.

Values are transcribed from the realworld reference set (GFD label dumps, `nvidia-smi mig -lgip`
tables, the MIG User Guide tables in mig-profiles.md). kubesim must run without that folder, so the
facts live here as constants; tests cross-check them against the files.

Where a real label value was never captured (for example the GFD `.memory` label of an H200 MIG
device), the value is `lgip GiB * 1024`, which reproduces every captured label except H100 3g.40gb
(captured 40320, lgip gives 40448: the captured value wins and is reused for 4g.40gb, same memory).
"""

from __future__ import annotations

from dataclasses import dataclass

# Seven compute slices and eight memory slots on every MIG-capable GPU listed here (UG Table 1).
MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLOTS = 8


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one GPU model (a row of `nvidia-smi mig -lgip`)."""

    name: str  # "1g.10gb", "1g.10gb+me"
    gi_id: int  # GI profile ID, stable within a family only
    compute_slices: int  # the "Ng" part: slices of the 7 compute slices
    memory_slots: int  # size on the 8-slot memory axis (placement size)
    starts: tuple[int, ...]  # allowed placement starts on the memory axis (lgipp)
    max_instances: int
    memory_mib: int  # GFD `mig-<profile>.memory` label / NVML memory of the device
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int

    @property
    def slug(self) -> str:
        """Profile name as DRA device names spell it: dots and plus signs dropped ("1g10gb")."""
        return self.name.replace(".", "").replace("+", "")


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as GFD, the device plugin, HAMi and the DRA driver describe it."""

    key: str
    product: str  # nvidia.com/gpu.product (GFD replaces spaces with dashes)
    nvml_name: str  # name as NVML / nvidia-smi print it (DRA productName, HAMi type)
    memory_mib: int  # nvidia.com/gpu.memory
    family: str  # nvidia.com/gpu.family
    architecture: str  # DRA attribute `architecture`
    compute_major: int
    compute_minor: int
    machine: str  # nvidia.com/gpu.machine, a real value seen with this model
    pci_device_id: str  # mig-parted device-filter form "0xDDDDVVVV"
    dra_memory: str  # DRA capacity `memory` of the whole GPU
    mig_profiles: tuple[MigProfile, ...] = ()

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def profile(self, name: str) -> MigProfile | None:
        for profile in self.mig_profiles:
            if profile.name == name:
                return profile
        return None


def _ga100_geometry(
    names: tuple[str, str, str, str, str, str, str],
    memory: tuple[int, int, int, int, int, int, int],
    sms: tuple[int, int, int, int, int, int, int],
    engines: tuple[tuple[int, int, int, int, int], ...],
) -> tuple[MigProfile, ...]:
    """The seven GI profiles every GA100/GH100 part shares, in lgip order (IDs 19, 20, 15, 14, 9, 5, 0).

    Placements are the lgipp rows of mig-profiles.md; only the names, memory, SMs and engines differ.
    `engines` rows are (copy, decoder, encoder, jpeg, ofa).
    """
    shape = (
        # gi_id, compute slices, memory slots, starts, max instances
        (19, 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        (20, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        (15, 1, 2, (0, 2, 4, 6), 4),
        (14, 2, 2, (0, 2, 4), 3),
        (9, 3, 4, (0, 4), 2),
        (5, 4, 4, (0,), 1),
        (0, 7, 8, (0,), 1),
    )
    profiles = []
    for i, (gi_id, compute, slots, starts, max_instances) in enumerate(shape):
        copy, dec, enc, jpeg, ofa = engines[i]
        profiles.append(
            MigProfile(
                name=names[i],
                gi_id=gi_id,
                compute_slices=compute,
                memory_slots=slots,
                starts=starts,
                max_instances=max_instances,
                memory_mib=memory[i],
                multiprocessors=sms[i],
                copy_engines=copy,
                decoders=dec,
                encoders=enc,
                jpeg_engines=jpeg,
                ofa_engines=ofa,
            )
        )
    return tuple(profiles)


# Engine rows (copy, decoder, encoder, jpeg, ofa) per lgip.
_AMPERE_ENGINES = (
    (1, 0, 0, 0, 0),
    (1, 1, 0, 1, 1),
    (1, 1, 0, 0, 0),
    (2, 1, 0, 0, 0),
    (3, 2, 0, 0, 0),
    (4, 2, 0, 0, 0),
    (7, 5, 0, 1, 1),
)
_HOPPER_ENGINES = (
    (1, 1, 0, 1, 0),
    (1, 1, 0, 1, 1),
    (1, 1, 0, 1, 0),
    (2, 2, 0, 2, 0),
    (3, 3, 0, 3, 0),
    (4, 4, 0, 4, 0),
    (8, 7, 0, 7, 1),
)

H100_80GB_HBM3 = GpuModel(
    key="H100-80GB-HBM3",
    product="NVIDIA-H100-80GB-HBM3",
    nvml_name="NVIDIA H100 80GB HBM3",
    memory_mib=81559,
    family="hopper",
    architecture="Hopper",
    compute_major=9,
    compute_minor=0,
    machine="PowerEdge-XE9680",
    pci_device_id="0x233010DE",
    dra_memory="80Gi",
    mig_profiles=_ga100_geometry(
        ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        (9984, 9984, 20096, 20096, 40320, 40320, 81152),
        (16, 16, 26, 32, 60, 64, 132),
        _HOPPER_ENGINES,
    ),
)

H200 = GpuModel(
    key="H200",
    product="NVIDIA-H200",
    nvml_name="NVIDIA H200",
    memory_mib=143771,
    family="hopper",
    architecture="Hopper",
    compute_major=9,
    compute_minor=0,
    machine="PowerEdge-XE9680",
    pci_device_id="0x233510DE",
    dra_memory="141Gi",
    mig_profiles=_ga100_geometry(
        ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
        (16384, 16384, 33024, 33024, 71168, 71168, 143104),
        (16, 16, 26, 32, 60, 64, 132),
        _HOPPER_ENGINES,
    ),
)

A100_SXM4_40GB = GpuModel(
    key="A100-SXM4-40GB",
    product="NVIDIA-A100-SXM4-40GB",
    nvml_name="NVIDIA A100-SXM4-40GB",
    memory_mib=40960,
    family="ampere",
    architecture="Ampere",
    compute_major=8,
    compute_minor=0,
    machine="Google-Compute-Engine",
    pci_device_id="0x20B010DE",
    dra_memory="40Gi",
    mig_profiles=_ga100_geometry(
        ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
        (4864, 4864, 9856, 9856, 19968, 19968, 40192),
        (14, 14, 14, 28, 42, 56, 98),
        _AMPERE_ENGINES,
    ),
)

A100_80GB_PCIE = GpuModel(
    key="A100-80GB-PCIe",
    product="NVIDIA-A100-80GB-PCIe",
    nvml_name="NVIDIA A100 80GB PCIe",
    memory_mib=81920,
    family="ampere",
    architecture="Ampere",
    compute_major=8,
    compute_minor=0,
    machine="Virtual-Machine",
    pci_device_id="0x20B510DE",
    dra_memory="80Gi",
    mig_profiles=_ga100_geometry(
        # 1g.20gb memory/SMs are a documented gap (absent from the only real lgip); 2g.20gb values reused.
        ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        (9728, 9728, 19968, 19968, 40192, 40192, 80896),
        (14, 14, 14, 28, 42, 56, 98),
        _AMPERE_ENGINES,
    ),
)

L40S = GpuModel(
    key="L40S",
    product="NVIDIA-L40S",
    nvml_name="NVIDIA L40S",
    memory_mib=46068,
    family="ada-lovelace",
    architecture="Ada Lovelace",
    compute_major=8,
    compute_minor=9,
    machine="PowerEdge-R760xa",
    pci_device_id="0x26B910DE",
    dra_memory="45Gi",
)

TESLA_T4 = GpuModel(
    key="T4",
    product="Tesla-T4",
    nvml_name="Tesla T4",
    memory_mib=15360,
    family="turing",
    architecture="Turing",
    compute_major=7,
    compute_minor=5,
    machine="g4dn.metal",
    pci_device_id="0x1EB810DE",
    dra_memory="15Gi",
)

MODELS: dict[str, GpuModel] = {
    model.key: model for model in (H100_80GB_HBM3, H200, A100_SXM4_40GB, A100_80GB_PCIE, L40S, TESLA_T4)
}
