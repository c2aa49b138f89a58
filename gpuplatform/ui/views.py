"""The overview page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.naming import name_events
from gpuplatform.audit.services import BOOKKEEPING_ACTIONS
from gpuplatform.ui.attention import attention_for
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.panels import overview_panels


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    panels = [
        render_to_string(panel.template, panel.context(user), request=request) for panel in overview_panels()
    ]
    context = {
        "attention": attention_for(user),
        "panels": panels,
        "recent_events": name_events(
            AuditEvent.objects.visible_to(user).exclude(action__in=BOOKKEEPING_ACTIONS)[:8]
        ),
    }
    return render(request, "ui/overview.html", context)
