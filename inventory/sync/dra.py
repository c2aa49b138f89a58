"""DRA objects: DeviceClasses, ResourceSlices (devices as shareable units) and ResourceClaims."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.utils import timezone

from inventory.domain.device_taints import TaintRule, blocking_reason
from inventory.domain.dra_capacity import (
    consumed_issues,
    effective_consumption,
    share_fraction,
    shared_capacity_from_json,
    shared_capacity_json,
)
from inventory.domain.dra_claims import binding_words, parse_resource_claim, requested_capacity
from inventory.domain.dra_devices import (
    DraDevice,
    counter_names,
    parse_device_class,
    parse_resource_slice,
    undeclared_counter_issues,
)
from inventory.domain.dra_request_policy import CapacityOffer, unmet_capacity_issues
from inventory.domain.gpu_equivalent import STORED_GE_PLACES, ge_to_decimal
from inventory.domain.issues import ParseIssue, warning
from inventory.domain.mig_management import slice_has_dynamic_mig
from inventory.domain.raw_fields import dig
from inventory.models import DeviceClass, HolderKind, Node, ResourceClaim, ResourceSlice, ShareableUnit
from inventory.sync.bulk import RandomUuids, insert_rows, insert_values
from inventory.sync.context import SyncContext, UnitRef, content_hash, k8s_time, legacy_match
from inventory.sync.dra_cards import mark_card_health, recount_dra_cards
from inventory.sync.ledger import Holder, WantedRow, close_holders, open_holder_uids, reconcile_holders
from inventory.sync.mig_management import mark_driver_managed_mig
from inventory.sync.taint_rules import rule_taints, stored_rules

CLAIM_FIELDS = [
    "tenant_id",
    "namespace",
    "name",
    "state",
    "requests",
    "results",
    "reserved_for",
    "node_name",
    "deleting",
]


def _name(obj: dict[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def apply_device_classes(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    changes = 0
    for obj in objects:
        parsed = parse_device_class(obj=obj)
        ctx.note("deviceclasses", parsed.issues, obj=_name(obj))
        if not parsed.name:
            continue
        values = {
            "driver": parsed.driver or "",
            "selectors": list(parsed.selectors),
            "extended_resource_name": parsed.extended_resource_name or "",
        }
        current = DeviceClass.objects.filter(cluster=ctx.cluster, name=parsed.name).values(*values).first()
        if current != values:
            DeviceClass.objects.update_or_create(cluster=ctx.cluster, name=parsed.name, defaults=values)
            changes += 1
    return changes


def delete_device_classes(ctx: SyncContext, names: set[str]) -> int:
    return DeviceClass.objects.filter(cluster=ctx.cluster, name__in=names).delete()[0]


def apply_slices(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    """Store changed slices with their devices, then recount the completeness of touched pools.

    A changed slice is replaced (its devices go with it and are rebuilt), the whole page at once:
    one delete, one slice insert and one device insert per page instead of three queries a slice."""
    changes, pools = 0, set()
    batch = list(objects)
    stored = {
        s.name: s
        for s in ResourceSlice.objects.filter(cluster=ctx.cluster, name__in=[_name(o) for o in batch])
    }
    replaced: list[int] = []
    replaced_nodes: set[str] = set()
    rehashed: list[ResourceSlice] = []
    rows: list[ResourceSlice] = []
    devices: list[tuple[DraDevice, ...]] = []
    for obj in batch:
        name = _name(obj)
        digest = content_hash(obj.get("spec"))
        existing = stored.get(name)
        if existing is not None and existing.content_hash == digest:
            continue
        if existing is not None and legacy_match(existing.content_hash, obj.get("spec")):
            existing.content_hash = digest
            rehashed.append(existing)
            continue
        parsed = parse_resource_slice(obj=obj)
        ctx.note("resourceslices", parsed.issues, obj=name)
        if not name or not parsed.driver or not parsed.pool_name:
            ctx.note("resourceslices", [warning("dra.slice.unusable", "no name, driver or pool")], obj=name)
            continue
        if existing is not None:
            pools.add((existing.driver, existing.pool_name))
            replaced.append(existing.pk)
            replaced_nodes.add(existing.node_name)
        rows.append(
            ResourceSlice(
                cluster=ctx.cluster,
                name=name,
                driver=parsed.driver,
                pool_name=parsed.pool_name,
                generation=parsed.generation,
                slice_count=parsed.resource_slice_count,
                node_name=parsed.node_name or "",
                dynamic_mig=slice_has_dynamic_mig(parsed),
                counters=counter_names(parsed),
                content_hash=digest,
            )
        )
        devices.append(parsed.devices)
        pools.add((parsed.driver, parsed.pool_name))
        changes += 1
    ResourceSlice.objects.bulk_update(rehashed, ["content_hash"])
    if replaced:
        ResourceSlice.objects.filter(pk__in=replaced).delete()  # their devices go with them
    # Only the nodes these slices name: the whole cluster's 5,000 node ids per page was a waste.
    names = {row.node_name for row in rows} - {""}
    nodes = (
        dict(Node.objects.filter(cluster=ctx.cluster, present=True, name__in=names).values_list("name", "pk"))
        if names
        else {}
    )
    # The new slices' ids are taken from their sequence before the COPY; the devices below point at them.
    insert_rows(ResourceSlice, rows)
    # Pools are recounted before the new devices go in, so those are inserted already counted or
    # not: flipping 77,000 freshly inserted rows with an UPDATE afterwards rewrote every one of them.
    counting = _recount_pools(ctx, pools, fresh={row.pk for row in rows})
    rules = stored_rules(ctx) if rows else []
    insert_values(
        ShareableUnit,
        [
            _device_unit(ctx, row, nodes.get(row.node_name), device, counted=row.pk in counting, rules=rules)
            for row, slice_devices in zip(rows, devices, strict=True)
            for device in slice_devices
        ],
    )
    if names:
        recount_dra_cards(ctx, node_names=names | replaced_nodes)
    mark_driver_managed_mig(ctx, node_names=names | replaced_nodes)
    mark_card_health(ctx, node_names=(names | replaced_nodes) - {""})
    return changes


def _device_unit(
    ctx: SyncContext,
    row: ResourceSlice,
    node_id: uuid.UUID | None,
    device: DraDevice,
    *,
    counted: bool,
    rules: list[TaintRule],
) -> dict[str, Any]:
    """The device's unit row, as ``insert_values`` takes it."""
    # The slice's own taints, then those of DeviceTaintRules naming the device (one taint once).
    taints = list(device.taints)
    for taint in rule_taints(rules, driver=row.driver, pool=row.pool_name, device=device.name):
        if taint not in taints:
            taints.append(taint)
    return {
        "cluster_id": ctx.cluster.pk,
        "node_id": node_id,
        "resource_slice_id": row.pk,
        "key": f"dra/{row.driver}/{row.pool_name}/{device.name}@{row.name}",
        "kind": "dra_device",
        "resource_name": row.driver,
        "ge_each": ge_to_decimal(device.ge, places=STORED_GE_PLACES),
        "model_key": device.model_key,
        "mig_profile": str(device.attributes.get("profile") or "") if _is_mig(device.attributes) else "",
        "placement_start": device.placement.start if device.placement else None,
        "placement_size": device.placement.size if device.placement else None,
        "device_uuid": str(device.attributes.get("uuid") or ""),
        "driver": row.driver,
        "pool_name": row.pool_name,
        "device_name": device.name,
        "attributes": {k: v for k, v in device.attributes.items() if isinstance(v, str | int | bool)},
        "counted": counted,
        "taints": [taint.as_json() for taint in taints],
        "shared_capacity": shared_capacity_json(capacity=device.capacity, policies=device.request_policies)
        if device.allow_multiple_allocations
        else {},
        "unavailable": blocking_reason(taints)[:300],
        "binds_to_node": device.binds_to_node,
    }


def _is_mig(attributes: Any) -> bool:
    return str(attributes.get("type") or "") == "mig" or bool(attributes.get("profile"))


def delete_slices(ctx: SyncContext, names: set[str]) -> int:
    rows = ResourceSlice.objects.filter(cluster=ctx.cluster, name__in=names)
    pools = set(rows.values_list("driver", "pool_name"))
    nodes = set(rows.exclude(node_name="").values_list("node_name", flat=True))
    deleted = rows.delete()[0]
    _recount_pools(ctx, pools)
    if nodes:
        recount_dra_cards(ctx, node_names=nodes)
        mark_driver_managed_mig(ctx, node_names=nodes)
        mark_card_health(ctx, node_names=nodes)
    return deleted and len(names)


def _recount_pools(
    ctx: SyncContext, pools: set[tuple[str, str]], *, fresh: set[int] | None = None
) -> set[int]:
    """A pool counts only when every slice of its newest generation is present (assemble_pools' rule).

    Slices in ``fresh`` have no devices stored yet: they are left out of the updates, and those of
    them that count are returned for their devices to be inserted counted."""
    fresh = fresh or set()
    if not pools:
        return set()
    by_pool: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    rows = ResourceSlice.objects.filter(
        cluster=ctx.cluster, pool_name__in={pool for _, pool in pools}
    ).values_list("pk", "driver", "pool_name", "generation", "slice_count")
    for pk, driver, pool, generation, slice_count in rows:
        if (driver, pool) in pools:
            by_pool.setdefault((driver, pool), []).append((pk, generation, slice_count))
    counted: list[int] = []
    ignored: list[int] = []
    for slices in by_pool.values():
        newest = max(generation for _, generation, _ in slices)
        current = [(pk, count) for pk, generation, count in slices if generation == newest]
        complete = len(current) >= max(count for _, count in current)
        (counted if complete else ignored).extend(pk for pk, _ in current)
        ignored.extend(pk for pk, generation, _ in slices if generation != newest)
    _note_undeclared_counters(ctx, counted)
    stored_counted = [pk for pk in counted if pk not in fresh]
    stored_ignored = [pk for pk in ignored if pk not in fresh]
    if stored_counted:
        ShareableUnit.objects.filter(resource_slice_id__in=stored_counted, counted=False).update(counted=True)
    if stored_ignored:
        ShareableUnit.objects.filter(resource_slice_id__in=stored_ignored, counted=True).update(counted=False)
    return fresh.intersection(counted)


def _note_undeclared_counters(ctx: SyncContext, counted: list[int]) -> None:
    """Counters a device consumes that its pool's complete generation does not declare, noted on the
    device's slice. Each slice keeps the issues already noted (``counters["issues"]``), so a recount
    that finds the same ones again notes nothing: a bad slice is counted once per version of it."""
    if not counted:
        return
    slices = list(
        ResourceSlice.objects.filter(pk__in=counted)
        .exclude(counters={})
        .only("pk", "name", "driver", "pool_name", "node_name", "counters")
    )
    declared: dict[tuple[str, str], dict[str, set[str]]] = {}
    for piece in slices:
        pool = declared.setdefault((piece.driver, piece.pool_name), {})
        for set_name, names in (piece.counters.get("shared") or {}).items():
            pool.setdefault(set_name, set()).update(names)
    changed = []
    for piece in slices:
        issues = undeclared_counter_issues(
            consumed=(
                (device, set_name, names)
                for device, sets in (piece.counters.get("consumes") or {}).items()
                for set_name, names in sets.items()
            ),
            declared=declared.get((piece.driver, piece.pool_name), {}),
        )
        stored = piece.counters.get("issues") or []
        seen = {row.get("message") for row in stored}
        where = f"{piece.name} (node {piece.node_name})" if piece.node_name else piece.name
        ctx.note("resourceslices", [i for i in issues if i.message not in seen], obj=where)
        found = [
            {"severity": str(i.severity), "code": i.code, "message": i.message, "source": i.source}
            for i in issues
        ]
        if found != stored:
            piece.counters = {**piece.counters, "issues": found}
            changed.append(piece)
    if changed:
        ResourceSlice.objects.bulk_update(changed, ["counters"])


def apply_claims(
    ctx: SyncContext, objects: Iterable[dict[str, Any]], *, reason: str, listing: bool
) -> tuple[int, set[str]]:
    """Upsert claims and open/close the intervals of their allocated devices; (changes, uids seen)."""
    pairs = [(obj, parse_resource_claim(obj=obj)) for obj in objects]
    pairs = [(obj, c) for obj, c in pairs if c.kind == "ResourceClaim"]
    claims = [c for _, c in pairs]
    devices = ctx.dra_devices()
    uids = [c.uid for c in claims]
    if listing:
        stored = ctx.stored_keys(
            "claims",
            lambda: set(ResourceClaim.objects.filter(cluster=ctx.cluster).values_list("uid", flat=True)),
        )
        uids = [uid for uid in uids if uid in stored]
    existing = (
        {c.uid: c for c in ResourceClaim.objects.filter(cluster=ctx.cluster, uid__in=uids)} if uids else {}
    )
    changes, holders, now = 0, [], timezone.now()
    creating: list[dict[str, Any]] = []
    updating: list[ResourceClaim] = []
    # DeviceClass -> what its devices can give, read once and only for a pending claim asking capacity
    offers: dict[str, list[CapacityOffer]] | None = None
    rehashed_claims: list[ResourceClaim] = []
    new_id = RandomUuids(len(pairs)).next  # a new claim's key, as uuid.uuid4 makes it
    for obj, claim in pairs:
        label = f"{claim.namespace}/{claim.name}"
        if not claim.uid or not claim.namespace:
            # No row to keep them on: counted each time the claim is read.
            missing = warning("dra.claim.missing_identity", "no uid or namespace")
            ctx.note("resourceclaims", [*claim.issues, missing], obj=label)
            continue
        tenant_id = ctx.tenant_for(claim.namespace)
        node_name = claim.allocated_node_names[0] if claim.allocated_node_names else ""
        fields = {
            "tenant_id": tenant_id,
            "namespace": claim.namespace,
            "name": claim.name,
            "state": claim.state,
            "requests": [r.name for r in claim.requests],
            "results": [_result_json(r, claim.device_statuses) for r in claim.results],
            "reserved_for": [
                {"resource": c.resource, "name": c.name, "uid": c.uid} for c in claim.reserved_for
            ],
            "node_name": node_name,
            "deleting": bool(dig(obj, "metadata", "deletionTimestamp")),
        }
        digest = content_hash(fields)
        row = existing.get(claim.uid)
        claim_id = row.pk if row is not None else new_id()
        # What reading the claim found is kept on its row with the rest, so a resync counts none again.
        found: list[ParseIssue] = list(claim.issues)
        if not claim.allocated and _asks_capacity(claim):
            if offers is None:
                offers = _capacity_offers(ctx, devices)
            found.extend(unmet_capacity_issues(claim=claim, offers=offers))
        written = row is None or row.content_hash != digest or not row.present
        new: dict[str, Any] | None = None
        if row is not None and written and row.present and legacy_match(row.content_hash, fields):
            # The same content under the digest of before: re-stamped, not a change of the claim.
            row.content_hash = digest
            rehashed_claims.append(row)
            written = False
        elif written:
            fields.update(content_hash=digest, present=True, gone_at=None)
            if row is None:
                new = {"id": claim_id, "cluster_id": ctx.cluster.pk, "uid": claim.uid, **fields}
                creating.append(new)
            else:
                for name, value in fields.items():
                    setattr(row, name, value)
                updating.append(row)
            changes += 1
        # When the holding began, from the best the cluster records: the write of its allocation; else,
        # on a list, the claim's creation; else (a watch event) the moment we saw it. Marked on each row.
        started_at, started_from = claim_started(obj, listing=listing, now=now)
        classes = _device_classes(claim)
        rows = []
        for result in claim.results:
            if result.admin_access:
                continue  # monitoring access does not hold the device
            ref = devices.get((result.driver, result.pool, result.device))
            if ref is None:
                # Not a device of a complete pool's newest generation: the slice generation it was
                # allocated from is gone (or not complete yet). Held at 0 GE, never counted twice.
                found.append(
                    warning(
                        "dra.claim.unknown_device",
                        f"{'/'.join(result.key)}: allocated from a slice generation that is gone",
                    )
                )
            ge = ref.ge_each if ref else Decimal(0)
            if ref is not None and ref.shared_capacity:
                ge = _share_ge(
                    ref.ge_each,
                    ref.shared_capacity,
                    result,
                    requested=requested_capacity(claim, result),
                    found=found,
                )
            rows.append(
                WantedRow(
                    unit_key=f"dra/{result.driver}/{result.pool}/{result.device}",
                    # The DeviceClass stands in for the flavor until flavors exist.
                    resource_name=classes.get(result.request) or result.driver,
                    count=1,
                    ge=ge,
                    model_key=ref.model_key if ref else "",
                    node_name=ref.node_name if ref else node_name,
                    node_id=ref.node_id if ref else None,
                    pool_id=ref.pool_id if ref else None,
                    gpu_id=ref.gpu_id if ref else None,
                    unit_id=ref.unit_id if ref else None,
                    details={"started_from": started_from},
                )
            )
        issues = _keep_issues(ctx, row.issues if row is not None else [], found, label=label)
        if new is not None:
            new["issues"] = issues if issues is not None else []
        elif row is not None and issues is not None:
            row.issues = issues
            if not written:
                updating.append(row)  # only what is wrong with it changed: stored, not a change of the claim
        holders.append(
            Holder(
                kind=HolderKind.CLAIM,
                uid=claim.uid,
                name=claim.name,
                namespace=claim.namespace,
                tenant_id=tenant_id,
                started_at=started_at,
                ended_at=now,
                rows=tuple(rows),
                claim_id=claim_id,
            )
        )
    # Claims first (bulk), so the intervals opened below can point at them.
    insert_values(ResourceClaim, creating)
    ResourceClaim.objects.bulk_update(
        updating, [*CLAIM_FIELDS, "issues", "content_hash", "present", "gone_at"], batch_size=1000
    )
    ResourceClaim.objects.bulk_update(rehashed_claims, ["content_hash"], batch_size=1000)
    may_be_open = (
        ctx.stored_keys("open claims", lambda: open_holder_uids(cluster=ctx.cluster, kind=HolderKind.CLAIM))
        if listing
        else None
    )
    changes += reconcile_holders(cluster=ctx.cluster, holders=holders, reason=reason, may_be_open=may_be_open)
    return changes, {h.uid for h in holders}


def _share_ge(
    whole: Decimal,
    stored: dict[str, Any],
    result: Any,
    *,
    requested: Mapping[str, Decimal],
    found: list[ParseIssue],
) -> Decimal:
    """A share of a device several claims use holds what it consumes of it (DESIGN §3), as the
    scheduler counts it: a capacity the result leaves out is what the request asks, rounded per the
    policy, else the default (0 consumed: 0 GE). Consumption outside the device's request policy is
    added to ``found`` and counted as consumed, capped at the device."""
    capacity, policies = shared_capacity_from_json(stored)
    found.extend(
        consumed_issues(
            consumed=result.consumed_capacity,
            capacity=capacity,
            policies=policies,
            source=f"{result.request} on {result.device}",
        )
    )
    consumed = effective_consumption(
        consumed=result.consumed_capacity, requested=requested, capacity=capacity, policies=policies
    )
    fraction = share_fraction(consumed=consumed, capacity=capacity)
    if fraction is None:
        return whole  # a shared device declaring no capacity has no measure of a share
    return ge_to_decimal(Fraction(whole) * fraction, places=STORED_GE_PLACES)


def _asks_capacity(claim: Any) -> bool:
    return any(
        spec is not None and spec.capacity_requests
        for request in claim.requests
        for spec in (request.exactly, *request.first_available)
    )


def _capacity_offers(
    ctx: SyncContext, devices: Mapping[tuple[str, str, str], UnitRef]
) -> dict[str, list[CapacityOffer]]:
    """DeviceClass name -> what each counted device of its driver can give (a class naming no single
    driver is not judged: its devices are not known)."""
    drivers = dict(
        DeviceClass.objects.filter(cluster=ctx.cluster).exclude(driver="").values_list("name", "driver")
    )
    wanted = set(drivers.values())
    by_driver: dict[str, list[CapacityOffer]] = defaultdict(list)
    for (driver, _, _), ref in devices.items():
        if driver in wanted:
            by_driver[driver].append(CapacityOffer.stored(ref.shared_capacity))
    return {name: by_driver.get(driver, []) for name, driver in drivers.items()}


def _keep_issues(
    ctx: SyncContext, stored: list[dict[str, str]] | None, found: list[ParseIssue], *, label: str
) -> list[dict[str, str]] | None:
    """What is wrong with the claim now, to store on its row, counting only what was not stored already
    (so a resync finding the same again adds nothing); None when the stored issues stay as they are."""
    stored = stored or []
    rows = [
        {"severity": str(i.severity), "code": i.code, "message": i.message, "source": i.source} for i in found
    ]
    ctx.note("resourceclaims", [i for i, r in zip(found, rows, strict=True) if r not in stored], obj=label)
    return None if rows == stored else rows


def _result_json(result: Any, statuses: Any) -> dict[str, str]:
    """A claim's allocation result as stored; with its binding conditions in words when its device has
    some (KEP-5007), so a claim's row can say why its pod is not bound yet."""
    row = {"request": result.request, "driver": result.driver, "pool": result.pool, "device": result.device}
    words = binding_words(result=result, statuses=statuses)
    if words:
        row["binding"] = words
    return row


def _device_classes(claim: Any) -> dict[str, str]:
    """Request name (``req`` or ``req/sub`` for a firstAvailable alternative) -> DeviceClass."""
    found = {}
    for request in claim.requests:
        if request.exactly is not None:
            found[request.name] = request.exactly.device_class_name
        for sub in request.first_available:
            found[f"{request.name}/{sub.name}"] = sub.device_class_name
    return found


def vanish_claims(ctx: SyncContext, uids: set[str], *, reason: str) -> int:
    now = timezone.now()
    changes = ResourceClaim.objects.filter(cluster=ctx.cluster, uid__in=uids, present=True).update(
        present=False, gone_at=now, issues=[]
    )
    return changes + close_holders(
        cluster=ctx.cluster, kind=HolderKind.CLAIM, ended=dict.fromkeys(uids, now), reason=reason
    )


def allocation_written_at(obj: dict[str, Any]) -> datetime | None:
    """When the claim's allocation was written, as the API server records it: the time of the
    managedFields entry on the status subresource that owns ``status.allocation`` (the scheduler's).
    An entry's time is its manager's last write, so this is an upper bound if it rewrote the status."""
    for entry in dig(obj, "metadata", "managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource") != "status":
            continue
        status = (entry.get("fieldsV1") or {}).get("f:status") or {}
        if isinstance(status, dict) and "f:allocation" in status:
            return k8s_time(entry.get("time"))
    return None


def claim_started(obj: dict[str, Any], *, listing: bool, now: datetime) -> tuple[datetime, str]:
    """(when a claim's holding began, what that time is): ``allocation_written``, ``claim_created``
    (on a list, when the allocation's write is not recorded) or ``first_seen``."""
    written = allocation_written_at(obj)
    if written is not None:
        return min(written, now), "allocation_written"
    created = k8s_time(dig(obj, "metadata", "creationTimestamp")) if listing else None
    if created is not None:
        return created, "claim_created"
    return now, "first_seen"
