"""The demand panel of the overview page: what waits in the queues the user can see (requests and GE per
flavor) and how many wait for a decision this user may take, linking to the queue page."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Sum

from gpuplatform.accounts.models import User
from quotas.models import CapacityRequest
from quotas.models.requests import ApprovalState, RequestState
from tenants.models import Tenant

TEMPLATE = "quotas/_overview_panel.html"


def overview_context(user: User) -> dict[str, Any]:
    pending = CapacityRequest.objects.visible_to(user).filter(state=RequestState.PENDING)
    by_flavor = list(
        pending.values("flavor__name")
        .annotate(requests=Count("id"), ge=Sum("ge"))
        .order_by("-ge", "flavor__name")
    )
    awaiting = pending.filter(
        approval=ApprovalState.AWAITING, tenant__in=Tenant.objects.manageable_by(user).values("pk")
    ).count()
    return {"demand": by_flavor, "awaiting_decision": awaiting}
