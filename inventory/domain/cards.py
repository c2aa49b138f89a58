"""How many physical cards a node has (DESIGN §3, "Cards are counted, not guessed").

Physical capacity is cards, whatever a node advertises on top of them. Where the cluster says how many
there are the count is *reported*:
  GFD `nvidia.com/gpu.count` under the MIG strategies none and mixed (it counts cards there);
  the HAMi register annotation (one entry per card);
  a DRA ResourceSlice's devices (whole GPUs by `uuid`, MIG devices by their `parentUUID`).
Elsewhere it is *inferred*, and said so:
  single strategy: `gpu.count` counts MIG devices of one profile, so cards = devices / the profile's
  instances per card (the `all-<profile>` mig-parted layout creates exactly the profile table's maximum);
  with time-slicing on top the advertised count is devices x replicas, so cards = advertised /
  (instances x replicas);
  no labels at all: whole GPUs advertised, or the fewest cards the advertised MIG instances fit on.
Numbers that do not divide, or that contradict each other, still give one count per card (never a
card twice), and a parse issue with a stable code says what was met.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from inventory.domain.gpu_models import GpuModel, resolve_mig_profile
from inventory.domain.issues import ParseIssue, warning
from inventory.domain.mig_profiles import MigProfile

__all__ = [
    "COUNTS_DISAGREE",
    "PROFILE_UNKNOWN",
    "UNEVEN",
    "WHOLE_AND_MIG_OVERLAP",
    "CardBasis",
    "CardCount",
    "MigDeviceCount",
    "cards_for_mig_instances",
    "count_dra_cards",
    "count_mixed_cards",
    "count_single_strategy_cards",
    "mig_device_counts",
]

# Stable parse-issue codes (counted per cluster in ParseIssueCount, listed on the node page).
UNEVEN = "cards.uneven"  # devices do not divide into whole cards of the profile
COUNTS_DISAGREE = "cards.counts_disagree"  # the label and what the node advertises give other counts
WHOLE_AND_MIG_OVERLAP = "cards.whole_and_mig_overlap"  # whole GPUs and MIG instances over the same cards
PROFILE_UNKNOWN = "gfd.physical_count_unknown"  # the profile is not in the table: nothing to divide by


class CardBasis(StrEnum):
    REPORTED = "reported"  # the cluster said how many cards there are
    INFERRED = "inferred"  # derived from device counts and the MIG profile table
    UNKNOWN = "unknown"  # nothing to count from (labels cut short, unknown profile)


@dataclass(frozen=True, slots=True)
class CardCount:
    cards: int | None
    basis: CardBasis
    source: str  # where the number came from, for the node page
    issues: tuple[ParseIssue, ...] = ()


@dataclass(frozen=True, slots=True)
class MigDeviceCount:
    """MIG instances of one profile on a node (all its cards together), time-slicing replicas removed."""

    profile: MigProfile
    instances: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def count_single_strategy_cards(
    *,
    profile: MigProfile | None,
    profile_name: str,
    devices_label: int | None,
    advertised: int | None,
    replicas: int,
    mig_config: str | None,
) -> CardCount:
    """Cards under the single strategy, where `nvidia.com/gpu` (or `.shared`) is one MIG profile.

    `devices_label` is GFD's gpu.count (MIG devices, not replicas); `advertised` the node's allocatable
    count of the resource (devices x replicas). The advertised count wins when the two disagree: the
    device plugin serves what is there now, while GFD's labels lag a mig-parted relabel."""
    if profile is None:
        return CardCount(
            None,
            CardBasis.UNKNOWN,
            "",
            (
                warning(
                    PROFILE_UNKNOWN,
                    f"MIG profile {profile_name} not in the profile table; card count not derivable",
                    source="label nvidia.com/gpu.product",
                ),
            ),
        )
    replicas = max(replicas, 1)
    per_card = profile.max_instances
    layout = "mig.config layout" if mig_config == f"all-{profile.name}" else "MIG profile table"
    issues: list[ParseIssue] = []
    from_advertised: int | None = None
    if advertised is not None:
        served, rest = divmod(advertised, replicas)
        if rest:
            issues.append(
                warning(
                    UNEVEN,
                    f"{advertised} advertised is not a whole number of MIG devices x {replicas} replicas",
                    source="allocatable",
                )
            )
            served += 1
        from_advertised = served
    devices = from_advertised if from_advertised is not None else devices_label
    if devices_label is not None and from_advertised is not None and devices_label != from_advertised:
        issues.append(
            warning(
                COUNTS_DISAGREE,
                f"gpu.count says {devices_label} MIG devices, the node advertises {from_advertised}",
                source="label nvidia.com/gpu.count",
            )
        )
    if devices is None:
        return CardCount(None, CardBasis.UNKNOWN, "", tuple(issues))
    cards, rest = divmod(devices, per_card)
    if rest:
        # Fewer devices than a full layout: a card is only partly carved (or a GPU is missing its
        # instances). The partial card is still one card, counted once.
        issues.append(
            warning(
                UNEVEN,
                f"{devices} x {profile.name} is not a multiple of {per_card} per card",
                source="label nvidia.com/gpu.count",
            )
        )
        cards += 1
    source = f"{devices} x {profile.name} / {per_card} per card ({layout})"
    if replicas > 1:
        source += f", {replicas} replicas each"
    return CardCount(cards, CardBasis.INFERRED, source, tuple(issues))


def cards_for_mig_instances(*, model: GpuModel, devices: Iterable[MigDeviceCount]) -> int:
    """The fewest cards these instances fit on: no card gives more compute or memory slices than it
    has (4g.40gb + 3g.40gb use 7/7 and 8/8 of one H100, though their GE add up to 15/14)."""
    compute = memory = 0
    at_least = 0
    for device in devices:
        compute += device.profile.compute_slices * device.instances
        memory += device.profile.memory_slices * device.instances
        at_least = max(at_least, _ceil_div(device.instances, device.profile.max_instances))
    if not model.mig_compute_slices or not model.mig_memory_slices:
        return at_least
    return max(
        at_least, _ceil_div(compute, model.mig_compute_slices), _ceil_div(memory, model.mig_memory_slices)
    )


def count_mixed_cards(
    *,
    model: GpuModel,
    count_label: int | None,
    whole_advertised: int,
    mig: Iterable[MigDeviceCount],
    unplaced_compute_slices: int = 0,
) -> CardCount:
    """Cards under the mixed strategy (or none): gpu.count is the card count when present.

    A card is whole or carved, never both, so the whole GPUs plus the cards the MIG instances need
    must fit in the cards. When they do not, the device plugin advertises the same cards twice
    (seen in the field: `nvidia.com/gpu: 2` beside MIG resources on a 2-card node); each card is
    still counted once, and the node is flagged.

    `unplaced_compute_slices` are those of instances whose profile the model's table lacks (an unknown
    model): read from the name ("3g" = 3) on the common 7-slice card, a lower bound. They share the
    cards' compute slices with the known instances, so both are added before dividing."""
    devices = [d for d in mig if d.instances > 0]
    carved = cards_for_mig_instances(model=model, devices=devices)
    if unplaced_compute_slices:
        placed = sum(d.profile.compute_slices * d.instances for d in devices)
        carved = max(carved, _ceil_div(placed + unplaced_compute_slices, model.mig_compute_slices or 7))
    issues: list[ParseIssue] = []
    if count_label is not None:
        if whole_advertised and carved and whole_advertised + carved > count_label:
            issues.append(
                warning(
                    WHOLE_AND_MIG_OVERLAP,
                    f"{whole_advertised} whole GPUs and MIG instances needing {carved} cards advertised "
                    f"over {count_label} cards",
                    source="allocatable nvidia.com/gpu",
                )
            )
        elif whole_advertised + carved > count_label:
            issues.append(
                warning(
                    COUNTS_DISAGREE,
                    f"advertised units need {whole_advertised + carved} cards, gpu.count says {count_label}",
                    source="label nvidia.com/gpu.count",
                )
            )
        return CardCount(count_label, CardBasis.REPORTED, "label nvidia.com/gpu.count", tuple(issues))
    if not whole_advertised and not carved:
        return CardCount(None, CardBasis.UNKNOWN, "")
    parts = []
    if whole_advertised:
        parts.append(f"{whole_advertised} whole GPUs advertised")
    if carved:
        parts.append(f"MIG instances fit on {carved} cards")
    return CardCount(whole_advertised + carved, CardBasis.INFERRED, ", ".join(parts))


def count_dra_cards(*, devices: Iterable[Mapping[str, object]]) -> CardCount:
    """Cards behind a node's DRA devices (attribute maps): a whole GPU is its `uuid`, a MIG device
    belongs to its `parentUUID`; a card published both ways (whole and carved) is one card."""
    cards: set[str] = set()
    unnamed = 0
    for attributes in devices:
        parent = attributes.get("parentUUID")
        own = attributes.get("uuid")
        is_mig = str(attributes.get("type") or "") == "mig" or bool(parent)
        key = parent if is_mig else own
        if isinstance(key, str) and key:
            cards.add(key)
        elif not is_mig:
            unnamed += 1  # a whole device without a uuid is still a card of its own
    if not cards and not unnamed:
        return CardCount(None, CardBasis.UNKNOWN, "")
    return CardCount(len(cards) + unnamed, CardBasis.REPORTED, "ResourceSlice devices")


def mig_device_counts(
    *, model: GpuModel, instances_by_profile: Mapping[str, int]
) -> tuple[MigDeviceCount, ...]:
    """Profile names to MigDeviceCount on this model; profiles the model lacks are left out (their GE
    is estimated and flagged elsewhere, and they cannot say how many slices they take)."""
    found = []
    for name, instances in sorted(instances_by_profile.items()):
        profile, _ = resolve_mig_profile(model=model, name=name)
        if profile is not None and instances > 0:
            found.append(MigDeviceCount(profile, instances))
    return tuple(found)
