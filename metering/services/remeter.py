"""Meter again the hours whose allocations changed after they were metered.

The inventory records each change the sync learnt of late (``inventory.ChangedHours``: an allocation
that started or ended in an hour already over). Each hour of such a record that the allocation basis
had metered is metered again: an open (or closing) period's rows are rewritten in place, a closed
one's differences become adjustments in the next open period (metering/services/adjustments.py),
net of what was booked, so a record handled twice, or two records over one hour, book nothing twice.
Hours never metered are left to the hourly job and backfills: they read the ledger as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from inventory.models import ChangedHours
from metering.models import MeteredHour
from metering.services.ledger import LEDGER_SOURCE, meter_allocation_hour


@dataclass(frozen=True)
class HoursRemetered:
    change_id: int
    hours: int
    adjustments: int
    skipped: bool  # already handled (or gone): nothing was metered


def pending_changed_hours(*, limit: int = 500) -> list[int]:
    """Ids of the recorded changes not yet handled, oldest first: what the beat job queues."""
    return list(
        ChangedHours.objects.filter(done_at__isnull=True).order_by("id").values_list("pk", flat=True)[:limit]
    )


def remeter_changed_hours(*, change_id: int, now: datetime | None = None) -> HoursRemetered:
    """Meter again, on the allocation basis, every metered hour of the change ``change_id``, then mark
    it done. Each hour locks its own MeteredHour (meter_allocation_hour); idempotent: a change already
    done is skipped, and metering an hour again books only what still differs."""
    now = now or timezone.now()
    change = ChangedHours.objects.filter(pk=change_id).first()
    if change is None or change.done_at is not None:
        return HoursRemetered(change_id, 0, 0, True)
    hours = list(
        MeteredHour.objects.filter(
            cluster_id=change.cluster_id,
            source=LEDGER_SOURCE,
            hour__gte=change.first_hour,
            hour__lt=change.end_hour,
        )
        .order_by("hour")
        .values_list("hour", flat=True)
    )
    adjustments = 0
    for hour in hours:
        adjustments += meter_allocation_hour(cluster_id=change.cluster_id, hour=hour, now=now).adjustments
    # Conditional: a second worker that raced this one through the same hours finds it done.
    ChangedHours.objects.filter(pk=change_id, done_at__isnull=True).update(done_at=now)
    return HoursRemetered(change_id, len(hours), adjustments, False)
