"""The audit log page for platform-admins, with filters and pagination. Objects are named, changed
fields shown before → after, and system bookkeeping (BOOKKEEPING_ACTIONS) left out unless asked for."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from gpuplatform.audit.api import AuditEventFilter
from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.naming import name_events
from gpuplatform.audit.services import BOOKKEEPING_ACTIONS
from gpuplatform.ui.auth import current_user


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    if not user.is_platform_admin:
        raise Http404("No such page")
    filters = request.GET.copy()
    system = filters.pop("system", [""])[0] == "1"
    filters.pop("page", None)
    events = AuditEventFilter(filters, queryset=AuditEvent.objects.visible_to(user)).qs
    if not system and filters.get("action") not in BOOKKEEPING_ACTIONS:
        events = events.exclude(action__in=BOOKKEEPING_ACTIONS)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    actions = AuditEvent.objects.order_by("action").values_list("action", flat=True).distinct()
    query = request.GET.copy()
    query.pop("page", None)
    hidden = 0 if system else AuditEvent.objects.filter(action__in=BOOKKEEPING_ACTIONS).count()
    context = {
        "page": page,
        "named": name_events(page.object_list),
        "actions": actions,
        "filters": request.GET,
        "system": system,
        "hidden": hidden,
        "query": query.urlencode(),
    }
    return render(request, "audit/log.html", context)
