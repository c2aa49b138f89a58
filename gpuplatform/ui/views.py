"""Overview and the sections whose issues are still to come."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from gpuplatform.audit.models import AuditEvent
from gpuplatform.ui.auth import current_user
from tenants.models import Membership, Tenant

COMING = {
    "policies": (
        "Policies",
        "Sharing policies per node pool (MIG, time-slicing, MPS, HAMi), signed revisions, rollouts to node "
        "agents with acknowledgements, and drift.",
    ),
    "metering": (
        "Metering",
        "Hourly usage from Prometheus, rate cards, billing periods and chargeback exports "
        "(CSV, XLSX, FOCUS).",
    ),
    "slos": ("SLOs", "Queue wait, quota backed by inventory, share delivery, GPU health and rollout SLOs."),
}


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    tenants = Tenant.objects.visible_to(user)
    context = {
        "tenant_count": tenants.count(),
        "memberships": Membership.objects.filter(user=user).select_related("tenant").order_by("tenant__path"),
        "member_count": Membership.objects.visible_to(user).count(),
        "recent_events": AuditEvent.objects.visible_to(user)[:8],
    }
    return render(request, "ui/overview.html", context)


@login_required
def section_placeholder(request: HttpRequest, section: str) -> HttpResponse:
    if section not in COMING:
        raise Http404("No such page")
    title, text = COMING[section]
    return render(request, "ui/section.html", {"title": title, "text": text})
