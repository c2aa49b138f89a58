"""Which rate card prices which hours of a pool: a card for a flavor bound to the pool wins over the
GPU model's card; hours no card covers stay unpriced (shown, never priced at zero)."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from metering.models import RateCard


@dataclass(frozen=True)
class PriceSegment:
    start: datetime
    end: datetime
    card: RateCard | None


def load_cards(*, start: datetime, end: datetime) -> list[RateCard]:
    return list(
        RateCard.objects.filter(
            Q(effective_to__isnull=True) | Q(effective_to__gt=start), effective_from__lt=end
        )
        .select_related("flavor")
        .order_by("effective_from", "pk")
    )


def price_segments(
    *, cards: list[RateCard], pool_id: uuid.UUID | None, gpu_model: str, start: datetime, end: datetime
) -> list[PriceSegment]:
    """[start, end) cut where the price of (pool, model) changes, each piece with its card or None."""
    flavor_cards = [
        c for c in cards if c.flavor_id is not None and c.flavor is not None and c.flavor.pool_id == pool_id
    ]
    model_cards = [c for c in cards if c.flavor_id is None and c.gpu_model == gpu_model]
    mine = flavor_cards + model_cards
    cuts = {start, end}
    for c in mine:
        cuts.update(t for t in (c.effective_from, c.effective_to) if t is not None and start < t < end)
    points = sorted(cuts)
    segments: list[PriceSegment] = []
    for lo, hi in itertools.pairwise(points):
        card = _covering(flavor_cards, lo) or _covering(model_cards, lo)
        if segments and segments[-1].card == card and segments[-1].end == lo:
            segments[-1] = PriceSegment(segments[-1].start, hi, card)
        else:
            segments.append(PriceSegment(lo, hi, card))
    return segments


def _covering(cards: list[RateCard], at: datetime) -> RateCard | None:
    for c in cards:
        if c.effective_from <= at and (c.effective_to is None or at < c.effective_to):
            return c
    return None
