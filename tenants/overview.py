"""The tenants panel of the overview page: what the user can see and where they are a member."""

from __future__ import annotations

from typing import Any

from gpuplatform.accounts.models import User
from tenants.models import Membership, Tenant

TEMPLATE = "tenants/_overview_panel.html"


def overview_context(user: User) -> dict[str, Any]:
    return {
        "tenant_count": Tenant.objects.visible_to(user).count(),
        "memberships": Membership.objects.filter(user=user).select_related("tenant").order_by("tenant__path"),
        "member_count": Membership.objects.visible_to(user).count(),
    }
