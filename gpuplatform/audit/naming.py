"""Names for what audit events point at, so the log reads "vision: 2 x nvidia.com/gpu on h100" and
"flavor: a100 → h100", not ids. Each app registers, in its ready(), how to name its own objects from
their ids (one query per kind for a page of events) and which before/after keys hold such ids: the
audit app names nothing of a higher app itself (the layers point one way)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from gpuplatform.audit.models import AuditEvent

Namer = Callable[[list[str]], dict[str, str]]  # ids -> names, absent ids left out

_NAMERS: dict[str, Namer] = {}
_FIELDS: dict[str, str] = {}  # a before/after key -> the object_type whose ids it holds


def register_names(*, object_type: str, names: Namer, fields: Iterable[str] = ()) -> None:
    """``object_type`` is the model's ``label_lower`` (what record_event stores); ``fields`` are the
    before/after keys that hold ids of it (``tenant``, ``tenant_id``)."""
    _NAMERS[object_type] = names
    for key in fields:
        _FIELDS[key] = object_type


@dataclass(frozen=True)
class Change:
    field: str
    before: Any
    after: Any


@dataclass(frozen=True)
class NamedEvent:
    event: AuditEvent
    name: str  # the object, named
    tenant: str  # the tenant's name, or ""
    changes: list[Change]


def _shown(value: Any) -> Any:
    if value is None or value == "":
        return "—"
    return value


def name_events(events: Iterable[AuditEvent]) -> list[NamedEvent]:
    """The events with their objects, tenants and id-valued fields named; before → after per
    changed field (a created object: its fields, from nothing)."""
    rows = list(events)
    wanted: dict[str, set[str]] = defaultdict(set)
    for e in rows:
        if e.object_type in _NAMERS and e.object_id:
            wanted[e.object_type].add(e.object_id)
        if e.tenant_id is not None and "tenant" in _FIELDS:
            wanted[_FIELDS["tenant"]].add(str(e.tenant_id))
        for side in (e.before or {}, e.after or {}):
            for key, value in side.items():
                if key in _FIELDS and isinstance(value, str) and value:
                    wanted[_FIELDS[key]].add(value)
    known = {kind: _NAMERS[kind](sorted(ids)) for kind, ids in wanted.items() if kind in _NAMERS}

    def named(key: str, value: Any) -> Any:
        kind = _FIELDS.get(key)
        if kind is not None and isinstance(value, str):
            return known.get(kind, {}).get(value, value)
        return value

    result = []
    for e in rows:
        before, after = e.before or {}, e.after or {}
        changes = [
            Change(key, _shown(named(key, before.get(key))), _shown(named(key, after.get(key))))
            for key in e.changed_fields
        ]
        tenant = known.get(_FIELDS.get("tenant", ""), {}).get(str(e.tenant_id), "") if e.tenant_id else ""
        name = known.get(e.object_type, {}).get(e.object_id) or e.object_repr
        result.append(NamedEvent(event=e, name=name, tenant=tenant, changes=changes))
    return result


def by_field(model: Any, field: str) -> Namer:
    """A namer reading one field of ``model`` (``Tenant``, ``"slug"``) for the given ids."""

    def names(ids: list[str]) -> dict[str, str]:
        valid = [i for i in ids if _is_key(model, i)]
        return {
            str(pk): str(v) for pk, v in model._default_manager.filter(pk__in=valid).values_list("pk", field)
        }

    return names


def _is_key(model: Any, value: str) -> bool:
    try:
        model._meta.pk.to_python(value)
    except ValidationError:  # a malformed id in an old event names nothing
        return False
    return True
