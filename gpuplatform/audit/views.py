"""The audit log page for platform-admins, with filters and pagination."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from gpuplatform.audit.api import AuditEventFilter
from gpuplatform.audit.models import AuditEvent
from gpuplatform.ui.auth import current_user


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    if not user.is_platform_admin:
        raise Http404("No such page")
    events = AuditEventFilter(request.GET, queryset=AuditEvent.objects.visible_to(user)).qs
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    actions = AuditEvent.objects.order_by("action").values_list("action", flat=True).distinct()
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "audit/log.html",
        {"page": page, "actions": actions, "filters": request.GET, "query": query.urlencode()},
    )
