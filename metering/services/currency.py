"""Currencies: ISO 4217 codes only, and one currency per billing period unless finance sets an
exchange rate for the second (a month's totals then still add up in one currency)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q

from gpuplatform.audit.services import record_event
from gpuplatform.errors import Conflict, Forbidden, ValidationFailed
from metering.chargeback.currencies import is_iso_4217
from metering.models import BillingPeriod, Credit, ExchangeRate, PeriodState, RateCard


def validate_currency(code: str, field: str = "currency") -> str:
    """``code`` when it is an ISO 4217 code in capitals, else a 400 naming the field."""
    if not isinstance(code, str) or not is_iso_4217(code):
        raise ValidationFailed(
            f"currency must be an ISO 4217 code in capitals, such as USD or EUR (not {code!r})", field=field
        )
    return code


def currencies_of(
    *, start: datetime, end: datetime | None, period: BillingPeriod | None = None, other_than: Any = None
) -> set[str]:
    """The currencies priced over [start, end): rate cards in force (but the card ``other_than``,
    one being edited), and credits of ``period``."""
    cards = RateCard.objects.filter(Q(effective_to__isnull=True) | Q(effective_to__gt=start))
    if other_than is not None:
        cards = cards.exclude(pk=other_than)
    if end is not None:
        cards = cards.filter(effective_from__lt=end)
    found = set(cards.values_list("currency", flat=True))
    if period is not None:
        found |= set(Credit.objects.filter(period=period).values_list("currency", flat=True))
    return found


def _refuse_mixing(*, period: BillingPeriod, currency: str, present: set[str]) -> None:
    converted = set(ExchangeRate.objects.filter(period=period).values_list("currency", flat=True))
    unconverted = (present | {currency}) - converted
    if len(unconverted) > 1:
        others = ", ".join(sorted(unconverted - {currency}))
        raise Conflict(
            f"billing period {period.label} is priced in {others}: {currency} needs an exchange rate "
            "for it first (one currency per period)",
            code="currency_mix",
        )


def check_period_currency(*, period: BillingPeriod, currency: str, other_than: Any = None) -> None:
    """Refuse a second currency in ``period`` unless finance set its exchange rate."""
    _refuse_mixing(
        period=period,
        currency=currency,
        present=currencies_of(
            start=period.starts_at, end=period.ends_at, period=period, other_than=other_than
        ),
    )


def check_card_currency(
    *, currency: str, start: datetime, end: datetime | None, other_than: Any = None
) -> None:
    """A rate card over [start, end) (new, or ``other_than`` edited) keeps each period it touches to
    one currency: checked on the periods that exist, and on the cards in force over the same span."""
    periods = BillingPeriod.objects.filter(ends_at__gt=start)
    if end is not None:
        periods = periods.filter(starts_at__lt=end)
    for period in periods.order_by("starts_at"):
        check_period_currency(period=period, currency=currency, other_than=other_than)
    present = currencies_of(start=start, end=end, other_than=other_than)
    if present - {currency} and not periods.exists():
        raise Conflict(
            f"rate cards then are in {', '.join(sorted(present - {currency}))}: one currency per period",
            code="currency_mix",
        )


def set_exchange_rate(*, actor: Any, period_id: Any, currency: str, rate: Decimal) -> ExchangeRate:
    """Finance sets what one ``currency`` is worth in the period's currency. Locks the period;
    refused on a closed one; setting it again replaces it (audited both times)."""
    if not (getattr(actor, "is_finance", False) or getattr(actor, "is_platform_admin", False)):
        raise Forbidden("Only finance and platform-admins set exchange rates.")
    validate_currency(currency)
    if rate <= 0:
        raise ValidationFailed("an exchange rate is positive", field="rate")
    with transaction.atomic():
        period = BillingPeriod.objects.select_for_update().get(pk=period_id)
        if period.state == PeriodState.CLOSED:
            raise Conflict(f"billing period {period.label} is closed", code="period_closed")
        found, _ = ExchangeRate.objects.update_or_create(
            period=period, currency=currency, defaults={"rate": rate}
        )
        record_event(
            actor=actor,
            action="exchange_rate.set",
            obj=period,
            after={"currency": currency, "rate": str(rate)},
        )
    return found
