"""Overview and the sections whose issues are still to come."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from gpuplatform.audit.models import AuditEvent
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.panels import overview_panels

COMING = {
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
    panels = [
        render_to_string(panel.template, panel.context(user), request=request) for panel in overview_panels()
    ]
    context = {"panels": panels, "recent_events": AuditEvent.objects.visible_to(user)[:8]}
    return render(request, "ui/overview.html", context)


@login_required
def section_placeholder(request: HttpRequest, section: str) -> HttpResponse:
    if section not in COMING:
        raise Http404("No such page")
    title, text = COMING[section]
    return render(request, "ui/section.html", {"title": title, "text": text})
