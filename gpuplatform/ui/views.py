"""Overview and the sections whose issues are still to come."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from gpuplatform.audit.models import AuditEvent
from gpuplatform.ui.attention import attention_for
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.panels import overview_panels

# Sections whose issue is still to come: none now (each section of the navigation is built); the
# placeholder page stays for the next one.
COMING: dict[str, tuple[str, str]] = {}


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    panels = [
        render_to_string(panel.template, panel.context(user), request=request) for panel in overview_panels()
    ]
    context = {
        "attention": attention_for(user),
        "panels": panels,
        "recent_events": AuditEvent.objects.visible_to(user)[:8],
    }
    return render(request, "ui/overview.html", context)


@login_required
def section_placeholder(request: HttpRequest, section: str) -> HttpResponse:
    if section not in COMING:
        raise Http404("No such page")
    title, text = COMING[section]
    return render(request, "ui/section.html", {"title": title, "text": text})
