"""The tenant page's holdings panel: what the tenant holds now in the cluster (open allocations), with
links to the nodes (for those who may see nodes) and to the allocation history filtered to it."""

from __future__ import annotations

from typing import Any

from gpuplatform.accounts.models import User
from inventory.models import Allocation, Node
from tenants.models import Tenant

TEMPLATE = "inventory/_tenant_panel.html"
HOLDINGS_SHOWN = 20


def tenant_context(user: User, tenant: Tenant) -> dict[str, Any]:
    holdings = list(
        Allocation.objects.visible_to(user)
        .filter(tenant=tenant, ended_at__isnull=True)
        .select_related("cluster")
        .order_by("-started_at", "pk")[: HOLDINGS_SHOWN + 1]
    )
    shown = holdings[:HOLDINGS_SHOWN]
    node_ids = {a.node_id for a in shown if a.node_id}
    linkable = set(Node.objects.visible_to(user).filter(pk__in=node_ids).values_list("pk", flat=True))
    return {
        "holdings": [(a, a.node_id in linkable) for a in shown],
        "holdings_more": len(holdings) > HOLDINGS_SHOWN,
    }
