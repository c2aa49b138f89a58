"""Figures and times as people read them (docs/ui.md, "Numbers and dates"), one filter per kind, so no
page prints a raw Decimal ("34.353584999999990", "1.600000 USD") or a second date format.

    {{ x|ge }}              GE: three decimals at most, two at least           0.143, 2.00, 1,204.50
    {{ x|qty }}             a count or quantity, thousands grouped             5,000, 2.5
    {{ x|money:currency }}  the currency's minor unit (ISO 4217) and its code  1.60 USD, 1,200 JPY
    {{ x|pct }}             a fraction as a percentage                         99.9 %, 99.5 %, 12 %
    {{ t|when }}            a moment, in the one format, with its time zone    2025-03-11 14:05 UTC
    {{ d|day }}             a calendar day                                     2025-03-11

A rounded figure keeps the exact one in a ``title`` (the API has it too); ``:"text"`` (or, for money,
passing the figure through ``money_text``) gives the plain string for use inside an attribute. An
absent value is "" so that ``|default:"—"`` reads as it does on Django's own filters.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from django import template
from django.utils import dateformat, timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html

from gpuplatform.currency import minor_unit

register = template.Library()

TEXT = "text"
WHEN_FORMAT = "Y-m-d H:i T"
DAY_FORMAT = "Y-m-d"


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None


def grouped(value: Decimal, *, fewest: int, most: int) -> str:
    """``value`` rounded half-even to ``most`` places, trailing zeros dropped down to ``fewest``,
    thousands grouped with commas."""
    rounded = value.quantize(Decimal(1).scaleb(-most), rounding=ROUND_HALF_EVEN)
    if rounded == 0:
        rounded = abs(rounded)  # never "-0.000"
    text = format(rounded, ",f")
    if most > fewest and "." in text:
        whole, fraction = text.split(".")
        fraction = fraction.rstrip("0").ljust(fewest, "0")
        text = f"{whole}.{fraction}" if fraction else whole
    return text


def _shown(shown: str, exact: str, mode: str, *, lost: bool = True) -> str:
    """``shown``, with ``exact`` in a title when rounding ``lost`` something."""
    if mode == TEXT or not lost:
        return shown
    return format_html('<span title="{}">{}</span>', exact, shown)


def _lost(number: Decimal, places: int) -> bool:
    return number != number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


@register.filter
def ge(value: Any, mode: str = "") -> str:
    number = _decimal(value)
    if number is None:
        return ""
    return _shown(grouped(number, fewest=2, most=3), str(value), mode, lost=_lost(number, 3))


@register.filter
def qty(value: Any, mode: str = "") -> str:
    number = _decimal(value)
    if number is None:
        return ""
    return _shown(grouped(number, fewest=0, most=3), str(value), mode, lost=_lost(number, 3))


@register.filter
def pct(fraction: Any, mode: str = "") -> str:
    """0.999 -> "99.9 %": up to three decimals, so neighbouring objectives never round to one figure."""
    number = _decimal(fraction)
    if number is None:
        return ""
    shown = f"{grouped(number * 100, fewest=0, most=3)} %"
    return _shown(shown, str(fraction), mode, lost=_lost(number * 100, 3))


@register.filter
def money(amount: Any, currency: str = "") -> str:
    number = _decimal(amount)
    if number is None:
        return ""
    places = minor_unit(currency) if currency else 2
    shown = grouped(number, fewest=places, most=places)
    shown = f"{shown} {currency}" if currency else shown
    exact = f"{amount} {currency}" if currency else str(amount)
    return _shown(shown, exact, "", lost=_lost(number, places))


@register.filter
def money_text(amount: Any, currency: str = "") -> str:
    number = _decimal(amount)
    if number is None:
        return ""
    places = minor_unit(currency) if currency else 2
    shown = grouped(number, fewest=places, most=places)
    return f"{shown} {currency}" if currency else shown


@register.filter
def when(moment: datetime | None, mode: str = "") -> str:
    """A moment in the one format every page uses, in the site's time zone, named."""
    if not moment:
        return ""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    shown = dateformat.format(local, WHEN_FORMAT)
    if mode == TEXT:
        return shown
    return format_html('<time datetime="{}">{}</time>', moment.isoformat(), shown)


@register.filter
def day(value: date | None) -> str:
    if not value:
        return ""
    if isinstance(value, datetime) and timezone.is_aware(value):
        value = timezone.localtime(value)
    return dateformat.format(value, DAY_FORMAT)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


@register.filter
def is_number(value: Any) -> bool:
    return _is_number(value)


@register.filter
def cell(value: Any) -> Any:
    """A table cell of mixed content: a figure as ``qty`` prints it, anything else as it is."""
    return qty(value) if _is_number(value) else value


@register.filter
def duration_words(seconds: Any) -> str:
    """A span of seconds in the largest whole unit that fits: "3 days", "36 hours", "90 minutes"."""
    if not _is_number(seconds) or seconds <= 0:
        return ""
    whole = int(seconds)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if whole % size == 0:
            count = whole // size
            return f"{count:,} {unit}{'' if count == 1 else 's'}"
    return f"{whole:,} seconds"


_PLAIN = re.compile(r"-?\d{1,18}(\.\d{1,18})?")
_HUGE = Decimal(10) ** 18


@register.filter
def changed_value(value: Any) -> str:
    """A field's value in the audit log's before → after: figures and moments as people read them
    (an exact figure in a title), anything else as text cut to 80 characters."""
    # Only plain figures: a hex id such as "52e80" would otherwise read as 5.2e81.
    plain = isinstance(value, (int, float, Decimal)) or (isinstance(value, str) and _PLAIN.fullmatch(value))
    number = _decimal(value) if plain and not isinstance(value, bool) else None
    if number is not None and number.is_finite() and abs(number) < _HUGE:
        return qty(number)
    moment = parse_datetime(value) if isinstance(value, str) and "T" in value else None
    if moment is not None:
        return when(moment, TEXT)
    text = str(value)
    return text if len(text) <= 80 else text[:79] + "…"
