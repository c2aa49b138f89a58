"""REST for metering: usage rows, rate cards, billing periods (close for finance), report lines.
Thin adapters: querysets through the scoping door, writes through one service each."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.viewsets import ScopedViewSet
from metering.api.serializers import (
    BillingPeriodSerializer,
    ClosePeriodSerializer,
    RateCardCreateSerializer,
    RateCardEndSerializer,
    RateCardSerializer,
    RateCardUpdateSerializer,
    ReportLineSerializer,
    UsageHourSerializer,
)
from metering.api.usage_buckets import GRANULARITIES, UsageBucketSerializer, bucketed, granularity_of
from metering.models import BillingPeriod, RateCard, ReportLine, UsageHour
from metering.services import periods as period_services
from metering.services import rates as rate_services


class UsageFilter(FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    tenant_id = django_filters.UUIDFilter(field_name="tenant_id")
    flavor = django_filters.CharFilter(field_name="flavor_name")
    model = django_filters.CharFilter(field_name="gpu_model")
    period = django_filters.CharFilter(field_name="period__label")
    hour_from = django_filters.IsoDateTimeFilter(field_name="hour", lookup_expr="gte")
    hour_to = django_filters.IsoDateTimeFilter(field_name="hour", lookup_expr="lt")
    complete = django_filters.BooleanFilter()

    class Meta:
        model = UsageHour
        fields = ["meter", "attribution", "source"]


class UsageViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = UsageHour.objects.select_related("tenant").order_by("hour", "share_key", "meter", "id")
    serializer_class = UsageHourSerializer
    filterset_class = UsageFilter
    list_params = ("granularity",)

    @extend_schema(
        parameters=[OpenApiParameter("granularity", str, enum=list(GRANULARITIES))],
        responses=UsageHourSerializer(many=True),
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Rows as metered; with ``?granularity=hour|day|month``, sums per bucket (UsageBucketSerializer)."""
        granularity = granularity_of(request.query_params.get("granularity"))
        if granularity is None:
            return super().list(request, *args, **kwargs)
        page = self.paginate_queryset(bucketed(self.filter_queryset(self.get_queryset()), granularity))
        return self.get_paginated_response(UsageBucketSerializer(page, many=True).data)  # type: ignore[arg-type]


class RateCardFilter(FilterSet):
    flavor = django_filters.CharFilter(field_name="flavor__name")
    model = django_filters.CharFilter(field_name="gpu_model")

    class Meta:
        model = RateCard
        fields = ["currency", "basis"]


class RateCardViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = RateCard.objects.select_related("flavor").order_by("gpu_model", "effective_from", "id")
    serializer_class = RateCardSerializer
    filterset_class = RateCardFilter

    @extend_schema(request=RateCardCreateSerializer, responses=RateCardSerializer)
    def create(self, request: Request) -> Response:
        data = RateCardCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = dict(data.validated_data)
        card = rate_services.create_rate_card(
            actor=self.actor, flavor_id=values.pop("flavor", None), **values
        )
        return Response(self._with_warnings(card), status=status.HTTP_201_CREATED)

    @staticmethod
    def _with_warnings(card: RateCard) -> dict[str, Any]:
        """The card and what looks unintended about it (never a refusal)."""
        warnings = rate_services.rate_card_warnings(
            gpu_model=card.gpu_model, currency=card.currency, other_than=card.pk
        )
        return {**RateCardSerializer(card).data, "warnings": [w.as_dict() for w in warnings]}

    @extend_schema(request=RateCardUpdateSerializer, responses=RateCardSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Change a card not yet in effect (409 rate_card_in_effect otherwise: end it instead)."""
        card = self.get_object()
        data = RateCardUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        card = rate_services.update_rate_card(actor=self.actor, rate_card_id=card.pk, **data.validated_data)
        return Response(self._with_warnings(card))

    @extend_schema(request=RateCardEndSerializer, responses=RateCardSerializer)
    @action(detail=True, methods=["post"])
    def end(self, request: Request, pk: str | None = None) -> Response:
        card = self.get_object()  # through the door: another tenant's card is a 404
        data = RateCardEndSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        card = rate_services.end_rate_card(
            actor=self.actor, rate_card_id=card.pk, effective_to=data.validated_data["effective_to"]
        )
        return Response(RateCardSerializer(card).data)


class BillingPeriodViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = BillingPeriod.objects.order_by("-starts_at")
    serializer_class = BillingPeriodSerializer
    filterset_fields = ["state", "label"]

    @extend_schema(request=None, responses=BillingPeriodSerializer)
    @action(detail=True, methods=["post"], url_path="start-closing")
    def start_closing(self, request: Request, pk: str | None = None) -> Response:
        period = self.get_object()
        period = period_services.start_closing_period(actor=self.actor, period_id=period.pk)
        return Response(BillingPeriodSerializer(period).data)

    @extend_schema(request=ClosePeriodSerializer, responses=BillingPeriodSerializer)
    @action(detail=True, methods=["post"])
    def close(self, request: Request, pk: str | None = None) -> Response:
        period = self.get_object()
        data = ClosePeriodSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        period = period_services.close_billing_period(
            actor=self.actor,
            period_id=period.pk,
            idle=data.validated_data.get("idle"),
            acknowledge_unpriced=data.validated_data["acknowledge_unpriced"],
        )
        return Response(BillingPeriodSerializer(period).data)


class ReportLineFilter(FilterSet):
    period = django_filters.CharFilter(field_name="period__label")
    tenant = django_filters.CharFilter(field_name="tenant_slug")
    flavor = django_filters.CharFilter(field_name="flavor_name")
    model = django_filters.CharFilter(field_name="gpu_model")

    class Meta:
        model = ReportLine
        fields = ["kind", "currency"]


class ReportLineViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = ReportLine.objects.select_related("period").order_by("period__starts_at", "line_no")
    serializer_class = ReportLineSerializer
    filterset_class = ReportLineFilter
