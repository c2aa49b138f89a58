"""SLOs: defined by platform-admins, evaluated bucket by bucket (idempotent: a bucket is computed once
its data has settled and kept), judged by burn-rate rules, alerts delivered to webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import requests
from django.db import transaction
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.db.after_commit import queue_after_commit
from gpuplatform.errors import Forbidden, NotFound, ValidationFailed
from gpuplatform.outbound.configured import failure_text, user_url_session, vet_user_url
from gpuplatform.outbound.policy import redact_url
from gpuplatform.sli_sources import SliKind, sli_kind, sli_kinds
from inventory.crypto import decrypt_text, encrypt_text
from metering.slos.burn import RULES, Sample, budget_remaining, burn_rate, firing, window
from metering.slos.models import (
    AlertDelivery,
    AlertReceiver,
    AlertState,
    DeliveryState,
    SliSample,
    Slo,
    SloAlert,
)
from tenants.models import Tenant

DELIVER_TASK = "metering.deliver_alert"
MAX_BACKFILL_BUCKETS = 12 * 24 * 2  # two days of 5-minute buckets per evaluation, then it catches up
DELIVERY_BACKOFF = (30, 120, 600, 1800, 3600)  # seconds between attempts; then it gives up
DELIVERY_TIMEOUT = 5.0
PARAMS: dict[str, tuple[Decimal, Decimal]] = {
    "within_seconds": (Decimal(1), Decimal(86_400)),
    "saturated": (Decimal("0.01"), Decimal("1")),
    "delivered": (Decimal("0.01"), Decimal("1")),
    "converge_seconds": (Decimal(60), Decimal(86_400)),
}


SLO_FIELDS = ("name", "sli", "objective", "window_days", "tenant_id", "params", "receivers")
_UNSET: Any = object()


def _objective(objective: Decimal | str) -> Decimal:
    try:
        target = Decimal(str(objective))
    except InvalidOperation as exc:
        raise ValidationFailed(
            "The objective is a number.", code="slo.objective_invalid", field="objective"
        ) from exc
    # NaN would raise on the comparison below (a 500): not finite is as invalid as out of range.
    if not target.is_finite() or not Decimal(0) < target < Decimal(1):
        raise ValidationFailed(
            "The objective is a fraction strictly between 0 and 1 (0.99 for 99%).",
            code="slo.objective_invalid",
            field="objective",
        )
    return target


def _kind(sli: str) -> SliKind:
    kind = sli_kind(sli)
    if kind is None:
        names = ", ".join(k.name for k in sli_kinds())
        raise ValidationFailed(f"Unknown SLI {sli!r}; one of: {names}.", code="slo.unknown_sli", field="sli")
    return kind


def _window(window_days: int) -> int:
    if not 1 <= window_days <= 90:
        raise ValidationFailed("The window is 1 to 90 days.", code="slo.window_invalid", field="window_days")
    return window_days


def _tenant(tenant_id: uuid.UUID | None) -> uuid.UUID | None:
    if tenant_id is not None and not Tenant.objects.filter(pk=tenant_id).exists():
        raise NotFound("No such tenant.", code="slo.unknown_tenant", field="tenant")
    return tenant_id


def _receivers(receiver_ids: list[uuid.UUID]) -> list[AlertReceiver]:
    receivers = list(AlertReceiver.objects.filter(pk__in=receiver_ids))
    if len(receivers) != len(set(receiver_ids)):
        raise ValidationFailed(
            "An alert receiver does not exist.", code="slo.unknown_receiver", field="receivers"
        )
    return receivers


def _name_free(name: str, *, other_than: uuid.UUID | None = None) -> str:
    return _unique_name(Slo, name, what="An SLO", code="slo", other_than=other_than)


def _unique_name(
    model: type[Slo] | type[AlertReceiver], name: str, *, what: str, code: str, other_than: uuid.UUID | None
) -> str:
    """A name given, stripped, that no other object of the kind bears (names are how people and
    receivers' messages tell SLOs and receivers apart)."""
    name = name.strip()
    if not name:
        raise ValidationFailed(f"{what} has a name.", code=f"{code}.name_missing", field="name")
    others = model.objects.filter(name=name)
    if other_than is not None:
        others = others.exclude(pk=other_than)
    if others.exists():
        raise ValidationFailed(f"{what} named {name!r} exists.", code=f"{code}.name_taken", field="name")
    return name


def _slo_snapshot(slo: Slo) -> dict[str, Any]:
    shown = snapshot(slo, ["name", "sli", "objective", "window_days", "tenant_id", "params"])
    shown["receivers"] = sorted(r.name for r in slo.receivers.all())
    return shown


def _only_admins(actor: Any, what: str) -> None:
    if not getattr(actor, "is_platform_admin", False):
        raise Forbidden(f"Only platform-admins {what}.")


def create_slo(
    *,
    actor: Any,
    name: str,
    sli: str,
    objective: Decimal | str,
    window_days: int = 30,
    tenant_id: uuid.UUID | None = None,
    params: dict[str, Any] | None = None,
    receiver_ids: list[uuid.UUID] | None = None,
) -> Slo:
    """Define an SLO (platform-admins); audited; not idempotent (a second one with its name is refused)."""
    _only_admins(actor, "define SLOs")
    kind = _kind(sli)
    target = _objective(objective)
    _window(window_days)
    clean = _params(params or {})
    _tenant(tenant_id)
    receivers = _receivers(receiver_ids or [])
    name = _name_free(name)
    with transaction.atomic():
        slo = Slo.objects.create(
            name=name,
            sli=kind.name,
            objective=target,
            window_days=window_days,
            tenant_id=tenant_id,
            params=clean,
            created_by=actor,
        )
        slo.receivers.set(receivers)
        record_event(
            actor=actor,
            action="slo.created",
            obj=slo,
            after=_slo_snapshot(slo),
            tenant_id=tenant_id,
        )
    return slo


def update_slo(
    *,
    actor: Any,
    slo_id: uuid.UUID,
    name: str = _UNSET,
    sli: str = _UNSET,
    objective: Decimal | str = _UNSET,
    window_days: int = _UNSET,
    tenant_id: uuid.UUID | None = _UNSET,
    params: dict[str, Any] = _UNSET,
    receiver_ids: list[uuid.UUID] = _UNSET,
) -> Slo:
    """Change an SLO's definition; what is not given stays. Each value is checked as on create. Locks
    the row so two edits audit a true before. Changing the SLI or its parameters drops the samples
    measured under the old definition (they measured something else); the alerts stay as history."""
    _only_admins(actor, "change SLOs")
    with transaction.atomic():
        slo = Slo.objects.select_for_update().filter(pk=slo_id).first()
        if slo is None:
            raise NotFound("No such SLO.", code="slo.not_found")
        before = _slo_snapshot(slo)
        if name is not _UNSET:
            slo.name = _name_free(name, other_than=slo.pk)
        if sli is not _UNSET:
            slo.sli = _kind(sli).name
        if objective is not _UNSET:
            slo.objective = _objective(objective)
        if window_days is not _UNSET:
            slo.window_days = _window(window_days)
        if tenant_id is not _UNSET:
            slo.tenant_id = _tenant(tenant_id)
        if params is not _UNSET:
            slo.params = _params(params or {})
        slo.save()
        slo.refresh_from_db()  # the stored values (0.995 as 0.99500), so before and after compare
        if receiver_ids is not _UNSET:
            slo.receivers.set(_receivers(receiver_ids or []))
        after = _slo_snapshot(slo)
        if after == before:
            return slo  # nothing changed: no event
        measured_differently = any(before[k] != after[k] for k in ("sli", "params", "tenant_id"))
        if measured_differently:
            SliSample.objects.filter(slo=slo).delete()
            slo.evaluated_at = None
            slo.save(update_fields=["evaluated_at"])
        record_event(
            actor=actor, action="slo.updated", obj=slo, before=before, after=after, tenant_id=slo.tenant_id
        )
    return slo


def delete_slo(*, actor: Any, slo_id: uuid.UUID) -> None:
    """Delete an SLO with its samples, alerts and their delivery log (receivers stay). Audited with
    what it was; deleting one already gone is a NotFound."""
    _only_admins(actor, "delete SLOs")
    with transaction.atomic():
        slo = Slo.objects.select_for_update().filter(pk=slo_id).first()
        if slo is None:
            raise NotFound("No such SLO.", code="slo.not_found")
        before = _slo_snapshot(slo)
        record_event(actor=actor, action="slo.deleted", obj=slo, before=before, tenant_id=slo.tenant_id)
        slo.delete()


def _params(params: dict[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in params.items():
        bounds = PARAMS.get(key)
        if bounds is None:
            raise ValidationFailed(
                f"Unknown SLI parameter {key!r}.", code="slo.unknown_param", field="params"
            )
        low, high = bounds
        try:
            number = Decimal(str(value))
        except (ValueError, InvalidOperation) as exc:
            raise ValidationFailed(f"{key} is a number.", code="slo.param_invalid", field="params") from exc
        if not number.is_finite() or not low <= number <= high:
            raise ValidationFailed(f"{key} is {low} to {high}.", code="slo.param_invalid", field="params")
        # Seconds are whole numbers; fractions keep their digits as text (JSON has no decimals).
        clean[key] = int(number) if key.endswith("_seconds") else str(number)
    return clean


def _receiver_name_free(name: str, *, other_than: uuid.UUID | None = None) -> str:
    return _unique_name(AlertReceiver, name, what="A receiver", code="receiver", other_than=other_than)


def _receiver_snapshot(receiver: AlertReceiver) -> dict[str, Any]:
    # The URL without its path (often the bearer secret) and whether it signs, never the secret.
    return {
        "name": receiver.name,
        "url": redact_url(receiver.url),
        "signed": bool(receiver.secret_encrypted and decrypt_text(receiver.secret_encrypted)),
    }


def create_receiver(*, actor: Any, name: str, url: str, secret: str = "") -> AlertReceiver:
    """Add a webhook. Its URL passes the outbound policy (``outbound.*`` codes) now and again at each
    delivery; the secret is stored encrypted; the audit log has the URL without its path."""
    _only_admins(actor, "add alert receivers")
    url = vet_user_url(url, field="url")
    name = _receiver_name_free(name)
    with transaction.atomic():
        receiver = AlertReceiver.objects.create(name=name, url=url, secret_encrypted=encrypt_text(secret))
        record_event(
            actor=actor,
            action="alert_receiver.created",
            obj=receiver,
            after={"name": name, "url": redact_url(url), "signed": bool(secret)},
        )
    return receiver


def update_receiver(
    *,
    actor: Any,
    receiver_id: uuid.UUID,
    name: str | None = None,
    url: str | None = None,
    secret: str | None = None,
) -> AlertReceiver:
    """Change a webhook: None keeps a value, so the secret (write-only, never read back) is replaced
    only when a new one is given, and "" removes it. The URL passes the outbound policy as on create.
    Locks the row; audited without the secret or the URL's path."""
    _only_admins(actor, "change alert receivers")
    with transaction.atomic():
        receiver = AlertReceiver.objects.select_for_update().filter(pk=receiver_id).first()
        if receiver is None:
            raise NotFound("No such alert receiver.", code="receiver.not_found")
        before = _receiver_snapshot(receiver)
        if name is not None:
            receiver.name = _receiver_name_free(name, other_than=receiver.pk)
        if url is not None:
            receiver.url = vet_user_url(url, field="url")
        if secret is not None:
            receiver.secret_encrypted = encrypt_text(secret)
        receiver.save()
        after = _receiver_snapshot(receiver)
        # A new secret of a signed receiver changes nothing the log may show: say that it was replaced.
        if secret:
            after["secret_replaced"] = True
        if after != before:
            record_event(
                actor=actor, action="alert_receiver.updated", obj=receiver, before=before, after=after
            )
    return receiver


def delete_receiver(*, actor: Any, receiver_id: uuid.UUID) -> None:
    """Remove a webhook: the SLOs that alerted it stop doing so, and its delivery log goes with it.
    Audited with what it was."""
    _only_admins(actor, "delete alert receivers")
    with transaction.atomic():
        receiver = AlertReceiver.objects.select_for_update().filter(pk=receiver_id).first()
        if receiver is None:
            raise NotFound("No such alert receiver.", code="receiver.not_found")
        before = {
            **_receiver_snapshot(receiver),
            "slos": sorted(receiver.slos.values_list("name", flat=True)),
        }
        record_event(actor=actor, action="alert_receiver.deleted", obj=receiver, before=before)
        receiver.delete()


def _floor(moment: datetime, seconds: int) -> datetime:
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=UTC)


@dataclass(frozen=True)
class Evaluation:
    samples_written: int
    firing: dict[str, tuple[Decimal, Decimal]]
    opened: list[uuid.UUID]
    resolved: list[uuid.UUID]


def evaluate_slo(*, slo_id: uuid.UUID, now: datetime | None = None) -> Evaluation:
    """Write the buckets that have settled since the last one (at most two days' worth a call), then
    open or resolve the burn-rate alerts and queue their deliveries. Running it twice writes nothing
    new and sends nothing twice."""
    now = now or timezone.now()
    slo = Slo.objects.filter(pk=slo_id).first()
    kind = sli_kind(slo.sli) if slo is not None else None
    if slo is None or kind is None:  # deleted since the beat listed it, or an SLI no longer known
        return Evaluation(0, {}, [], [])
    written = _write_samples(slo, kind, now)
    samples = [
        Sample(s.start, s.end, s.good, s.total)
        for s in SliSample.objects.filter(
            slo=slo, end__gt=now - max(r.long for r in RULES) - timedelta(hours=1)
        )
    ]
    evaluated_to = _evaluated_to(slo, kind, now)
    fired = firing(samples, objective=slo.objective, end=evaluated_to)
    opened, resolved = [], []
    with transaction.atomic():
        open_alerts = {
            a.rule: a for a in SloAlert.objects.select_for_update().filter(slo=slo, state=AlertState.FIRING)
        }
        for rule, (long, short) in fired.items():
            if rule not in open_alerts:
                alert = SloAlert.objects.create(
                    slo=slo, rule=rule, long_burn=long, short_burn=short, opened_at=now
                )
                opened.append(alert.pk)
                _queue_deliveries(slo, alert, "firing", now)
        for rule, alert in open_alerts.items():
            if rule not in fired:
                alert.state, alert.resolved_at = AlertState.RESOLVED, now
                alert.save(update_fields=["state", "resolved_at"])
                resolved.append(alert.pk)
                _queue_deliveries(slo, alert, "resolved", now)
        pending = AlertDelivery.objects.filter(alert_id__in=[*opened, *resolved], state=DeliveryState.PENDING)
        for delivery_id in pending.values_list("pk", flat=True):
            queue_after_commit(DELIVER_TASK, str(delivery_id))
        # When it was last measured, for the pages: "never evaluated" is said, not guessed.
        Slo.objects.filter(pk=slo.pk).update(evaluated_at=now)
    return Evaluation(written, fired, opened, resolved)


def _evaluated_to(slo: Slo, kind: SliKind, now: datetime) -> datetime:
    settle = kind.settle(slo.params) if kind.settle else 0
    return _floor(now - timedelta(seconds=settle), kind.bucket_seconds)


def _write_samples(slo: Slo, kind: SliKind, now: datetime) -> int:
    size = timedelta(seconds=kind.bucket_seconds)
    end = _evaluated_to(slo, kind, now)
    if kind.settle is None:
        starts = [end - size]  # a state can only be measured now: the bucket just ended
    else:
        last = SliSample.objects.filter(slo=slo).order_by("-start").values_list("start", flat=True).first()
        first = last + size if last else end - timedelta(days=slo.window_days)
        first = max(first, end - size * MAX_BACKFILL_BUCKETS)
        starts = []
        cursor = first
        while cursor + size <= end:
            starts.append(cursor)
            cursor += size
    written = 0
    for start in starts:
        if SliSample.objects.filter(slo=slo, start=start).exists():
            continue
        measured = kind.compute(start=start, end=start + size, tenant_id=slo.tenant_id, params=slo.params)
        if measured is None:
            continue
        good, total = measured
        _, created = SliSample.objects.get_or_create(
            slo=slo, start=start, defaults={"end": start + size, "good": good, "total": total}
        )
        written += int(created)
    return written


def _queue_deliveries(slo: Slo, alert: SloAlert, event: str, now: datetime) -> None:
    payload = {
        "event": event,
        "slo": {"id": str(slo.pk), "name": slo.name, "sli": slo.sli, "objective": str(slo.objective)},
        "alert": {
            "id": str(alert.pk),
            "rule": alert.rule,
            "long_burn": str(alert.long_burn),
            "short_burn": str(alert.short_burn),
            "opened_at": alert.opened_at.isoformat(),
            "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
        },
    }
    for receiver in slo.receivers.all():
        AlertDelivery.objects.get_or_create(
            alert=alert,
            receiver=receiver,
            event=event,
            defaults={"payload": payload, "next_attempt_at": now, "created_at": now},
        )


def deliver(*, delivery_id: uuid.UUID, now: datetime | None = None) -> AlertDelivery:
    """One attempt, under the row's lock so two workers never both send; a delivered one is never
    sent again. Returns the delivery as it stands after the attempt. The receiver's address passes
    the outbound policy when connecting; a redirect is a failure, never followed; what the receiver
    answered is not kept, only its status."""
    now = now or timezone.now()
    with transaction.atomic():
        delivery = AlertDelivery.objects.select_for_update().select_related("receiver").get(pk=delivery_id)
        if delivery.state != DeliveryState.PENDING or delivery.next_attempt_at > now:
            return delivery
        delivery.attempts += 1
        ok = False
        try:
            body = json.dumps(delivery.payload, sort_keys=True).encode()
            headers = {"Content-Type": "application/json", "Idempotency-Key": str(delivery.pk)}
            secret = decrypt_text(delivery.receiver.secret_encrypted)
            if secret:
                digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
                headers["X-Gpuplatform-Signature"] = f"sha256={digest}"
            # stream: the answer's body is never read, so a receiver cannot make us hold a large one.
            with user_url_session() as session:
                answer = session.post(
                    delivery.receiver.url, data=body, headers=headers, timeout=DELIVERY_TIMEOUT, stream=True
                )
                answer.close()
            delivery.last_status, delivery.last_error = answer.status_code, ""
            ok = 200 <= answer.status_code < 300
            if answer.is_redirect:
                delivery.last_error = "redirect refused: receivers are not followed elsewhere"
        except requests.RequestException as exc:
            delivery.last_status, delivery.last_error = None, failure_text(exc)
        except ValidationFailed:
            delivery.last_status, delivery.last_error = None, "the signing secret cannot be decrypted"
        if ok:
            delivery.state, delivery.delivered_at = DeliveryState.DELIVERED, now
        elif delivery.attempts > len(DELIVERY_BACKOFF):
            delivery.state = DeliveryState.GAVE_UP
        else:
            delivery.next_attempt_at = now + timedelta(seconds=DELIVERY_BACKOFF[delivery.attempts - 1])
        delivery.save()
    return delivery


@dataclass(frozen=True)
class Standing:
    sli: Decimal | None
    budget_remaining: Decimal | None
    burn: dict[str, Decimal | None]


def standing(*, slo: Slo, now: datetime | None = None) -> Standing:
    """The SLO over its window, and each burn-rate window, as the UI and the metrics show them."""
    now = now or timezone.now()
    kind = sli_kind(slo.sli)
    end = _evaluated_to(slo, kind, now) if kind else now
    length = timedelta(days=slo.window_days)
    samples = [
        Sample(s.start, s.end, s.good, s.total)
        for s in SliSample.objects.filter(slo=slo, start__gte=end - length)
    ]
    burns: dict[str, Decimal | None] = {}
    for rule_window in sorted({r.long for r in RULES} | {r.short for r in RULES}):
        burns[_label(rule_window)] = burn_rate(samples, objective=slo.objective, end=end, length=rule_window)
    return Standing(
        sli=window(samples, end=end, length=length).sli,
        budget_remaining=budget_remaining(samples, objective=slo.objective, end=end, length=length),
        burn=burns,
    )


def _label(length: timedelta) -> str:
    minutes = int(length.total_seconds() // 60)
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"
