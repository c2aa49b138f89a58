"""A node's GPUs from GPU Feature Discovery labels, capacity/allocatable and HAMi annotations.

What the labels mean depends on the MIG strategy (realworld/node-gfd-*.labels.json):
  none/mixed: gpu.count = physical cards, gpu.memory = one card; mixed adds mig-<profile>.count/.memory.
  single:     gpu.product = "<card>-MIG-<profile>", gpu.count = MIG devices, gpu.memory = one MIG device.
Time-slicing/MPS: gpu.replicas = replicas per card; product gets "-SHARED" unless resources are renamed
(then the node advertises nvidia.com/gpu.shared). HAMi advertises nvidia.com/gpu = cards x split count,
so on a HAMi node the register annotation, not the count, says what the cards are.

Units are built from what the node advertises (allocatable, else capacity) because that is what pods can
get; labels give the model, replicas and MIG profile. Without either map, labels alone are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpuplatform.quantity import QuantityError, parse_quantity
from inventory.domain.cards import (
    CardBasis,
    CardCount,
    count_mixed_cards,
    count_single_strategy_cards,
    mig_device_counts,
)
from inventory.domain.gpu_models import (
    GpuModel,
    ProductLabel,
    infer_model_from_profiles,
    parse_product_label,
    resolve_gpu_model,
    resolve_mig_profile,
)
from inventory.domain.hami_node import (
    HAMI_NVIDIA_REGISTER_KEY,
    HamiNodeRegistration,
    parse_hami_node_register,
)
from inventory.domain.issues import ParseIssue, shorten, warning
from inventory.domain.mig_profiles import parse_profile_name
from inventory.domain.node_units import (
    GPU_RESOURCE,
    MIG_LABEL_RE,
    MIG_RESOURCE_RE,
    SHARED_GPU_RESOURCE,
    MigDeviceLabels,
    MigStrategy,
    NodeUnitBuilder,
    SharingStrategy,
)
from inventory.domain.raw_fields import as_int, as_map, as_str, dig
from inventory.domain.shareable_units import ShareableUnitGroup

__all__ = [
    "CardBasis",
    "MigDeviceLabels",
    "MigStrategy",
    "NodeGpuInventory",
    "SharingStrategy",
    "parse_node_gpu_inventory",
    "parse_node_object",
]


@dataclass(frozen=True, slots=True)
class NodeGpuInventory:
    node_name: str
    model: GpuModel
    product_label: str | None
    physical_gpu_count: int | None  # cards; None when nothing says (labels cut short, unknown profile)
    card_basis: CardBasis  # reported by the cluster, or inferred from device counts (cards.py)
    card_source: str  # what the count was read or worked out from, for the node page
    gpu_memory_mib: int | None  # one whole card
    mig_capable: bool | None
    mig_strategy: MigStrategy
    mig_config: str | None  # nvidia.com/mig.config: the mig-parted config name
    mig_config_state: str | None  # pending | rebooting | success | failed
    mig_devices: tuple[MigDeviceLabels, ...]
    sharing_strategy: SharingStrategy
    replicas: int  # per card; 1 when not shared
    renamed: bool  # resources advertised as <name>.shared
    capacity: Mapping[str, Decimal]  # GPU-related resources only
    allocatable: Mapping[str, Decimal]
    units: tuple[ShareableUnitGroup, ...]
    hami: HamiNodeRegistration | None
    issues: tuple[ParseIssue, ...]

    @property
    def has_gpus(self) -> bool:
        return bool(self.units)

    @property
    def total_ge(self) -> Fraction:
        return sum((group.ge_total for group in self.units), Fraction(0))

    @property
    def mig_reconfiguring(self) -> bool:
        """mig-manager is applying a new geometry: units may be about to change (pending/rebooting)."""
        return self.mig_config_state in ("pending", "rebooting")


def parse_node_object(*, node: Mapping[str, Any]) -> NodeGpuInventory:
    """Same as `parse_node_gpu_inventory`, from a decoded Node object."""
    return parse_node_gpu_inventory(
        node_name=as_str(dig(node, "metadata", "name")),
        labels=as_map(dig(node, "metadata", "labels")),
        annotations=as_map(dig(node, "metadata", "annotations")),
        capacity=as_map(dig(node, "status", "capacity")),
        allocatable=as_map(dig(node, "status", "allocatable")),
    )


class _Reader:
    """Collects issues while reading one node, so helpers stay small."""

    def __init__(self, labels: Mapping[str, Any]) -> None:
        self.labels = labels
        self.issues: list[ParseIssue] = []

    def text(self, key: str) -> str | None:
        value = self.labels.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    def number(self, key: str) -> int | None:
        value = self.labels.get(key)
        if value is None or value == "":
            return None
        parsed = as_int(value)
        if parsed is None or parsed < 0:
            self.issues.append(
                warning("gfd.bad_number", f"not a count: {shorten(value)}", source=f"label {key}")
            )
            return None
        return parsed

    def resources(self, raw: Mapping[str, Any], *, what: str) -> dict[str, Decimal]:
        parsed: dict[str, Decimal] = {}
        for name, value in raw.items():
            if not str(name).startswith("nvidia.com/"):
                continue
            try:
                parsed[name] = parse_quantity(value)
            except QuantityError as exc:
                self.issues.append(warning("node.bad_quantity", str(exc), source=f"{what} {name}"))
        return parsed


def parse_node_gpu_inventory(
    *,
    node_name: str = "",
    labels: Mapping[str, Any],
    capacity: Mapping[str, Any] | None = None,
    allocatable: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> NodeGpuInventory:
    """Read one node. Never raises on cluster data; problems are in `.issues`."""
    reader = _Reader(labels)
    capacity_map = reader.resources(capacity or {}, what="capacity")
    allocatable_map = reader.resources(allocatable or {}, what="allocatable")
    register_value = as_str((annotations or {}).get(HAMI_NVIDIA_REGISTER_KEY)) or None
    hami = parse_hami_node_register(value=register_value) if register_value else None
    if hami is not None:
        reader.issues.extend(hami.issues)

    product_value = reader.text("nvidia.com/gpu.product")
    label_memory = reader.number("nvidia.com/gpu.memory")
    product = parse_product_label(value=product_value, memory_mib=label_memory) if product_value else None
    mig_strategy = _mig_strategy(reader, single_product=bool(product and product.mig_profile_name))
    model = _model(product, hami, label_memory)
    advertised = allocatable_map or capacity_map
    if not model.known:
        model = _model_from_mig_resources(reader, model, advertised)
    card_memory = model.memory_mib or None
    if mig_strategy is not MigStrategy.SINGLE and label_memory:
        card_memory = label_memory  # the label is the card here; more precise than the catalog

    replicas = max(reader.number("nvidia.com/gpu.replicas") or 1, 1)
    sharing = _sharing_strategy(reader, replicas=replicas, hami=hami)
    mig_devices = _mig_devices(
        reader, mig_strategy=mig_strategy, product_profile=product.mig_profile_name if product else None
    )
    advertised = allocatable_map or capacity_map
    card_count = _card_count(
        reader,
        mig_strategy=mig_strategy,
        model=model,
        mig_devices=mig_devices,
        hami=hami,
        advertised=advertised,
        replicas=replicas,
    )
    reader.issues.extend(card_count.issues)
    physical = card_count.cards
    builder = NodeUnitBuilder(
        issues=reader.issues,
        model=model,
        replicas=replicas,
        sharing=sharing,
        physical=physical,
        gpu_count_label=reader.number("nvidia.com/gpu.count"),
    )
    units = builder.build(
        advertised=advertised, hami=hami, mig_strategy=mig_strategy, mig_devices=mig_devices
    )
    mig_capable_label = reader.text("nvidia.com/mig.capable")
    return NodeGpuInventory(
        node_name=node_name,
        model=model,
        product_label=product_value,
        physical_gpu_count=physical,
        card_basis=card_count.basis,
        card_source=card_count.source,
        gpu_memory_mib=card_memory,
        mig_capable=(mig_capable_label == "true")
        if mig_capable_label
        else (model.mig_capable if model.known else None),
        mig_strategy=mig_strategy,
        mig_config=reader.text("nvidia.com/mig.config"),
        mig_config_state=reader.text("nvidia.com/mig.config.state"),
        mig_devices=mig_devices,
        sharing_strategy=sharing,
        replicas=replicas,
        renamed=SHARED_GPU_RESOURCE in advertised or any(name.endswith(".shared") for name in advertised),
        capacity=capacity_map,
        allocatable=allocatable_map,
        units=units,
        hami=hami,
        issues=tuple(reader.issues),
    )


def _mig_strategy(reader: _Reader, *, single_product: bool) -> MigStrategy:
    value = reader.text("nvidia.com/mig.strategy")
    if value in {strategy.value for strategy in MigStrategy}:
        return MigStrategy(value)
    if value is not None:
        reader.issues.append(
            warning("gfd.unknown_mig_strategy", shorten(value), source="label nvidia.com/mig.strategy")
        )
    if any(MIG_LABEL_RE.match(key) for key in reader.labels):
        return MigStrategy.MIXED
    return MigStrategy.SINGLE if single_product else MigStrategy.NONE


def _model(
    product: ProductLabel | None, hami: HamiNodeRegistration | None, label_memory: int | None
) -> GpuModel:
    if product is not None:
        return product.model
    if hami is not None and hami.devices:
        device = hami.devices[0]
        return resolve_gpu_model(product=device.type, memory_mib=device.memory_mib)
    return resolve_gpu_model(product="", memory_mib=label_memory)


def _model_from_mig_resources(
    reader: _Reader, model: GpuModel, advertised: Mapping[str, Decimal]
) -> GpuModel:
    names = {m["profile"] for name in advertised if (m := MIG_RESOURCE_RE.match(name))}
    names |= {m["profile"] for key in reader.labels if (m := MIG_LABEL_RE.match(key))}
    inferred = infer_model_from_profiles(profile_names=names)
    if inferred is None:
        return model
    reader.issues.append(
        warning("node.model_inferred", f"no product label; {sorted(names)} only exist on {inferred.key}")
    )
    return inferred


def _sharing_strategy(
    reader: _Reader, *, replicas: int, hami: HamiNodeRegistration | None
) -> SharingStrategy:
    if hami is not None and hami.devices:
        return SharingStrategy.HAMI
    value = reader.text("nvidia.com/gpu.sharing-strategy")
    if value in ("time-slicing", "mps"):
        return SharingStrategy(value)
    if value not in (None, "none"):
        reader.issues.append(
            warning(
                "gfd.unknown_sharing_strategy", shorten(value), source="label nvidia.com/gpu.sharing-strategy"
            )
        )
    # Older GFD has gpu.replicas but no sharing-strategy label; replicas only come from time-slicing there.
    return SharingStrategy.TIME_SLICING if replicas > 1 else SharingStrategy.NONE


def _mig_devices(
    reader: _Reader, *, mig_strategy: MigStrategy, product_profile: str | None
) -> tuple[MigDeviceLabels, ...]:
    if mig_strategy is MigStrategy.SINGLE and product_profile:
        return (
            MigDeviceLabels(
                profile=product_profile,
                count=reader.number("nvidia.com/gpu.count") or 0,
                memory_mib=reader.number("nvidia.com/gpu.memory"),
                replicas=max(reader.number("nvidia.com/gpu.replicas") or 1, 1),
                product=reader.text("nvidia.com/gpu.product"),
            ),
        )
    profiles = sorted({m["profile"] for key in reader.labels if (m := MIG_LABEL_RE.match(key))})
    return tuple(
        MigDeviceLabels(
            profile=profile,
            count=reader.number(f"nvidia.com/mig-{profile}.count") or 0,
            memory_mib=reader.number(f"nvidia.com/mig-{profile}.memory"),
            replicas=max(reader.number(f"nvidia.com/mig-{profile}.replicas") or 1, 1),
            product=reader.text(f"nvidia.com/mig-{profile}.product"),
        )
        for profile in profiles
    )


def _card_count(
    reader: _Reader,
    *,
    mig_strategy: MigStrategy,
    model: GpuModel,
    mig_devices: tuple[MigDeviceLabels, ...],
    hami: HamiNodeRegistration | None,
    advertised: Mapping[str, Decimal],
    replicas: int,
) -> CardCount:
    if hami is not None and hami.devices:
        # HAMi advertises nvidia.com/gpu = cards x split count; its register lists the cards.
        return CardCount(len(hami.devices), CardBasis.REPORTED, f"annotation {HAMI_NVIDIA_REGISTER_KEY}")
    count = reader.number("nvidia.com/gpu.count")
    gpu_resources = [name for name in (GPU_RESOURCE, SHARED_GPU_RESOURCE) if advertised.get(name)]
    gpu_advertised = int(sum((advertised[name] for name in gpu_resources), Decimal(0)))
    if mig_strategy is MigStrategy.SINGLE and mig_devices:
        device = mig_devices[0]
        profile, _ = resolve_mig_profile(model=model, name=device.profile)
        return count_single_strategy_cards(
            profile=profile,
            profile_name=device.profile,
            devices_label=count,
            advertised=gpu_advertised if gpu_resources else None,
            replicas=replicas,
            mig_config=reader.text("nvidia.com/mig.config"),
        )
    replicas_by_profile = {d.profile: d.replicas for d in mig_devices}
    instances: dict[str, int] = {}
    for name, amount in advertised.items():
        if (match := MIG_RESOURCE_RE.match(name)) and int(amount) > 0:
            per = replicas_by_profile.get(match["profile"], replicas if match["shared"] else 1)
            instances[match["profile"]] = instances.get(match["profile"], 0) + int(amount) // max(per, 1)
    if not advertised:
        instances = {d.profile: d.count for d in mig_devices}
    whole = gpu_advertised // max(replicas, 1)
    if count is not None and mig_strategy is MigStrategy.NONE:
        return CardCount(count, CardBasis.REPORTED, "label nvidia.com/gpu.count")
    known = mig_device_counts(model=model, instances_by_profile=instances)
    unplaced = 0
    for name, n in instances.items():
        parsed = parse_profile_name(name)
        if parsed is not None and resolve_mig_profile(model=model, name=name)[0] is None:
            unplaced += parsed.compute_slices * n
    return count_mixed_cards(
        model=model,
        count_label=count,
        whole_advertised=whole,
        mig=known,
        unplaced_compute_slices=unplaced,
    )
