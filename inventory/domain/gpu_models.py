"""GPU model catalog and product-string parsing.

One model is named many ways: GFD labels ("NVIDIA-H100-80GB-HBM3", old "A100-SXM4-40GB", "Tesla-T4"),
with suffixes ("-SHARED" for un-renamed time-slicing/MPS, "-MIG-3g.20gb" under the single strategy),
HAMi types ("NVIDIA-NVIDIA A100-PCIE-40GB"), DRA productName ("NVIDIA A100 80GB PCIe") and nvidia-smi.
All are normalised to one key and looked up; an unknown model is tolerated as a generic, non-MIG model
whose memory comes from the caller (a label or a registration), never a crash.

Memory figures: card memory is what GFD/HAMi report where a capture exists (H100 81559 MiB); MIG profile
memory is the `nvidia-smi mig -lgip` GiB x 1024 or the GFD `.memory` label (see mig-profiles.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from inventory.domain.issues import ParseIssue, shorten, warning
from inventory.domain.mig_profiles import MigProfile, build_profiles, parse_profile_name

__all__ = [
    "CATALOG",
    "GpuModel",
    "ProductLabel",
    "infer_model_from_profiles",
    "normalize_product",
    "parse_product_label",
    "resolve_gpu_model",
    "resolve_mig_profile",
]


@dataclass(frozen=True, slots=True)
class GpuModel:
    key: str  # canonical, stable: "H100-80GB"; for unknown models the normalised product string
    display_name: str
    memory_mib: int
    mig_compute_slices: int = 0  # 0 = not MIG capable (or unknown)
    mig_memory_slices: int = 0
    mig_profiles: tuple[MigProfile, ...] = ()
    aliases: tuple[str, ...] = ()  # normalised product strings (see normalize_product)
    known: bool = True
    _by_name: dict[str, MigProfile] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({profile.name: profile for profile in self.mig_profiles})

    def __hash__(self) -> int:
        # Models key the fragmentation caches; hashing every profile on each lookup was the hot spot.
        return hash((self.key, self.memory_mib, self.known))

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return self._by_name.get(name)


def _model(
    key: str,
    display_name: str,
    memory_mib: int,
    aliases: tuple[str, ...],
    *,
    slices: tuple[int, int] = (0, 0),
    rows: tuple[tuple[str, int, int, bool], ...] = (),
) -> GpuModel:
    profiles = (
        build_profiles(card_compute_slices=slices[0], card_memory_slices=slices[1], rows=rows) if rows else ()
    )
    return GpuModel(key, display_name, memory_mib, slices[0], slices[1], profiles, aliases)


# Rows: (profile, memory slices, memory MiB, memory is nominal). The memory-slice count of the 1g
# double-memory profile (ID 15) is 2: lgip shows it with the 2g memory, and lgipp places it {0,2,4,6}:2.
CATALOG: tuple[GpuModel, ...] = (
    _model(
        "A100-40GB",
        "NVIDIA A100 40GB",
        40536,  # GFD gpu.memory on GCE A100-SXM4-40GB
        ("A100-SXM4-40GB", "A100-PCIE-40GB", "A100-40GB-PCIE"),
        slices=(7, 8),
        rows=(
            ("1g.5gb", 1, 4864, False),  # 4.75 GiB; GFD .memory 4864
            ("1g.5gb+me", 1, 4864, False),
            ("1g.10gb", 2, 9856, False),  # 9.62 GiB (9.625)
            ("2g.10gb", 2, 9856, False),
            ("3g.20gb", 4, 19968, False),  # 19.50 GiB
            ("4g.20gb", 4, 19968, False),
            ("7g.40gb", 8, 40192, False),  # 39.25 GiB
        ),
    ),
    _model(
        "A100-80GB",
        "NVIDIA A100 80GB",
        81920,  # GFD gpu.memory, Azure A100 80GB PCIe
        ("A100-SXM4-80GB", "A100-80GB-PCIE", "A100-PCIE-80GB"),
        slices=(7, 8),
        rows=(
            ("1g.10gb", 1, 9728, False),  # 9.50 GiB; GFD 9728
            ("1g.10gb+me", 1, 9728, False),
            ("1g.20gb", 2, 19968, True),  # gap: absent from the only real lgip (driver 515)
            ("2g.20gb", 2, 19968, False),  # GFD 19968
            ("3g.40gb", 4, 40192, False),  # GFD 40192
            ("4g.40gb", 4, 40192, False),
            ("7g.80gb", 8, 80896, False),  # 79.00 GiB; HAMi calls it 7g.79gb / 80896
        ),
    ),
    _model(
        "H100-80GB",
        "NVIDIA H100 80GB",
        81559,  # GFD gpu.memory on H100 80GB HBM3
        ("H100-80GB-HBM3", "H100-PCIE", "H100-SXM5-80GB", "H100-80GB-PCIE"),
        slices=(7, 8),
        rows=(
            ("1g.10gb", 1, 9984, False),  # GFD mixed .memory 9984 (= 9.75 GiB)
            ("1g.10gb+me", 1, 9984, False),
            ("1g.20gb", 2, 20096, False),  # 19.62 GiB (19.625)
            ("2g.20gb", 2, 20096, False),  # GFD 20096
            ("3g.40gb", 4, 40320, False),  # GFD 40320 (lgip prints 39.50 GiB)
            ("4g.40gb", 4, 40320, False),
            ("7g.80gb", 8, 81152, False),  # 79.25 GiB
        ),
    ),
    _model(
        "H200-141GB",
        "NVIDIA H200 141GB",
        143771,
        ("H200", "H200-NVL", "H200-141GB-HBM3E"),
        slices=(7, 8),
        rows=(
            ("1g.18gb", 1, 16384, False),  # 16.00 GiB
            ("1g.18gb+me", 1, 16384, False),
            ("1g.35gb", 2, 33024, False),  # 32.25 GiB
            ("2g.35gb", 2, 33024, False),
            ("3g.71gb", 4, 71168, False),  # 69.50 GiB
            ("4g.71gb", 4, 71168, False),
            ("7g.141gb", 8, 143104, False),  # 139.75 GiB
        ),
    ),
    _model(
        "H100-NVL-94GB",
        "NVIDIA H100 NVL",
        95830,  # HAMi devmem on AKS H100 NVL
        ("H100-NVL",),
        slices=(7, 8),
        rows=(
            ("1g.12gb", 1, 11008, False),  # 10.75 GiB
            ("1g.12gb+me", 1, 11008, False),
            ("1g.24gb", 2, 22144, False),  # 21.62 GiB
            ("2g.24gb", 2, 22144, True),  # gap: same memory slices as 1g.24gb
            ("3g.47gb", 4, 47488, False),  # 46.38 GiB
            ("4g.47gb", 4, 47488, True),
            ("7g.94gb", 8, 96256, True),
        ),
    ),
    _model(
        "A30-24GB",
        "NVIDIA A30",
        24576,  # GFD gpu.memory
        ("A30",),
        slices=(4, 4),
        rows=(  # HAMi knownMigGeometries memory values; no lgip capture
            ("1g.6gb", 1, 6144, True),
            ("1g.6gb+me", 1, 6144, True),
            ("2g.12gb", 2, 12288, True),
            ("2g.12gb+me", 2, 12288, True),
            ("4g.24gb", 4, 24576, True),
        ),
    ),
    _model("T4-16GB", "NVIDIA Tesla T4", 15360, ("T4",)),  # HAMi devmem
    _model("V100-PCIE-32GB", "NVIDIA Tesla V100 PCIe 32GB", 32768, ()),
)

_BY_ALIAS: dict[str, GpuModel] = {alias: model for model in CATALOG for alias in (model.key, *model.aliases)}
_MIG_SUFFIX_RE = re.compile(r"-MIG-(?P<profile>\d+g\.\d+gb(?:[+-][a-z.+-]+)?)$", re.IGNORECASE)


# Remembered: every device of a ResourceSlice names its product, and the regular expressions below
# were ~2 % of a cold sync's writer for the few spellings a fleet has.
@lru_cache(maxsize=4096)
def normalize_product(product: str) -> str:
    """One spelling for every source: upper case, dashes, no vendor prefixes.

    "NVIDIA-NVIDIA A100-PCIE-40GB" (HAMi), "NVIDIA A100 80GB PCIe" (DRA), "Tesla-T4" (GFD) ->
    "A100-PCIE-40GB", "A100-80GB-PCIE", "T4".
    """
    text = re.sub(r"[\s_]+", "-", product.strip().upper())
    text = re.sub(r"-{2,}", "-", text).strip("-")
    changed = True
    while changed:  # HAMi doubles the vendor prefix ("NVIDIA-NVIDIA ..."), so strip repeatedly
        changed = False
        for prefix in ("NVIDIA-", "TESLA-"):
            if text.startswith(prefix):
                text, changed = text[len(prefix) :], True
    return text


def resolve_gpu_model(*, product: str, memory_mib: int | None = None) -> GpuModel:
    """The catalog model for a product string, or a generic unknown model with the given memory."""
    key = normalize_product(product)
    model = _BY_ALIAS.get(key)
    if model is not None:
        return model
    return GpuModel(
        key=key or "UNKNOWN", display_name=product.strip(), memory_mib=memory_mib or 0, known=False
    )


def resolve_mig_profile(*, model: GpuModel, name: str) -> tuple[MigProfile | None, ParseIssue | None]:
    """A model's profile by name, tolerating driver renames ("3g.39gb" for 3g.40gb, HAMi "7g.79gb").

    mig-parted#31: drivers 535/545 named a 3g.40gb partition "3g.39gb", so the "<N>gb" part is not
    stable. Fallback: same compute slices and variant, nearest nominal memory, with a warning.
    """
    profile = model.mig_profile(name)
    if profile is not None:
        return profile, None
    parsed = parse_profile_name(name)
    if parsed is None or not model.mig_profiles:
        return None, warning(
            "mig.profile_unknown", f"unknown MIG profile {shorten(name)} for {model.key}", source=name
        )
    candidates = []
    for candidate in model.mig_profiles:
        cand = parse_profile_name(candidate.name)
        if cand and cand.compute_slices == parsed.compute_slices and cand.variant == parsed.variant:
            candidates.append((abs(cand.nominal_gb - parsed.nominal_gb), candidate))
    candidates.sort(key=lambda pair: pair[0])
    # Within 2 GB is a rename; further away is a different card's profile (1g.10gb vs 1g.20gb).
    if candidates and candidates[0][0] <= 2 and (len(candidates) == 1 or candidates[1][0] > candidates[0][0]):
        chosen = candidates[0][1]
        return chosen, warning(
            "mig.profile_alias", f"MIG profile {name!r} read as {chosen.name!r} on {model.key}", source=name
        )
    return None, warning(
        "mig.profile_unknown", f"unknown MIG profile {shorten(name)} for {model.key}", source=name
    )


def infer_model_from_profiles(*, profile_names: set[str]) -> GpuModel | None:
    """The one catalog model offering all these MIG profiles, or None if none or several do.

    A node without GFD labels still advertises nvidia.com/mig-1g.5gb: only an A100 40GB has 1g.5gb.
    1g.10gb + 3g.40gb fits both A100 80GB and H100 80GB, so that stays unknown.
    """
    if not profile_names:
        return None
    matches = [model for model in CATALOG if profile_names <= set(model._by_name)]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True, slots=True)
class ProductLabel:
    """A parsed `nvidia.com/gpu.product` value."""

    raw: str
    base_product: str  # without -MIG-<profile> and -SHARED: "A100-SXM4-40GB"
    mig_profile_name: str | None  # "1g.5gb" under the single strategy
    shared: bool  # "-SHARED": time-slicing or MPS with renameByDefault=false
    model: GpuModel


def parse_product_label(*, value: str, memory_mib: int | None = None) -> ProductLabel:
    """Split GFD's product label: "A100-SXM4-40GB-MIG-1g.5gb-SHARED" -> base, profile, shared."""
    text = value.strip()
    shared = text.upper().endswith("-SHARED")
    if shared:
        text = text[: -len("-SHARED")]
    profile_name = None
    match = _MIG_SUFFIX_RE.search(text)
    if match is not None:
        profile_name = match["profile"].lower()
        text = text[: match.start()]
    return ProductLabel(
        raw=value,
        base_product=text,
        mig_profile_name=profile_name,
        shared=shared,
        model=resolve_gpu_model(product=text, memory_mib=memory_mib),
    )
