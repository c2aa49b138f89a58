"""MIG profiles and their placement rules.

A MIG card has C compute slices and M memory slices (7/8 on A100, H100, H200; 4/4 on A30). A GPU
instance profile takes some of each and may only start at fixed positions on the memory axis: this is
what `nvidia-smi mig -lgipp` prints ("Profile ID 9 Placements: {0,4}:4"). Two instances may not
overlap on the memory axis and their compute slices may not add up to more than C.

Sources: realworld/mig-profiles.md (MIG User Guide tables 6-8, lgip/lgipp captures), A30 table from
docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from inventory.domain.gpu_equivalent import mig_ge

__all__ = [
    "MigPlacement",
    "MigProfile",
    "ProfileName",
    "build_profiles",
    "parse_profile_name",
]

# "3g.40gb", "1g.10gb+me", "1g.24gb-me", "2g.48gb+me.all", "1g.24gb+gfx"
_PROFILE_NAME_RE = re.compile(r"^(?P<compute>\d+)g\.(?P<gb>\d+)gb(?P<variant>[+-][a-z.+-]+)?$")


@dataclass(frozen=True, slots=True)
class ProfileName:
    compute_slices: int
    nominal_gb: int
    variant: str  # "" for the plain profile, "+me", "-me", "+gfx", "+me.all"


def parse_profile_name(name: str) -> ProfileName | None:
    """Split "1g.10gb+me" into its parts; None when it is not a MIG profile name at all."""
    match = _PROFILE_NAME_RE.match(name.strip())
    if match is None:
        return None
    return ProfileName(int(match["compute"]), int(match["gb"]), match["variant"] or "")


@dataclass(frozen=True, slots=True, order=True)
class MigPlacement:
    """Where an instance sits on the memory-slice axis, as nvidia-smi prints it ("Start:Size")."""

    start: int
    size: int

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.size)

    @property
    def mask(self) -> int:
        return ((1 << self.size) - 1) << self.start


@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str
    compute_slices: int
    memory_slices: int
    memory_mib: int
    max_instances: int
    placement_starts: tuple[int, ...]
    gi_profile_id: int | None  # IDs differ across families (Blackwell); never match on them alone
    media_extensions: bool
    # True where no capture gave the usable memory and the name's "<N>gb" was used (mig-profiles.md gaps)
    memory_is_nominal: bool
    card_compute_slices: int
    card_memory_slices: int

    @property
    def placements(self) -> tuple[MigPlacement, ...]:
        return tuple(MigPlacement(start, self.memory_slices) for start in self.placement_starts)

    @property
    def ge(self) -> Fraction:
        return mig_ge(
            compute_slices=self.compute_slices,
            memory_slices=self.memory_slices,
            card_compute_slices=self.card_compute_slices,
            card_memory_slices=self.card_memory_slices,
        )


@dataclass(frozen=True, slots=True)
class _Shape:
    starts: tuple[int, ...]
    max_instances: int
    gi_profile_id: int | None


# (compute slices, memory slices, has media extensions) -> where it may start; from `nvidia-smi mig -lgipp`
# (identical on A100-40GB, H100 80GB, H100 NVL; assumed for H200/A100-80GB, see mig-profiles.md).
_SHAPES_7x8: dict[tuple[int, int, bool], _Shape] = {
    (1, 1, False): _Shape((0, 1, 2, 3, 4, 5, 6), 7, 19),
    (1, 1, True): _Shape((0, 1, 2, 3, 4, 5, 6), 1, 20),  # only one +me instance per card
    (1, 2, False): _Shape((0, 2, 4, 6), 4, 15),
    (2, 2, False): _Shape((0, 2, 4), 3, 14),
    (3, 4, False): _Shape((0, 4), 2, 9),
    (4, 4, False): _Shape((0,), 1, 5),
    (7, 8, False): _Shape((0,), 1, 0),
}
# A30: four slices of each; the UG table gives the instance counts, starts follow the power-of-two
# alignment the other families use (no lgipp capture for A30 in realworld/).
_SHAPES_4x4: dict[tuple[int, int, bool], _Shape] = {
    (1, 1, False): _Shape((0, 1, 2, 3), 4, None),
    (1, 1, True): _Shape((0, 1, 2, 3), 1, None),
    (2, 2, False): _Shape((0, 2), 2, None),
    (2, 2, True): _Shape((0, 2), 1, None),
    (4, 4, False): _Shape((0,), 1, None),
}
_SHAPES = {(7, 8): _SHAPES_7x8, (4, 4): _SHAPES_4x4}


def build_profiles(
    *,
    card_compute_slices: int,
    card_memory_slices: int,
    rows: tuple[tuple[str, int, int, bool], ...],
) -> tuple[MigProfile, ...]:
    """Profiles from (name, memory slices, memory MiB, memory is nominal) rows of a catalog entry."""
    shapes = _SHAPES[(card_compute_slices, card_memory_slices)]
    profiles = []
    for name, memory_slices, memory_mib, nominal in rows:
        parsed = parse_profile_name(name)
        if parsed is None:  # catalog data, not cluster input: a typo here is a programming error
            raise ValueError(f"bad MIG profile name in catalog: {name!r}")
        media = parsed.variant == "+me"
        shape = shapes[(parsed.compute_slices, memory_slices, media)]
        profiles.append(
            MigProfile(
                name=name,
                compute_slices=parsed.compute_slices,
                memory_slices=memory_slices,
                memory_mib=memory_mib,
                max_instances=shape.max_instances,
                placement_starts=shape.starts,
                gi_profile_id=shape.gi_profile_id,
                media_extensions=media,
                memory_is_nominal=nominal,
                card_compute_slices=card_compute_slices,
                card_memory_slices=card_memory_slices,
            )
        )
    return tuple(profiles)
