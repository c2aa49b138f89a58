"""``{{ amount|money:currency }}``: an amount shown to its currency's minor unit (2.0000 USD -> 2.00)."""

from __future__ import annotations

from decimal import Decimal

from django import template

from metering.chargeback.money import minor_unit

register = template.Library()


@register.filter
def money(amount: Decimal | str | None, currency: str = "") -> str:
    if amount in (None, ""):
        return "unpriced"
    places = minor_unit(currency) if currency else 2
    return format(Decimal(amount).quantize(Decimal(1).scaleb(-places)), "f")
