"""Billing periods: months cut in BILLING_TIMEZONE, created on first need, open -> closing -> closed."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound
from metering.models import BillingPeriod, PeriodState
from metering.services.reports import prepare_report, write_report
from metering.services.statements import issue_statements


def month_of(*, at: datetime) -> tuple[str, datetime, datetime]:
    """Label, start and end (UTC-aware) of the billing month holding ``at``."""
    zone = ZoneInfo(settings.BILLING_TIMEZONE)
    local = at.astimezone(zone)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return f"{start:%Y-%m}", start.astimezone(ZoneInfo("UTC")), end.astimezone(ZoneInfo("UTC"))


def ensure_period(*, at: datetime) -> BillingPeriod:
    """The period holding ``at``, created open when missing. Idempotent; safe under concurrency (the
    unique label decides, the loser reads the winner's row)."""
    label, start, end = month_of(at=at)
    found = BillingPeriod.objects.filter(label=label).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return BillingPeriod.objects.create(
                label=label, starts_at=start, ends_at=end, timezone=settings.BILLING_TIMEZONE
            )
    except IntegrityError:
        return BillingPeriod.objects.get(label=label)


def next_open_period(*, after: BillingPeriod) -> BillingPeriod:
    """The first period after ``after`` that is not closed (created when missing): where late data lands."""
    at = after.ends_at
    while True:
        period = ensure_period(at=at)
        if period.state != PeriodState.CLOSED:
            return period
        at = period.ends_at


AUDITED = ("state", "closing_at", "closed_at", "closed_by_id", "report_built_at")


def _may_close(actor: Any) -> bool:
    return bool(getattr(actor, "is_finance", False) or getattr(actor, "is_platform_admin", False))


def _lock_unclosed(*, actor: Any, period_id: uuid.UUID) -> BillingPeriod:
    """The period, locked, for a closing step: finance or platform-admins only, never a closed one.
    Runs inside the caller's transaction."""
    if not _may_close(actor):
        raise Forbidden("Only finance and platform-admins close billing periods.")
    period = BillingPeriod.objects.select_for_update().filter(pk=period_id).first()
    if period is None:
        raise NotFound("No such billing period.")
    if period.state == PeriodState.CLOSED:
        raise Conflict(f"billing period {period.label} is already closed", code="period_closed")
    return period


def start_closing_period(*, actor: Any, period_id: uuid.UUID, now: datetime | None = None) -> BillingPeriod:
    """open -> closing once the month is over: the grace period in which late data still lands in
    place. Locks the period; idempotent (closing stays closing)."""
    now = now or timezone.now()
    with transaction.atomic():
        period = _lock_unclosed(actor=actor, period_id=period_id)
        if period.state == PeriodState.CLOSING:
            return period
        if now < period.ends_at:
            raise Conflict(f"billing period {period.label} has not ended yet", code="period_not_over")
        before = snapshot(period, AUDITED)
        period.state, period.closing_at = PeriodState.CLOSING, now
        period.save(update_fields=["state", "closing_at"])
        record_event(
            actor=actor,
            action="billing_period.closing",
            obj=period,
            before=before,
            after=snapshot(period, AUDITED),
        )
    return period


def close_billing_period(
    *,
    actor: Any,
    period_id: uuid.UUID,
    now: datetime | None = None,
    idle: str | None = None,
    acknowledge_unpriced: bool = False,
) -> BillingPeriod:
    """Build the final report and close: from then on the database refuses any change to the period's
    rows, and late data becomes adjustments in the next open period. Locks the period; closing a
    closed period is refused (409), so a double click cannot rebuild a frozen report. A final report
    with unpriced card-hours closes only with ``acknowledge_unpriced`` (else 409, nothing written):
    they would be frozen at no cost; the audit event records the hours and the acknowledgement."""
    now = now or timezone.now()
    # The final report is computed first, from committed rows and in slices, outside the transaction:
    # on the demo's SQLite a write transaction stops every other writer while it lasts. Under the
    # lock it is stored if nothing it was read from changed meanwhile, else computed again there.
    found = BillingPeriod.objects.filter(pk=period_id).first() if _may_close(actor) else None
    prepared = None
    if found is not None and found.state == PeriodState.CLOSING and now >= found.ends_at:
        prepared = prepare_report(period=found, idle=idle)
    with transaction.atomic():
        period = _lock_unclosed(actor=actor, period_id=period_id)
        if now < period.ends_at:
            raise Conflict(f"billing period {period.label} has not ended yet", code="period_not_over")
        if period.state != PeriodState.CLOSING:
            # open -> closing -> closed: the grace period is where late data still lands in place.
            raise Conflict(
                f"billing period {period.label} is open: start closing it (the grace period) first",
                code="period_not_closing",
            )
        before = snapshot(period, AUDITED)
        write_report(period=period, at=now, idle=idle, prepared=prepared)
        unpriced = Decimal(period.summary.get("unpriced_card_hours", "0"))
        if unpriced and not acknowledge_unpriced:
            # Raised inside the transaction: the report just written is rolled back with it.
            raise Conflict(
                f"{unpriced.normalize():f} card-hours of {period.label} have no rate card: add one, or "
                "acknowledge that they close unpriced (at no cost).",
                code="unpriced_usage",
            )
        issue_statements(period=period, at=now)
        period.state, period.closed_at, period.closed_by = PeriodState.CLOSED, now, actor
        period.closing_at = period.closing_at or now
        period.save(update_fields=["state", "closed_at", "closed_by", "closing_at"])
        record_event(
            actor=actor,
            action="billing_period.closed",
            obj=period,
            before=before,
            after={
                **snapshot(period, AUDITED),
                "unpriced_card_hours": str(unpriced),
                "unpriced_acknowledged": bool(unpriced and acknowledge_unpriced),
            },
        )
    return period
