"""The audit log page for platform-admins, with filters and pagination. Objects are named, changed
fields shown before → after, and system bookkeeping (BOOKKEEPING_ACTIONS) left out unless asked for;
when shown, the events of one run (``after.run``: a backfill, the demo's month) read as one row, its
newest event, with how many the run wrote and a link to them all."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Exists, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
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
    if system and not filters.get("run"):
        events = _one_row_per_run(events)
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


def _one_row_per_run(events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """Each run's newest event stands for the run (``run_events``: how many it wrote); events of no
    run are kept as they are."""
    same_run = AuditEvent.objects.filter(action=OuterRef("action"), after__run=OuterRef("after__run"))
    run_size = same_run.order_by().values("action").annotate(n=Count("id")).values("n")[:1]
    return events.exclude(Exists(same_run.filter(id__gt=OuterRef("id")))).annotate(
        run_events=Coalesce(Subquery(run_size, output_field=IntegerField()), 0)
    )
