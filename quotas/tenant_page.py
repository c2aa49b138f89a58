"""The tenant page's quotas and requests panel: the tenant's quota rows with where each stands, its
budgets, and its latest requests, each linking to its own page. Read through the scoping door, so a
viewer who reaches the tenant page sees no more of it than the API would show."""

from __future__ import annotations

from typing import Any

from gpuplatform.accounts.models import User
from quotas.models import Budget, CapacityRequest, Quota
from quotas.selectors import quota_standing
from tenants import scoping
from tenants.models import Tenant

TEMPLATE = "quotas/_tenant_panel.html"
REQUESTS_SHOWN = 10
QUOTAS_SHOWN = 25


def tenant_context(user: User, tenant: Tenant) -> dict[str, Any]:
    quotas = list(
        Quota.objects.visible_to(user)
        .filter(tenant=tenant)
        .select_related("flavor")
        .order_by("flavor__name", "resource")[: QUOTAS_SHOWN + 1]
    )
    standing = quota_standing(quotas=quotas[:QUOTAS_SHOWN])
    requests = list(
        CapacityRequest.objects.visible_to(user)
        .filter(tenant=tenant)
        .select_related("flavor", "queue")
        .order_by("-created_at")[: REQUESTS_SHOWN + 1]
    )
    return {
        "quota_rows": [(q, standing[q.pk]) for q in quotas[:QUOTAS_SHOWN]],
        "quotas_more": len(quotas) > QUOTAS_SHOWN,
        "budgets": Budget.objects.visible_to(user).filter(tenant=tenant).select_related("flavor"),
        "requests": requests[:REQUESTS_SHOWN],
        "requests_more": len(requests) > REQUESTS_SHOWN,
        "sets_quotas": scoping.can_manage_strictly_below(user, tenant),
        "onboards": scoping.can_manage(user, tenant),
    }
