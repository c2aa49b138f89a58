"""Per-cluster metrics sources: set by platform-admins, validated, audited."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Forbidden, NotFound, ValidationFailed
from gpuplatform.outbound.configured import vet_user_url
from inventory.models import Cluster
from metering.collection.config import ConfigInvalid, SourceConfig, parse_config
from metering.models import MetricsSource

AUDITED = ("url", "enabled", "config")


def configure_metrics_source(
    *, actor: Any, cluster_id: uuid.UUID, url: str, config: dict[str, Any] | None = None, enabled: bool = True
) -> MetricsSource:
    """Create or replace a cluster's metrics source. Locks the cluster's source row; audited
    (``metrics_source.configured``); the same values again change nothing and record nothing."""
    if not getattr(actor, "is_platform_admin", False):
        raise Forbidden("Only platform-admins configure metrics sources.")
    if len(url) > 500:
        raise ValidationFailed("url must be an http(s) URL of a Prometheus query API", field="url")
    # The outbound policy (again on every fetch); credentials are refused there too: the URL is shown
    # to platform staff and in the audit log, no place for a password.
    url = vet_user_url(url, field="url")
    try:
        parse_config(config or {})
    except ConfigInvalid as exc:
        raise ValidationFailed(f"config.{exc.field}: {exc.message}", field=f"config.{exc.field}") from None
    with transaction.atomic():
        if not Cluster.objects.filter(pk=cluster_id).exists():
            raise NotFound("No such cluster.")
        source = MetricsSource.objects.select_for_update().filter(cluster_id=cluster_id).first()
        before = snapshot(source, AUDITED) if source else None
        if source is None:
            source = MetricsSource(cluster_id=cluster_id)
        source.url, source.config, source.enabled = url.rstrip("/"), dict(config or {}), enabled
        after = snapshot(source, AUDITED)
        if before == after:
            return source
        source.updated_at = timezone.now()
        source.save()
        record_event(actor=actor, action="metrics_source.configured", obj=source, before=before, after=after)
    return source


def source_config(source: MetricsSource | None) -> SourceConfig:
    return parse_config(source.config if source else {})
