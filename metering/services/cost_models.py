"""On-premises cost models: derive a GE-hour price from what the cards cost and, with an effective
date, create the rate card at that price (finance may still type a price by hand instead)."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Forbidden, ValidationFailed
from metering.chargeback.cost_model import CostInputs, Derivation, derive_price
from metering.models import CostModel
from metering.services.currency import validate_currency
from metering.services.rates import create_rate_card, may_price

AUDITED = (
    "gpu_model", "flavor_id", "currency", "purchase_price_per_card", "amortisation_months",
    "watts_under_load", "price_per_kwh", "pue", "hosting_per_card_month", "hours_per_month",
    "price_per_ge_hour", "rate_card_id",
)  # fmt: skip


def derivation_of(inputs: CostInputs) -> Derivation:
    """The derivation, or a 400 naming the first input out of range."""
    problems = inputs.problems()
    if problems:
        field, message = problems[0]
        raise ValidationFailed(f"{field.replace('_', ' ')} {message}", field=field)
    return derive_price(inputs)


def inputs_of(model: CostModel) -> CostInputs:
    return CostInputs(
        purchase_price_per_card=model.purchase_price_per_card,
        amortisation_months=model.amortisation_months,
        watts_under_load=model.watts_under_load,
        price_per_kwh=model.price_per_kwh,
        pue=model.pue,
        hosting_per_card_month=model.hosting_per_card_month,
        hours_per_month=model.hours_per_month,
    )


def create_cost_model(
    *,
    actor: Any,
    gpu_model: str,
    currency: str,
    inputs: CostInputs,
    effective_from: datetime,
    effective_to: datetime | None = None,
    flavor_id: uuid.UUID | None = None,
) -> CostModel:
    """Derive the price of ``inputs`` and create the rate card at it from ``effective_from``, with the
    cost model beside it, in one transaction (create_rate_card's locks and checks apply). Audited."""
    if not may_price(actor):
        raise Forbidden("Only finance and platform-admins set prices.")
    validate_currency(currency)
    derivation = derivation_of(inputs)
    with transaction.atomic():
        card = create_rate_card(
            actor=actor,
            gpu_model=gpu_model,
            flavor_id=flavor_id,
            currency=currency,
            price_per_ge_hour=derivation.price_per_ge_hour,
            effective_from=effective_from,
            effective_to=effective_to,
            note=f"derived: cost model, {inputs.purchase_price_per_card} {currency} a card",
        )
        model = CostModel.objects.create(
            gpu_model=gpu_model,
            flavor_id=flavor_id,
            currency=currency,
            purchase_price_per_card=inputs.purchase_price_per_card,
            amortisation_months=inputs.amortisation_months,
            watts_under_load=inputs.watts_under_load,
            price_per_kwh=inputs.price_per_kwh,
            pue=inputs.pue,
            hosting_per_card_month=inputs.hosting_per_card_month,
            hours_per_month=inputs.hours_per_month,
            price_per_ge_hour=derivation.price_per_ge_hour,
            rate_card=card,
            created_by=actor,
        )
        record_event(actor=actor, action="cost_model.created", obj=model, after=snapshot(model, AUDITED))
    return model


def steps_of(model: CostModel) -> list[dict[str, str]]:
    """The derivation of a stored model, JSON-ready (for the API and the page)."""
    derivation = derive_price(inputs_of(model))
    rows = [{"name": s.name, "formula": s.formula, "per_card_hour": str(s.shown)} for s in derivation.steps]
    rows.append(
        {
            "name": "price per GE-hour",
            "formula": "capital + hosting + energy, half-even to 6 places",
            "per_card_hour": str(derivation.price_per_ge_hour),
        }
    )
    return rows


ZERO = Decimal(0)
