"""One row per background loop: when it last succeeded, and how long it may stay silent."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models


class Heartbeat(models.Model):
    # Stable and chosen by the loop: "quotas.admission_loop", "inventory.sync:<cluster id>:nodes".
    name = models.CharField(primary_key=True, max_length=200)
    label = models.CharField(max_length=200)  # what a person reads: "Inventory sync of east: nodes"
    url = models.CharField(max_length=300, blank=True)  # where its state matters
    beat_at = models.DateTimeField()  # the last success
    stale_after_seconds = models.FloatField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} at {self.beat_at.isoformat()}"

    def stale_at(self) -> datetime:
        return self.beat_at + timedelta(seconds=self.stale_after_seconds)

    def is_stale(self, now: datetime) -> bool:
        return now > self.stale_at()
