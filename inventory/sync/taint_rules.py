"""DeviceTaintRules: each rule's taint is put on the DRA units its selector names and taken off those it
no longer names, so a unit's ``taints`` are always the slice's own plus the rules' (by source), and its
``unavailable`` reason follows. Slices written later pick the stored rules up (``rule_taints``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from inventory.domain.device_taints import (
    DeviceTaint,
    TaintRule,
    blocking_reason,
    parse_device_taint_rule,
    taints_from_json,
)
from inventory.domain.raw_fields import dig
from inventory.models import DeviceTaintRule, ShareableUnit
from inventory.sync.context import SyncContext, content_hash, legacy_match
from inventory.sync.dra_cards import mark_card_health

KIND = "devicetaintrules"


def apply_rules(ctx: SyncContext, objects: Iterable[dict[str, Any]]) -> int:
    changes = 0
    for obj in objects:
        name = str(dig(obj, "metadata", "name") or "")
        rule = parse_device_taint_rule(obj=obj)
        ctx.note(KIND, rule.issues, obj=name)
        if not name:
            continue
        digest = content_hash(obj.get("spec"))
        stored = DeviceTaintRule.objects.filter(cluster=ctx.cluster, name=name).first()
        if stored is not None and stored.content_hash == digest:
            continue
        if stored is not None and legacy_match(stored.content_hash, obj.get("spec")):
            DeviceTaintRule.objects.filter(pk=stored.pk).update(content_hash=digest)
            continue
        DeviceTaintRule.objects.update_or_create(
            cluster=ctx.cluster,
            name=name,
            defaults={
                "has_selector": rule.has_selector,
                "driver": rule.driver,
                "pool_name": rule.pool,
                "device_name": rule.device,
                "taint": rule.taint.as_json() if rule.taint else {},
                "content_hash": digest,
            },
        )
        _retaint(ctx, name, rule)
        changes += 1
    return changes


def delete_rules(ctx: SyncContext, names: set[str]) -> int:
    deleted = DeviceTaintRule.objects.filter(cluster=ctx.cluster, name__in=names).delete()[0]
    for name in names:
        _retaint(ctx, name, None)
    return deleted


def stored_rule_names(ctx: SyncContext) -> set[str]:
    return set(DeviceTaintRule.objects.filter(cluster=ctx.cluster).values_list("name", flat=True))


def stored_rules(ctx: SyncContext) -> list[TaintRule]:
    return [
        TaintRule(
            name=row.name,
            has_selector=row.has_selector,
            driver=row.driver,
            pool=row.pool_name,
            device=row.device_name,
            taint=next(iter(taints_from_json([row.taint])), None) if row.taint else None,
        )
        for row in DeviceTaintRule.objects.filter(cluster=ctx.cluster)
    ]


def rule_taints(rules: list[TaintRule], *, driver: str, pool: str, device: str) -> tuple[DeviceTaint, ...]:
    """The taints stored rules put on one device of a slice being written."""
    return tuple(
        r.taint for r in rules if r.taint is not None and r.matches(driver=driver, pool=pool, device=device)
    )


def _retaint(ctx: SyncContext, name: str, rule: TaintRule | None) -> None:
    source = f"DeviceTaintRule {name}"
    carrying = Q(taints__contains=[{"source": source}])
    wanted = Q(pk__in=[])
    if rule is not None and rule.has_selector and rule.taint is not None:
        wanted = Q()
        for field, value in (("driver", rule.driver), ("pool_name", rule.pool), ("device_name", rule.device)):
            if value:
                wanted &= Q(**{field: value})
    units = list(
        ShareableUnit.objects.filter(cluster=ctx.cluster, kind="dra_device")
        .filter(carrying | wanted)
        .select_related("node")
    )
    changed = []
    for unit in units:
        kept = [t for t in taints_from_json(unit.taints or []) if t.source != source]
        if (
            rule is not None
            and rule.taint is not None
            and rule.matches(driver=unit.driver, pool=unit.pool_name, device=unit.device_name)
        ):
            kept.append(rule.taint)
        taints = [t.as_json() for t in kept]
        if taints != unit.taints:
            unit.taints = taints
            unit.unavailable = blocking_reason(kept)[:300]
            changed.append(unit)
    if changed:
        ctx.units_changed()
        ShareableUnit.objects.bulk_update(changed, ["taints", "unavailable"], batch_size=500)
        mark_card_health(ctx, node_names={u.node.name for u in changed if u.node is not None})
