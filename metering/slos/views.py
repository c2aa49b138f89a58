"""SLO pages: every SLO with where it stands, and one SLO's SLI over time, its burn rates, alerts and
the delivery log; platform-admins create, edit and delete SLOs and alert receivers here. Platform
objects: a tenant sees why the list is empty, and every page about one of them is a 404 to it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuplatform.accounts.models import User
from gpuplatform.errors import DomainError
from gpuplatform.outbound.policy import redact_url
from gpuplatform.sli_sources import sli_kind
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.in_place import form_status, go_on
from metering.slos import services as slo_services
from metering.slos.forms import ReceiverForm, SloForm
from metering.slos.models import AlertDelivery, AlertReceiver, AlertState, SliSample, Slo, SloAlert
from metering.slos.services import standing

PAGE = 25
CHART_HOURS = 48


@login_required
def slo_list(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = Slo.objects.visible_to(user).select_related("tenant").order_by("name")
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    firing = set(
        SloAlert.objects.filter(slo__in=list(page), state=AlertState.FIRING).values_list("slo_id", flat=True)
    )
    items = [
        {"slo": slo, "kind": sli_kind(slo.sli), "now": standing(slo=slo), "firing": slo.pk in firing}
        for slo in page
    ]
    context = {
        "page": page,
        "items": items,
        "platform": user.sees_all_tenants,
        "can_edit": user.is_platform_admin,
    }
    return render(request, "metering/slos.html", context)


@login_required
def slo_detail(request: HttpRequest, slo_id: str) -> HttpResponse:
    user = current_user(request)
    slo = get_object_or_404(Slo.objects.visible_to(user).select_related("tenant"), pk=slo_id)
    since = timezone.now() - timedelta(hours=CHART_HOURS)
    per_hour: dict[Any, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for start, good, total in SliSample.objects.filter(slo=slo, start__gte=since).values_list(
        "start", "good", "total"
    ):
        hour = start.replace(minute=0, second=0, microsecond=0)
        per_hour[hour][0] += good
        per_hour[hour][1] += total
    hours = sorted(h for h, (_, total) in per_hour.items() if total)
    chart = {
        "type": "line",
        "stacked": False,
        "horizontal": False,
        "labels": [f"{h:%d %b %H:00}" for h in hours],
        "datasets": [
            {
                "label": "SLI (good / total)",
                "data": [float(per_hour[h][0] / per_hour[h][1]) for h in hours],
                "color": "#0072b2",
            },
            {"label": "objective", "data": [float(slo.objective)] * len(hours), "color": "#d55e00"},
        ],
    }
    alerts = SloAlert.objects.filter(slo=slo).order_by("-opened_at")[:20]
    deliveries = (
        AlertDelivery.objects.filter(alert__slo=slo).select_related("receiver").order_by("-created_at")[:50]
    )
    return render(
        request,
        "metering/slo.html",
        {
            "slo": slo,
            "kind": sli_kind(slo.sli),
            "now": standing(slo=slo),
            "chart": chart,
            "has_chart": bool(hours),
            "alerts": alerts,
            "deliveries": deliveries,
            "can_edit": user.is_platform_admin,
        },
    )


def _admin(request: HttpRequest) -> User:
    """Writes are platform-admins'; anyone else meets the 404 a page they cannot use is."""
    user = current_user(request)
    if not user.is_platform_admin:
        raise Http404("No such page")
    return user


def _refused(form: forms.Form, error: DomainError) -> None:
    field = "objective_percent" if error.field == "objective" else error.field
    form.add_error(field if field in form.fields else None, error.message)


def _form_page(
    request: HttpRequest,
    form: SloForm | ReceiverForm,
    *,
    save: Callable[[dict[str, Any]], Any],
    said: Callable[[Any], str],
    then: Callable[[Any], HttpResponse],
    template: str,
    context: dict[str, Any],
) -> HttpResponse:
    """A create or edit page: a valid POST is saved by the service, whose refusal lands on the form
    and changes nothing; the page is answered in place under htmx (gpuplatform.ui.in_place)."""
    if request.method == "POST" and form.is_valid():
        try:
            saved = save(form.values())
        except DomainError as error:
            _refused(form, error)
        else:
            messages.success(request, said(saved))
            return then(saved)
    return render(request, template, {"form": form, **context}, status=form_status(request, form))


@login_required
def slo_create(request: HttpRequest) -> HttpResponse:
    user = _admin(request)
    return _form_page(
        request,
        SloForm(request.POST or None),
        save=lambda values: slo_services.create_slo(actor=user, **values),
        said=lambda slo: f"Created the SLO {slo.name}. It is measured at the next evaluation.",
        then=lambda slo: go_on(request, "slo-detail", slo_id=slo.pk),
        template="metering/slo_form.html",
        context={"title": "New SLO"},
    )


@login_required
def slo_edit(request: HttpRequest, slo_id: str) -> HttpResponse:
    user = _admin(request)
    slo = get_object_or_404(Slo.objects.visible_to(user), pk=slo_id)
    return _form_page(
        request,
        SloForm(request.POST or None, instance=slo),
        save=lambda values: slo_services.update_slo(actor=user, slo_id=slo.pk, **values),
        said=lambda saved: f"Saved the SLO {saved.name}.",
        then=lambda saved: go_on(request, "slo-detail", slo_id=saved.pk),
        template="metering/slo_form.html",
        context={"title": f"Edit SLO {slo.name}", "slo": slo},
    )


@login_required
@require_POST
def slo_delete(request: HttpRequest, slo_id: str) -> HttpResponse:
    user = _admin(request)
    slo = get_object_or_404(Slo.objects.visible_to(user), pk=slo_id)
    try:
        slo_services.delete_slo(actor=user, slo_id=slo.pk)
    except DomainError as error:
        messages.error(request, error.message)
        return go_on(request, "slo-detail", slo_id=slo.pk)
    messages.success(request, f"Deleted the SLO {slo.name}, its samples and its alerts.")
    return go_on(request, "slo-list")


@login_required
def receiver_list(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    if not user.sees_all_tenants:
        raise Http404("No such page")
    receivers = AlertReceiver.objects.visible_to(user).prefetch_related("slos").order_by("name")
    page = Paginator(receivers, PAGE).get_page(request.GET.get("page"))
    # As in the API: the whole URL for platform-admins, scheme and host for finance (a webhook's
    # path is often its bearer secret); the signing secret is never shown to anyone.
    rows = [{"receiver": r, "url": r.url if user.is_platform_admin else redact_url(r.url)} for r in page]
    context = {"page": page, "rows": rows, "can_edit": user.is_platform_admin}
    return render(request, "metering/receivers.html", context)


@login_required
def receiver_create(request: HttpRequest) -> HttpResponse:
    user = _admin(request)
    return _form_page(
        request,
        ReceiverForm(request.POST or None),
        save=lambda values: slo_services.create_receiver(actor=user, **values),
        said=lambda receiver: f"Added the alert receiver {receiver.name}.",
        then=lambda _: go_on(request, "slo-receivers"),
        template="metering/receiver_form.html",
        context={"title": "New alert receiver"},
    )


@login_required
def receiver_edit(request: HttpRequest, receiver_id: str) -> HttpResponse:
    user = _admin(request)
    receiver = get_object_or_404(AlertReceiver.objects.visible_to(user), pk=receiver_id)
    return _form_page(
        request,
        ReceiverForm(request.POST or None, instance=receiver),
        save=lambda values: slo_services.update_receiver(actor=user, receiver_id=receiver.pk, **values),
        said=lambda saved: f"Saved the alert receiver {saved.name}.",
        then=lambda _: go_on(request, "slo-receivers"),
        template="metering/receiver_form.html",
        context={
            "title": f"Edit alert receiver {receiver.name}",
            "receiver": receiver,
            "slos": receiver.slos.order_by("name"),
        },
    )


@login_required
@require_POST
def receiver_delete(request: HttpRequest, receiver_id: str) -> HttpResponse:
    user = _admin(request)
    receiver = get_object_or_404(AlertReceiver.objects.visible_to(user), pk=receiver_id)
    try:
        slo_services.delete_receiver(actor=user, receiver_id=receiver.pk)
    except DomainError as error:
        messages.error(request, error.message)
        return go_on(request, "slo-receiver-edit", receiver_id=receiver.pk)
    messages.success(request, f"Deleted the alert receiver {receiver.name}.")
    return go_on(request, "slo-receivers")
