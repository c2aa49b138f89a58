"""Where a cluster's per-share usage comes from: its Prometheus (or Thanos/Mimir: same API), and the
metric and label names it carries there (metering/collection/config.py validates them)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from inventory.scoping import PlatformOnlyQuerySet


class MetricsSource(models.Model):
    cluster = models.OneToOneField("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=500)
    enabled = models.BooleanField(default=True)
    # Only what differs from the defaults (metering.collection.config.SourceConfig); validated on write.
    config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = PlatformOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["cluster__name"]

    def __str__(self) -> str:
        return f"metrics source of {self.cluster_id}: {self.url}"
