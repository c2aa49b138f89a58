"""Usage summed by hour, day or month on the database (``?granularity=``): days and months cut in
BILLING_TIMEZONE, as billing periods are, so a day's figure is the one finance's month adds up."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Trunc
from rest_framework import serializers

from gpuplatform.errors import ValidationFailed

GRANULARITIES = ("hour", "day", "month")
GROUPED_BY = ("tenant_id", "tenant__slug", "cluster__name", "pool_name", "flavor_name", "gpu_model", "meter")


def granularity_of(value: str | None) -> str | None:
    if value in (None, ""):
        return None
    if value not in GRANULARITIES:
        raise ValidationFailed(
            f"granularity must be one of {', '.join(GRANULARITIES)}",
            code="invalid_granularity",
            field="granularity",
        )
    return value


def bucketed(rows: QuerySet[Any], granularity: str) -> QuerySet[Any]:
    """One row per bucket, tenant, pool, flavor, GPU model and meter: quantities summed, rows and
    incomplete rows counted (a gap stays visible in the sum)."""
    zone = ZoneInfo(settings.BILLING_TIMEZONE)
    return (
        rows.order_by()
        .annotate(bucket=Trunc("hour", granularity, tzinfo=zone))
        .values("bucket", *GROUPED_BY)
        .annotate(
            quantity=Sum("quantity"),
            card_hours=Sum("card_hours"),
            rows=Count("id"),
            incomplete_rows=Count("id", filter=Q(complete=False)),
        )
        .order_by("bucket", "tenant__slug", "cluster__name", "pool_name", "flavor_name", "gpu_model", "meter")
    )


class UsageBucketSerializer(serializers.Serializer[dict[str, Any]]):
    bucket = serializers.DateTimeField()
    tenant = serializers.UUIDField(source="tenant_id", allow_null=True)
    tenant_slug = serializers.CharField(source="tenant__slug", allow_null=True)
    cluster = serializers.CharField(source="cluster__name")
    pool_name = serializers.CharField()
    flavor_name = serializers.CharField()
    gpu_model = serializers.CharField()
    meter = serializers.CharField()
    quantity = serializers.DecimalField(max_digits=24, decimal_places=9)
    card_hours = serializers.DecimalField(max_digits=24, decimal_places=9)
    rows = serializers.IntegerField()
    incomplete_rows = serializers.IntegerField()
