"""REST for statements (listed and downloaded as PDF by whoever may see the tenant they address;
cost-centre statements are finance's), for manual credits and charges (booked by finance) and for
per-period exchange rates (set by finance)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from metering.models import BillingPeriod, Credit, ExchangeRate, Statement
from metering.services.credits import book_credit
from metering.services.currency import set_exchange_rate
from metering.services.statements import statement_document
from metering.statements.pdf import render_pdf
from tenants.models import Tenant


class StatementSerializer(StrictModelSerializer):
    period = serializers.CharField(source="period.label", read_only=True)

    class Meta:
        model = Statement
        fields = [
            "id", "number", "period", "kind", "tenant", "tenant_slug", "tenant_name", "cost_centre",
            "currency", "charges", "adjustments", "credits", "total", "unpriced_ge_hours", "issued_at",
        ]  # fmt: skip
        read_only_fields = fields


class StatementFilter(FilterSet):
    period = django_filters.CharFilter(field_name="period__label")
    tenant = django_filters.CharFilter(field_name="tenant_slug")

    class Meta:
        model = Statement
        fields = ["kind", "cost_centre", "currency"]


class StatementViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = Statement.objects.select_related("period").order_by("period__starts_at", "number")
    serializer_class = StatementSerializer
    filterset_class = StatementFilter

    @extend_schema(responses={(200, "application/pdf"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"])
    def pdf(self, request: Request, pk: str | None = None) -> HttpResponse:
        statement = self.get_object()  # through the door: another tenant's statement is a 404
        response = HttpResponse(
            render_pdf(statement_document(statement=statement)), content_type="application/pdf"
        )
        response["Content-Disposition"] = f'attachment; filename="statement-{statement.number}.pdf"'
        return response


class CreditSerializer(StrictModelSerializer):
    period = serializers.CharField(source="period.label", read_only=True)
    tenant_slug = serializers.CharField(source="tenant.slug", read_only=True)

    class Meta:
        model = Credit
        fields = ["id", "period", "tenant", "tenant_slug", "currency", "amount", "reason", "created_at"]
        read_only_fields = fields


class CreditCreateSerializer(StrictSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all())
    amount = serializers.DecimalField(max_digits=18, decimal_places=4, help_text="negative: a credit")
    currency = serializers.CharField(min_length=3, max_length=3)
    reason = serializers.CharField(max_length=200)


class CreditViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = Credit.objects.select_related("period", "tenant").order_by("created_at", "id")
    serializer_class = CreditSerializer
    filterset_fields = ["currency"]

    @extend_schema(request=CreditCreateSerializer, responses=CreditSerializer)
    def create(self, request: Request) -> Response:
        data = CreditCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = dict(data.validated_data)
        credit = book_credit(
            actor=self.actor,
            tenant_id=values["tenant"].pk,
            amount=values["amount"],
            currency=values["currency"],
            reason=values["reason"],
        )
        return Response(CreditSerializer(credit).data, status=status.HTTP_201_CREATED)


class ExchangeRateSerializer(StrictModelSerializer):
    period = serializers.CharField(source="period.label", read_only=True)
    set_by = serializers.CharField(source="set_by.username", default="", read_only=True)

    class Meta:
        model = ExchangeRate
        fields = ["id", "period", "currency", "rate", "source", "as_of", "set_by", "created_at"]
        read_only_fields = fields


class ExchangeRateSetSerializer(StrictSerializer):
    period = serializers.SlugRelatedField(slug_field="label", queryset=BillingPeriod.objects.all())
    currency = serializers.CharField(min_length=3, max_length=3, help_text="ISO 4217, e.g. EUR")
    rate = serializers.DecimalField(
        max_digits=18,
        decimal_places=8,
        help_text="what one unit of `currency` is worth in the period's currency",
    )
    # DRF's metaclass pops declared fields off the class, so "source" names the input, not Field.source.
    source = serializers.CharField(max_length=200, help_text="where the rate comes from")  # type: ignore[assignment]
    as_of = serializers.DateField(help_text="the rate's date at its source")


class ExchangeRateViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Finance's exchange rates per billing period (platform objects, like the periods)."""

    queryset = ExchangeRate.objects.select_related("period", "set_by").order_by(
        "period__starts_at", "currency"
    )
    serializer_class = ExchangeRateSerializer
    filterset_fields = ["currency"]

    @extend_schema(request=ExchangeRateSetSerializer, responses=ExchangeRateSerializer)
    def create(self, request: Request) -> Response:
        data = ExchangeRateSetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = dict(data.validated_data)
        found = set_exchange_rate(
            actor=self.actor,
            period_id=values["period"].pk,
            currency=values["currency"],
            rate=values["rate"],
            source=values["source"],
            as_of=values["as_of"],
        )
        return Response(ExchangeRateSerializer(found).data, status=status.HTTP_201_CREATED)
