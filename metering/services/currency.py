"""Currencies: ISO 4217 codes only, and one currency per billing period unless finance sets an
exchange rate for the second (a month's totals then still add up in one currency)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.audit.services import record_event
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from metering.chargeback.currencies import is_iso_4217
from metering.chargeback.money import round_money
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


RATE_PLACES = 8  # ExchangeRate.rate
PRICE_PLACES = Decimal("0.000001")  # a rate card's price per GE-hour


def base_currency(*, period: BillingPeriod) -> str:
    """The period's own currency: the one its rate cards and credits are priced in that has no
    exchange rate ("" when nothing is priced yet). Mixing is refused, so there is at most one."""
    present = currencies_of(start=period.starts_at, end=period.ends_at, period=period)
    converted = set(ExchangeRate.objects.filter(period=period).values_list("currency", flat=True))
    unconverted = sorted(present - converted)
    return unconverted[0] if len(unconverted) == 1 else ""


def converted_cards(*, cards: list[RateCard], period: BillingPeriod) -> list[RateCard]:
    """``cards`` as the period prices them: a card in a currency finance set an exchange rate for is
    priced in the period's currency at price x rate, rounded half-even to the card's six places (so
    a line's amount is its quantity x the unit price it shows); the card itself is unchanged."""
    rates = dict(ExchangeRate.objects.filter(period=period).values_list("currency", "rate"))
    base = base_currency(period=period) if rates else ""
    if not base:
        return cards
    priced = []
    for card in cards:
        rate = rates.get(card.currency)
        if rate is not None and card.currency != base:
            card = copy.copy(card)
            card.price_per_ge_hour = (card.price_per_ge_hour * rate).quantize(PRICE_PLACES, ROUND_HALF_EVEN)
            card.currency = base
        priced.append(card)
    return priced


def amount_converter(*, period: BillingPeriod) -> Callable[[Decimal, str], tuple[Decimal, str]]:
    """(amount, currency) -> the same in the period's currency where finance set a rate for it,
    converted and rounded once, half-even, to the minor unit; otherwise unchanged (credits)."""
    rates = dict(ExchangeRate.objects.filter(period=period).values_list("currency", "rate"))
    base = base_currency(period=period) if rates else ""

    def convert(amount: Decimal, currency: str) -> tuple[Decimal, str]:
        if base and currency != base and currency in rates:
            return round_money(amount * rates[currency], base), base
        return amount, currency

    return convert


def _valid_rate(rate: Any) -> Decimal:
    try:
        value = rate if isinstance(rate, Decimal) else Decimal(str(rate))
    except (InvalidOperation, ValueError) as error:
        raise ValidationFailed("an exchange rate is a number", field="rate") from error
    if not value.is_finite() or value <= 0:
        raise ValidationFailed("an exchange rate is a positive number", field="rate")
    if (
        value != value.quantize(Decimal(1).scaleb(-RATE_PLACES), ROUND_HALF_EVEN)
        or value >= Decimal(10) ** 10
    ):
        raise ValidationFailed(
            f"an exchange rate has at most {RATE_PLACES} decimal places and 10 digits before the point",
            field="rate",
        )
    return value


def set_exchange_rate(
    *,
    actor: Any,
    period_id: Any,
    currency: str,
    rate: Any,
    source: str,
    as_of: date,
) -> ExchangeRate:
    """Finance sets what one ``currency`` is worth in the period's currency, saying where the rate
    comes from (``source``) and its date (``as_of``). Locks the period; refused on a closed one and
    for the period's own currency; every check before any write, so a refusal changes nothing;
    setting it again replaces it (audited, before and after)."""
    if not (getattr(actor, "is_finance", False) or getattr(actor, "is_platform_admin", False)):
        raise Forbidden("Only finance and platform-admins set exchange rates.")
    validate_currency(currency)
    value = _valid_rate(rate)
    source = (source or "").strip()
    if not source:
        raise ValidationFailed(
            "say where the rate comes from (for example: ECB reference rate)", field="source"
        )
    if not isinstance(as_of, date):
        raise ValidationFailed("the rate's date is required", field="as_of")
    with transaction.atomic():
        period = BillingPeriod.objects.select_for_update().filter(pk=period_id).first()
        if period is None:
            raise NotFound("No such billing period.")
        if period.state == PeriodState.CLOSED:
            raise Conflict(f"billing period {period.label} is closed", code="period_closed")
        if currency == base_currency(period=period):
            raise Conflict(
                f"{currency} is billing period {period.label}'s own currency: it needs no exchange rate",
                code="own_currency",
                field="currency",
            )
        found = ExchangeRate.objects.filter(period=period, currency=currency).first()
        before = None if found is None else _rate_snapshot(found)
        if found is None:
            found = ExchangeRate(period=period, currency=currency)
        found.rate, found.source, found.as_of, found.set_by = value, source, as_of, actor
        found.created_at = timezone.now()
        found.save()
        record_event(
            actor=actor,
            action="exchange_rate.set",
            obj=period,
            before=before,
            after=_rate_snapshot(found),
        )
    return found


def _rate_snapshot(found: ExchangeRate) -> dict[str, str]:
    return {
        "currency": found.currency,
        "rate": str(found.rate),
        "source": found.source,
        "as_of": found.as_of.isoformat() if found.as_of else "",
    }
