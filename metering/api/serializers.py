"""Shapes of metering's REST: read models as they are; writes validated here, decided by services."""

from __future__ import annotations

from decimal import Decimal

from rest_framework import serializers

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from metering.models import Basis, BillingPeriod, RateCard, ReportLine, UsageHour


class UsageHourSerializer(StrictModelSerializer):
    tenant_slug = serializers.CharField(source="tenant.slug", default="", read_only=True)
    coverage = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = UsageHour
        fields = [
            "id",
            "hour",
            "share_key",
            "meter",
            "tenant",
            "tenant_slug",
            "namespace",
            "pool_name",
            "node_name",
            "card_key",
            "gpu_model",
            "flavor_name",
            "resource_name",
            "ge",
            "seconds",
            "quantity",
            "card_hours",
            "attribution",
            "source",
            "samples_seen",
            "samples_expected",
            "coverage",
            "complete",
            "period",
        ]
        read_only_fields = fields


class RateCardSerializer(StrictModelSerializer):
    flavor_name = serializers.CharField(source="flavor.name", default="", read_only=True)

    class Meta:
        model = RateCard
        fields = [
            "id",
            "gpu_model",
            "flavor",
            "flavor_name",
            "currency",
            "price_per_ge_hour",
            "energy_price_per_kwh",
            "basis",
            "blend_weight",
            "effective_from",
            "effective_to",
            "note",
            "created_at",
        ]
        read_only_fields = fields


class RateCardCreateSerializer(StrictSerializer):
    gpu_model = serializers.CharField(max_length=100)
    flavor = serializers.UUIDField(required=False, allow_null=True)
    currency = serializers.CharField(min_length=3, max_length=3)
    price_per_ge_hour = serializers.DecimalField(max_digits=18, decimal_places=6, min_value=0)
    energy_price_per_kwh = serializers.DecimalField(
        max_digits=18,
        decimal_places=6,
        min_value=0,
        required=False,
        allow_null=True,
    )
    basis = serializers.ChoiceField(choices=Basis.choices, default=Basis.ALLOCATION)
    blend_weight = serializers.DecimalField(
        max_digits=4, decimal_places=3, min_value=0, max_value=1, required=False, default=Decimal("0.5")
    )
    effective_from = serializers.DateTimeField()
    effective_to = serializers.DateTimeField(required=False, allow_null=True)
    note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class RateCardUpdateSerializer(StrictSerializer):
    """A partial change of a card not yet in effect: what is sent changes; model and flavor stay."""

    currency = serializers.CharField(min_length=3, max_length=3, required=False)
    price_per_ge_hour = serializers.DecimalField(max_digits=18, decimal_places=6, min_value=0, required=False)
    energy_price_per_kwh = serializers.DecimalField(
        max_digits=18, decimal_places=6, min_value=0, required=False, allow_null=True
    )
    basis = serializers.ChoiceField(choices=Basis.choices, required=False)
    blend_weight = serializers.DecimalField(
        max_digits=4, decimal_places=3, min_value=0, max_value=1, required=False
    )
    effective_from = serializers.DateTimeField(required=False)
    effective_to = serializers.DateTimeField(required=False, allow_null=True)
    note = serializers.CharField(max_length=200, required=False, allow_blank=True)


class RateCardEndSerializer(StrictSerializer):
    effective_to = serializers.DateTimeField()


class BillingPeriodSerializer(StrictModelSerializer):
    class Meta:
        model = BillingPeriod
        fields = [
            "id",
            "label",
            "starts_at",
            "ends_at",
            "timezone",
            "state",
            "closing_at",
            "closed_at",
            "report_built_at",
            "summary",
        ]
        read_only_fields = fields


class ReportLineSerializer(StrictModelSerializer):
    period_label = serializers.CharField(source="period.label", read_only=True)

    class Meta:
        model = ReportLine
        fields = [
            "id",
            "period",
            "period_label",
            "line_no",
            "kind",
            "tenant",
            "tenant_slug",
            "tenant_path",
            "cost_centre",
            "pool_name",
            "flavor_name",
            "gpu_model",
            "currency",
            "unit_price",
            "ge_hours",
            "card_hours",
            "amount_exact",
            "amount",
            "adjusts",
            "basis",
            "used_ge_hours",
            "rate_card_ref",
        ]
        read_only_fields = fields


class ClosePeriodSerializer(StrictSerializer):
    idle = serializers.CharField(required=False, allow_null=True)  # the service names a bad one
    # Closing with card-hours no rate card covers freezes them at no cost: said explicitly, or 409.
    acknowledge_unpriced = serializers.BooleanField(default=False)
