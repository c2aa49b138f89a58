"""REST for the on-premises cost model: preview a derivation, or create the rate card it derives
(finance and platform-admins; cost models are platform objects)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.errors import Forbidden
from metering.chargeback.cost_model import CostInputs
from metering.models import CostModel
from metering.services import cost_models as cost_services
from metering.services.rates import may_price


class CostModelSerializer(StrictModelSerializer):
    derivation = serializers.SerializerMethodField()

    class Meta:
        model = CostModel
        fields = [
            "id", "gpu_model", "flavor", "currency", "purchase_price_per_card", "amortisation_months",
            "watts_under_load", "price_per_kwh", "pue", "hosting_per_card_month", "hours_per_month",
            "price_per_ge_hour", "rate_card", "derivation", "created_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_derivation(self, obj: CostModel) -> list[dict[str, str]]:
        return cost_services.steps_of(obj)


class CostInputsSerializer(StrictSerializer):
    purchase_price_per_card = serializers.DecimalField(max_digits=18, decimal_places=2, min_value=0)
    amortisation_months = serializers.IntegerField(min_value=1, max_value=240)
    watts_under_load = serializers.DecimalField(max_digits=10, decimal_places=2, min_value=0)
    price_per_kwh = serializers.DecimalField(max_digits=12, decimal_places=6, min_value=0)
    pue = serializers.DecimalField(max_digits=5, decimal_places=3, min_value=1, default=Decimal("1.4"))
    hosting_per_card_month = serializers.DecimalField(
        max_digits=18, decimal_places=2, min_value=0, default=Decimal(0)
    )
    hours_per_month = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=1, default=Decimal(730)
    )


INPUT_FIELDS = (
    "purchase_price_per_card", "amortisation_months", "watts_under_load", "price_per_kwh", "pue",
    "hosting_per_card_month", "hours_per_month",
)  # fmt: skip


class CostModelCreateSerializer(CostInputsSerializer):
    gpu_model = serializers.CharField(max_length=100)
    flavor = serializers.UUIDField(required=False, allow_null=True)
    currency = serializers.CharField(min_length=3, max_length=3)
    effective_from = serializers.DateTimeField()
    effective_to = serializers.DateTimeField(required=False, allow_null=True)


def _inputs(values: dict[str, Any]) -> CostInputs:
    return CostInputs(**{str(name): values[str(name)] for name in INPUT_FIELDS})


class CostModelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = CostModel.objects.order_by("gpu_model", "-created_at", "id")
    serializer_class = CostModelSerializer

    @extend_schema(request=CostModelCreateSerializer, responses=CostModelSerializer)
    def create(self, request: Request) -> Response:
        data = CostModelCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = dict(data.validated_data)
        model = cost_services.create_cost_model(
            actor=self.actor,
            gpu_model=values["gpu_model"],
            flavor_id=values.get("flavor"),
            currency=values["currency"],
            inputs=_inputs(values),
            effective_from=values["effective_from"],
            effective_to=values.get("effective_to"),
        )
        return Response(CostModelSerializer(model).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CostInputsSerializer, responses=dict)
    @action(detail=False, methods=["post"])
    def preview(self, request: Request) -> Response:
        """The derivation of a price from the inputs, nothing saved."""
        if not may_price(self.actor):
            raise Forbidden("Only finance and platform-admins set prices.")
        data = CostInputsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        derivation = cost_services.derivation_of(_inputs(dict(data.validated_data)))
        return Response(
            {
                "steps": [
                    {"name": s.name, "formula": s.formula, "per_card_hour": str(s.shown)}
                    for s in derivation.steps
                ],
                "price_per_ge_hour": str(derivation.price_per_ge_hour),
            }
        )
