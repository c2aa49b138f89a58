"""Rate cards: created, changed before they take effect, and ended by finance or platform-admins;
audited, never overlapping; with warnings for values that are valid but probably not meant."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from gpuplatform.input_warnings import InputWarning
from inventory.models import Node
from metering.models import Basis, BillingPeriod, PeriodState, RateCard
from metering.services.currency import check_card_currency, validate_currency
from quotas.models import Flavor

AUDITED = (
    "gpu_model", "flavor_id", "currency", "price_per_ge_hour", "energy_price_per_kwh", "basis",
    "effective_from", "effective_to", "note",
)  # fmt: skip


def may_price(actor: Any) -> bool:
    return bool(getattr(actor, "is_platform_admin", False) or getattr(actor, "is_finance", False))


def _whole_hour(value: datetime, field: str) -> datetime:
    if value.tzinfo is None:
        raise ValidationFailed(f"{field} must be timezone-aware", field=field)
    value = value.astimezone(UTC)
    # Prices change only on whole hours, so every hour of the ledger has exactly one price.
    if (value.minute, value.second, value.microsecond) != (0, 0, 0):
        raise ValidationFailed(f"{field} must fall on a whole hour", field=field)
    return value


def _overlapping(*, gpu_model: str, flavor_id: uuid.UUID | None, start: datetime, end: datetime | None) -> Q:
    q = Q(gpu_model=gpu_model, flavor_id=flavor_id) & (
        Q(effective_to__isnull=True) | Q(effective_to__gt=start)
    )
    return q & Q(effective_from__lt=end) if end is not None else q


def _refuse_closed(*, start: datetime, end: datetime | None) -> None:
    closed = BillingPeriod.objects.filter(state=PeriodState.CLOSED, ends_at__gt=start)
    if end is not None:
        closed = closed.filter(starts_at__lt=end)
    label = closed.order_by("starts_at").values_list("label", flat=True).first()
    if label:
        raise Conflict(f"billing period {label} is closed: its prices cannot change", code="period_closed")


def _check_values(
    *, currency: str, price_per_ge_hour: Decimal, energy_price_per_kwh: Decimal | None, basis: str,
    blend_weight: Decimal,
) -> None:  # fmt: skip
    validate_currency(currency)
    if price_per_ge_hour < 0 or (energy_price_per_kwh is not None and energy_price_per_kwh < 0):
        raise ValidationFailed("prices cannot be negative", field="price_per_ge_hour")
    if basis not in Basis.values:
        raise ValidationFailed(f"basis must be one of {', '.join(Basis.values)}", field="basis")
    if not Decimal(0) <= blend_weight <= Decimal(1):
        raise ValidationFailed("blend_weight lies between 0 and 1", field="blend_weight")


def _check_fits(
    *, gpu_model: str, flavor: Flavor | None, currency: str, start: datetime, end: datetime | None,
    other_than: uuid.UUID | None = None,
) -> None:  # fmt: skip
    """Locks the model's cards, then refuses an overlap with another card, any change to a closed
    period's hours and a second currency in a period. Inside the caller's transaction."""
    flavor_id = flavor.pk if flavor is not None else None
    list(RateCard.objects.select_for_update().filter(gpu_model=gpu_model).order_by("pk"))
    _refuse_closed(start=start, end=end)
    check_card_currency(currency=currency, start=start, end=end, other_than=other_than)
    others = RateCard.objects.exclude(pk=other_than) if other_than is not None else RateCard.objects.all()
    clash = others.filter(_overlapping(gpu_model=gpu_model, flavor_id=flavor_id, start=start, end=end))
    if clash.exists():
        raise Conflict(
            f"overlaps the rate card {clash.order_by('effective_from').first()}", code="rate_card_overlap"
        )
    if flavor is not None and flavor.pool_id is not None:
        # A flavor's card prices its pool's card-hours, idle ones included: two flavors on one
        # pool with cards at the same time would give the pool two prices.
        sibling = others.filter(
            Q(flavor__pool_id=flavor.pool_id) & ~Q(flavor_id=flavor.pk),
            Q(effective_to__isnull=True) | Q(effective_to__gt=start),
            **({"effective_from__lt": end} if end is not None else {}),
        )
        if sibling.exists():
            raise Conflict("another flavor of the same pool has a rate card then", code="rate_card_overlap")


def create_rate_card(
    *,
    actor: Any,
    gpu_model: str,
    currency: str,
    price_per_ge_hour: Decimal,
    effective_from: datetime,
    effective_to: datetime | None = None,
    flavor_id: uuid.UUID | None = None,
    energy_price_per_kwh: Decimal | None = None,
    basis: str = Basis.ALLOCATION,
    blend_weight: Decimal = Decimal("0.5"),
    note: str = "",
) -> RateCard:
    """Add a price. Locks the same model's cards, refuses an overlap (the exclusion constraint is the
    last word on PostgreSQL) and any change to a closed period's hours."""
    if not may_price(actor):
        raise Forbidden("Only finance and platform-admins set prices.")
    _check_values(
        currency=currency,
        price_per_ge_hour=price_per_ge_hour,
        energy_price_per_kwh=energy_price_per_kwh,
        basis=basis,
        blend_weight=blend_weight,
    )
    start = _whole_hour(effective_from, "effective_from")
    end = _whole_hour(effective_to, "effective_to") if effective_to is not None else None
    if end is not None and end <= start:
        raise ValidationFailed("effective_to must come after effective_from", field="effective_to")
    with transaction.atomic():
        flavor = None
        if flavor_id is not None:
            flavor = Flavor.objects.filter(pk=flavor_id).first()
            if flavor is None:
                raise NotFound("No such flavor.")
            if flavor.gpu_model and flavor.gpu_model != gpu_model:
                raise ValidationFailed(
                    f"flavor {flavor.name} is of GPU model {flavor.gpu_model}, not {gpu_model}",
                    field="flavor",
                )
        _check_fits(gpu_model=gpu_model, flavor=flavor, currency=currency, start=start, end=end)
        card = RateCard.objects.create(
            gpu_model=gpu_model,
            flavor=flavor,
            currency=currency,
            price_per_ge_hour=price_per_ge_hour,
            energy_price_per_kwh=energy_price_per_kwh,
            blend_weight=blend_weight,
            basis=basis,
            effective_from=start,
            effective_to=end,
            note=note,
        )
        record_event(actor=actor, action="rate_card.created", obj=card, after=snapshot(card, AUDITED))
    return card


def end_rate_card(*, actor: Any, rate_card_id: uuid.UUID, effective_to: datetime) -> RateCard:
    """End a card at a whole hour (a new price then starts there). Locks the card; idempotent for the
    same end; refuses to move hours of a closed period."""
    if not may_price(actor):
        raise Forbidden("Only finance and platform-admins set prices.")
    end = _whole_hour(effective_to, "effective_to")
    with transaction.atomic():
        card = RateCard.objects.select_for_update().filter(pk=rate_card_id).order_by("pk").first()
        if card is None:
            raise NotFound("No such rate card.")
        if card.effective_to == end:
            return card
        if end <= card.effective_from:
            raise ValidationFailed("effective_to must come after effective_from", field="effective_to")
        if card.effective_to is not None and end > card.effective_to:
            raise ValidationFailed("a rate card can be shortened, not lengthened", field="effective_to")
        _refuse_closed(start=end, end=card.effective_to)
        before = snapshot(card, AUDITED)
        card.effective_to = end
        card.save(update_fields=["effective_to"])
        record_event(
            actor=actor, action="rate_card.ended", obj=card, before=before, after=snapshot(card, AUDITED)
        )
    return card


EDITABLE = (
    "currency", "price_per_ge_hour", "energy_price_per_kwh", "basis", "blend_weight", "effective_from",
    "effective_to", "note",
)  # fmt: skip


def update_rate_card(
    *, actor: Any, rate_card_id: uuid.UUID, now: datetime | None = None, **values: Any
) -> RateCard:
    """Change a card that has not taken effect yet (no hour has been priced with it); one in effect
    can only be ended (end_rate_card), so no priced hour ever changes price. Its GPU model and flavor
    stay. Locks the card and its model's cards; checked as on create; audited."""
    if not may_price(actor):
        raise Forbidden("Only finance and platform-admins set prices.")
    unknown = set(values) - set(EDITABLE)
    if unknown:
        raise ValidationFailed(
            f"cannot change {', '.join(sorted(unknown))} of a rate card", field=sorted(unknown)[0]
        )
    now = now or timezone.now()
    with transaction.atomic():
        card = RateCard.objects.select_for_update().filter(pk=rate_card_id).order_by("pk").first()
        if card is None:
            raise NotFound("No such rate card.")
        if card.effective_from <= now:
            raise Conflict(
                "this rate card is in effect: hours have been priced with it, so it can only be ended",
                code="rate_card_in_effect",
            )
        before = snapshot(card, AUDITED)
        for name, value in values.items():
            setattr(card, name, value)
        _check_values(
            currency=card.currency,
            price_per_ge_hour=card.price_per_ge_hour,
            energy_price_per_kwh=card.energy_price_per_kwh,
            basis=card.basis,
            blend_weight=card.blend_weight,
        )
        start = _whole_hour(card.effective_from, "effective_from")
        end = _whole_hour(card.effective_to, "effective_to") if card.effective_to is not None else None
        if start <= now:
            raise ValidationFailed(
                "a rate card not yet in effect keeps a start in the future", field="effective_from"
            )
        if end is not None and end <= start:
            raise ValidationFailed("effective_to must come after effective_from", field="effective_to")
        card.effective_from, card.effective_to = start, end
        _check_fits(
            gpu_model=card.gpu_model, flavor=card.flavor, currency=card.currency, start=start, end=end,
            other_than=card.pk,
        )  # fmt: skip
        card.save()
        after = snapshot(card, AUDITED)
        if after != before:
            record_event(actor=actor, action="rate_card.updated", obj=card, before=before, after=after)
    return card


def rate_card_warnings(
    *, gpu_model: str, currency: str, other_than: uuid.UUID | None = None
) -> list[InputWarning]:
    """Valid but probably not meant: a GPU model no cluster reports, a currency unlike the other
    cards' (a report sums per currency, so two currencies make two totals)."""
    found: list[InputWarning] = []
    known = set(
        Node.objects.filter(present=True).exclude(model_key="").values_list("model_key", flat=True).distinct()
    )
    if gpu_model and gpu_model not in known:
        listed = ", ".join(sorted(k for k in known if k)) or "none yet"
        found.append(
            InputWarning(
                code="rate_card.unknown_model",
                message=f"No cluster reports a GPU of model {gpu_model} (models in the inventory: {listed}): "
                "this card prices nothing until one does.",
                field="gpu_model",
            )
        )
    cards = RateCard.objects.exclude(pk=other_than) if other_than is not None else RateCard.objects.all()
    others = set(cards.values_list("currency", flat=True).distinct())
    if currency and others and currency.upper() not in others:
        found.append(
            InputWarning(
                code="rate_card.other_currency",
                message=f"The other rate cards are in {', '.join(sorted(others))}, this one in "
                f"{currency.upper()}: reports will show separate totals per currency.",
                field="currency",
            )
        )
    return found
