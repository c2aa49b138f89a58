"""Hours whose allocations changed after they may have been metered: the inventory records them (it
knows when a start or end lies in an hour already over), metering reads them and re-meters (DESIGN
§5.5). Its own module so both the sync and the services write it without importing each other."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from django.utils import timezone

from inventory.models import ChangedHours


def _hour_of(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def mark_changed_hours(
    *, cluster_id: uuid.UUID, times: Iterable[datetime], now: datetime | None = None
) -> ChangedHours | None:
    """Record that allocations of ``cluster_id`` started or ended at ``times``: the hours from the
    earliest of them that lies in an hour already over, up to the current hour, may have been metered
    on what the ledger said before. One row per call (a sync batch); nothing when every change is in
    the current hour (the hourly metering has not read it yet)."""
    this_hour = _hour_of(now or timezone.now())
    past = [_hour_of(t) for t in times if _hour_of(t) < this_hour]
    if not past:
        return None
    return ChangedHours.objects.create(
        cluster_id=cluster_id, first_hour=min(past), end_hour=this_hour, recorded_at=now or timezone.now()
    )
