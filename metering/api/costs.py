"""REST: a tenant's month-to-date cost and month-end forecast, its subtree summed and a row per child
(``GET /api/v1/costs/<tenant id>/``). Seen by the people of the tenant and of the tenants above it
(costs roll up the tree, metering/scoping.py); another tenant's is a 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.viewsets import ScopedViewSet
from metering.chargeback.forecast import FORMULA, CostRow
from metering.scoping import CostScopeQuerySet
from metering.services.month_to_date import TenantCosts, tenant_costs
from tenants.models import Tenant


def _row(row: CostRow) -> dict[str, Any]:
    return {
        "totals": [
            {
                "currency": t.currency,
                "month_to_date": str(t.month_to_date),
                "admitted": str(t.admitted),
                "forecast": str(t.forecast),
            }
            for t in row.totals
        ],
        "admitted_ge_hours": f"{float(row.admitted_ge_hours):.6f}",
        "unpriced_ge_hours": f"{float(row.unpriced_ge_hours):.6f}",
    }


def costs_body(found: TenantCosts) -> dict[str, Any]:
    return {
        "tenant": str(found.tenant.pk),
        "tenant_slug": found.tenant.slug,
        "period": found.period,
        "month_start": found.month_start.isoformat(),
        "month_end": found.month_end.isoformat(),
        "metered_until": found.metered_until.isoformat(),
        "formula": FORMULA,
        **_row(found.costs.subtree),
        "children": [
            {
                "tenant": str(found.children[row.tenant_path][0]),
                "tenant_slug": found.children[row.tenant_path][1],
            }
            | _row(row)
            for row in found.costs.children
        ],
    }


_TOTAL = inline_serializer(
    "CostTotal",
    {
        "currency": serializers.CharField(),
        "month_to_date": serializers.CharField(),
        "admitted": serializers.CharField(),
        "forecast": serializers.CharField(),
    },
)


class CostViewSet(mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = CostScopeQuerySet(model=Tenant)

    @extend_schema(
        responses=inline_serializer(
            "TenantCosts",
            {
                "tenant": serializers.UUIDField(),
                "tenant_slug": serializers.CharField(),
                "period": serializers.CharField(),
                "month_start": serializers.DateTimeField(),
                "month_end": serializers.DateTimeField(),
                "metered_until": serializers.DateTimeField(),
                "formula": serializers.CharField(),
                "totals": _TOTAL,
                "admitted_ge_hours": serializers.CharField(),
                "unpriced_ge_hours": serializers.CharField(),
                "children": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        tenant = self.get_object()  # through the door: a tenant whose costs the viewer may not see is a 404
        return Response(costs_body(tenant_costs(tenant=tenant)))
