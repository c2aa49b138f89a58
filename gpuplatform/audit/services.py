"""Writing audit events. Callers run inside the transaction of the change they record."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import models, transaction

from gpuplatform.audit.models import AuditEvent
from gpuplatform.db.bulk_update import insert_each
from gpuplatform.db.together import writing_together
from gpuplatform.observability.request_id import current_request_id


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | decimal.Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return value


def snapshot(obj: models.Model, fields: Iterable[str]) -> dict[str, Any]:
    """The named fields of ``obj`` as JSON-ready values, for an event's before/after."""
    return {field: _jsonable(getattr(obj, field)) for field in fields}


def record_event(
    *,
    actor: Any,
    action: str,
    obj: models.Model,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    tenant_id: uuid.UUID | None = None,
) -> AuditEvent:
    """Append one event. Must be called inside the change's transaction, so both commit or neither.
    Inside `gpuplatform.db.together.writes_together` it is written with the change's other writes."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record_event must run inside the transaction of the change it records")
    event = AuditEvent(
        actor=actor if getattr(actor, "pk", None) else None,
        actor_label=getattr(actor, "username", "") or "system",
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk),
        object_repr=str(obj)[:200],
        tenant_id=tenant_id if tenant_id is not None else getattr(obj, "tenant_id", None),
        before=before,
        after=after,
        request_id=current_request_id(),
    )
    if writing_together():
        insert_each(AuditEvent, [event])  # sent with the change's writes; its id is set then
    else:
        event.save(force_insert=True)
    return event


# System bookkeeping: events a background loop writes as routine (late usage booked as adjustments).
# Kept in the log, but left out of "Recent changes" and of /audit/ unless asked for, so that the
# people's changes are not buried under them.
BOOKKEEPING_ACTIONS = frozenset({"usage.adjustment_booked"})


# Events about attempts that changed nothing: refusals, denials, logins. Kept apart from changes so
# the log can be read either way, and so "a refused request changes nothing" stays checkable.
ATTEMPT_ACTIONS = frozenset(
    {
        "access.denied",
        "agent.registration_refused",
        "agent.status_refused",
        "api_token.rejected",
        "auth.login",
        "auth.login_failed",
        "cluster.registration_refused",
        "cluster.update_refused",
        "rollout.refused",
        "sharing_policy.refused",
    }
)


def record_attempt(
    *,
    actor: Any,
    action: str,
    object_type: str,
    object_repr: str = "",
    object_id: str = "",
    detail: dict[str, Any] | None = None,
    tenant_id: uuid.UUID | None = None,
) -> AuditEvent:
    """Append an event about an attempt that changed nothing (refused, denied, a login), in a
    transaction of its own: the refusal is what is recorded, so it must outlive the rollback."""
    if action not in ATTEMPT_ACTIONS:
        raise ValueError(f"{action!r} is not an attempt action (see ATTEMPT_ACTIONS)")
    with transaction.atomic():
        return AuditEvent.objects.create(
            actor=actor if getattr(actor, "pk", None) else None,
            actor_label=getattr(actor, "username", "") or "anonymous",
            action=action,
            object_type=object_type,
            object_id=object_id,
            object_repr=object_repr[:200],
            tenant_id=tenant_id,
            after=_jsonable(detail) if detail is not None else None,
            request_id=current_request_id(),
        )
