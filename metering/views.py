"""Metering pages: usage over time per tenant and pool, efficiency (used vs allocated), rate cards,
billing periods with the close action, report jobs with progress and downloads, and a tenant's own
costs. Every query goes through visible_to(); every change through one service (audited there)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q, Sum
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuplatform.errors import DomainError
from gpuplatform.input_warnings import InputWarning, confirmed
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.in_place import form_status, go_on
from metering.api.usage_buckets import bucketed
from metering.forms import (
    CloseForm,
    ExchangeRateForm,
    RateCardEditForm,
    RateCardEndForm,
    RateCardForm,
    ReportJobForm,
)
from metering.models import (
    BillingPeriod,
    ExportFormat,
    Meter,
    PeriodState,
    RateCard,
    ReportFile,
    ReportJob,
    ReportLine,
    UsageHour,
)
from metering.report_tasks import build_report_task
from metering.services import currency as currency_services
from metering.services import periods as period_services
from metering.services import rates as rate_services
from metering.services import report_jobs as job_services
from metering.services.periods import month_of
from metering.services.reports import unpriced_card_hours_of

PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#999999"]
PAGE = 25


def _chosen_period(request: HttpRequest) -> str:
    """The period label asked for, else the newest one with usage the viewer may see, else this month."""
    label = request.GET.get("period", "")
    if not label:
        visible = UsageHour.objects.visible_to(current_user(request))
        newest = visible.order_by("-hour").values_list("period__label", flat=True).first()
        label = newest or month_of(at=timezone.now())[0]
    return label


def _series(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Stacked bars: one dataset per ``key`` value, one bar per day."""
    days = sorted({r["bucket"] for r in rows})
    index = {d: i for i, d in enumerate(days)}
    by_key: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(days))
    for r in rows:
        by_key[r[key] or "(unassigned)"][index[r["bucket"]]] += float(r["quantity"] or 0)
    return {
        "type": "bar",
        "horizontal": False,
        "labels": [d.strftime("%m-%d") for d in days],
        "datasets": [
            {"label": name, "data": values, "color": PALETTE[i % len(PALETTE)]}
            for i, (name, values) in enumerate(sorted(by_key.items()))
        ],
    }


@login_required
def usage(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    label = _chosen_period(request)
    rows = UsageHour.objects.visible_to(user).filter(period__label=label)
    held = rows.filter(meter=Meter.ALLOCATED_GE_HOURS)
    daily = list(bucketed(held, "day"))
    tenant_chart = _series(daily, "tenant__slug")
    pool_chart = _series([{**r, "pool": f"{r['cluster__name']}/{r['pool_name']}"} for r in daily], "pool")
    efficiency = []
    for r in (
        rows.values("tenant__slug")
        .annotate(
            held=Sum("quantity", filter=Q(meter=Meter.ALLOCATED_GE_HOURS)),
            used=Sum("quantity", filter=Q(meter=Meter.USED_GE_HOURS)),
        )
        .order_by("tenant__slug")
    ):
        ratio = (r["used"] / r["held"]) if r["used"] is not None and r["held"] else None
        efficiency.append({**r, "ratio": ratio})
    periods = BillingPeriod.objects.order_by("-starts_at").values_list("label", flat=True)[:24]
    context = {
        "label": label,
        "periods": periods,
        "has_usage": bool(daily),
        "tenant_chart": tenant_chart,
        "pool_chart": pool_chart,
        "efficiency": efficiency,
        "incomplete": rows.filter(complete=False).count(),
    }
    return render(request, "metering/usage.html", context)


@login_required
def rate_cards(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    may_price = user.sees_all_tenants
    form = RateCardForm(request.POST or None, user=user)
    warnings: list[InputWarning] = []
    if request.method == "POST":
        if not may_price:
            raise Http404("No such page")
        if form.is_valid() and not confirmed(request.POST):
            data = dict(form.cleaned_data)
            warnings = rate_services.rate_card_warnings(
                gpu_model=data["gpu_model"], currency=data["currency"]
            )
        if form.is_valid() and not warnings:
            data = dict(form.cleaned_data)
            try:
                card = rate_services.create_rate_card(
                    actor=user,
                    gpu_model=data["gpu_model"],
                    flavor_id=data["flavor"] or None,
                    currency=data["currency"].upper(),
                    price_per_ge_hour=data["price_per_ge_hour"],
                    basis=data["basis"],
                    blend_weight=data["blend_weight"] if data["blend_weight"] is not None else Decimal("0.5"),
                    effective_from=data["effective_from"],
                    effective_to=data["effective_to"],
                    note=data["note"],
                )
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"Rate card added: {card}.")
                return go_on(request, "metering-rate-cards")
    cards = (
        RateCard.objects.visible_to(user)
        .select_related("flavor")
        .order_by("gpu_model", "-effective_from", "pk")
    )
    model = request.GET.get("model", "")
    if model:
        cards = cards.filter(gpu_model=model)
    page = Paginator(cards, PAGE).get_page(request.GET.get("page"))
    now = timezone.now()
    rows = [
        {
            "card": card,
            "pending": card.effective_from > now,  # not in effect yet: may still be edited
            "ended": card.effective_to is not None and card.effective_to <= now,
        }
        for card in page
    ]
    context = {
        "page": page,
        "rows": rows,
        "form": form,
        "may_price": may_price,
        "model": model,
        "query": f"model={model}" if model else "",
        "warnings": warnings,
    }
    return render(request, "metering/rate_cards.html", context, status=form_status(request, form))


def _priced_card(request: HttpRequest, card_id: str) -> tuple[Any, RateCard]:
    """The card, for finance and platform-admins only (anyone else: a 404, as the page is not theirs)."""
    user = current_user(request)
    if not rate_services.may_price(user):
        raise Http404("No such page")
    return user, get_object_or_404(RateCard.objects.visible_to(user).select_related("flavor"), pk=card_id)


@login_required
def rate_card_edit(request: HttpRequest, card_id: str) -> HttpResponse:
    """Change a card before it takes effect; one in effect is shown with the way to end it instead."""
    user, card = _priced_card(request, card_id)
    in_effect = card.effective_from <= timezone.now()
    initial = {
        name: getattr(card, name)
        for name in (
            "currency",
            "price_per_ge_hour",
            "basis",
            "blend_weight",
            "effective_from",
            "effective_to",
            "note",
        )
    }
    form = RateCardEditForm(request.POST or None, initial=initial)
    warnings: list[InputWarning] = []
    if request.method == "POST" and not in_effect and form.is_valid():
        if not confirmed(request.POST):
            warnings = rate_services.rate_card_warnings(
                gpu_model=card.gpu_model, currency=form.values()["currency"], other_than=card.pk
            )
        if not warnings:
            try:
                card = rate_services.update_rate_card(actor=user, rate_card_id=card.pk, **form.values())
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
            else:
                messages.success(request, f"Saved the rate card {card}.")
                return go_on(request, "metering-rate-cards")
    context = {"card": card, "form": form, "in_effect": in_effect, "warnings": warnings}
    return render(request, "metering/rate_card_edit.html", context, status=form_status(request, form))


@login_required
def rate_card_end(request: HttpRequest, card_id: str) -> HttpResponse:
    """End a card at a whole hour, after a confirmation that says what happens to the hours after."""
    user, card = _priced_card(request, card_id)
    now = timezone.now()
    next_hour = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    suggested = max(next_hour, card.effective_from + timedelta(hours=1))
    form = RateCardEndForm(request.POST or None, initial={"effective_to": card.effective_to or suggested})
    if request.method == "POST" and form.is_valid():
        try:
            card = rate_services.end_rate_card(
                actor=user, rate_card_id=card.pk, effective_to=form.cleaned_data["effective_to"]
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, f"Ended the rate card {card}.")
            return go_on(request, "metering-rate-cards")
    following = (
        RateCard.objects.filter(gpu_model=card.gpu_model, effective_from__gt=card.effective_from)
        .filter(Q(flavor__isnull=True) if card.flavor_id is None else Q(flavor_id=card.flavor_id))
        .order_by("effective_from")
        .first()
    )
    context = {"card": card, "form": form, "following": following}
    return render(request, "metering/rate_card_end.html", context, status=form_status(request, form))


@login_required
def periods(request: HttpRequest) -> HttpResponse:
    """Finance and platform-admins: every period with its state and actions. A tenant: its own
    cost per period, from the report lines it may see."""
    user = current_user(request)
    if not user.sees_all_tenants:
        return render(request, "metering/my_costs.html", {"costs": _my_costs(user)})
    rows = BillingPeriod.objects.visible_to(user).order_by("-starts_at")
    state = request.GET.get("state", "")
    if state:
        rows = rows.filter(state=state)
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "state": state,
        "states": PeriodState.choices,
        "query": f"state={state}" if state else "",
    }
    return render(request, "metering/periods.html", context)


def _my_costs(user: Any) -> list[dict[str, Any]]:
    """Per period and currency, the total of the lines ``user`` sees and, where they are of more than
    one tenant (a department's people see its teams'), a row per tenant: one grouped query."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for r in (
        ReportLine.objects.visible_to(user)
        .values("period__label", "currency", "tenant_slug", "tenant_path")
        .annotate(amount=Sum("amount"), card_hours=Sum("card_hours"))
        .order_by("-period__label", "currency", "tenant_slug", "tenant_path")  # teams by name, as read
    ):
        key = (r["period__label"], r["currency"])
        row = grouped.setdefault(
            key,
            {
                "period__label": key[0],
                "currency": key[1],
                "amount": None,
                "card_hours": Decimal(0),
                "tenants": [],
            },
        )
        if r["amount"] is not None:
            row["amount"] = (row["amount"] or Decimal(0)) + r["amount"]
        row["card_hours"] += r["card_hours"]
        row["tenants"].append(r)
    return list(grouped.values())


def _period_for(request: HttpRequest, period_id: str) -> BillingPeriod:
    return get_object_or_404(BillingPeriod.objects.visible_to(current_user(request)), pk=period_id)


@login_required
def period_detail(request: HttpRequest, period_id: str) -> HttpResponse:
    period = _period_for(request, period_id)
    lines = ReportLine.objects.filter(period=period).order_by("line_no")
    kind = request.GET.get("kind", "")
    if kind:
        lines = lines.filter(kind=kind)
    page = Paginator(lines, 50).get_page(request.GET.get("page"))
    jobs = ReportJob.objects.filter(period=period).prefetch_related("files").order_by("-created_at")[:10]
    over = timezone.now() >= period.ends_at
    context = {
        "period": period,
        "summary": period.summary or {},
        "page": page,
        "kind": kind,
        "query": f"kind={kind}" if kind else "",
        "jobs": jobs,
        # The newest job still at work: the lines below say it is being built, not "no report yet".
        "building": next((job for job in jobs if not job.finished), None),
        "close_form": CloseForm(),
        "rates": period.rates.select_related("set_by").order_by("currency"),
        "base_currency": currency_services.base_currency(period=period),
        "rate_form": ExchangeRateForm(),
        "job_form": ReportJobForm(),
        "over": over,
        # What closing now would freeze unpriced: worked out live for a month that can be closed.
        "unpriced": _unpriced_text(period) if over and period.state != "closed" else "",
    }
    return render(request, "metering/period.html", context)


@login_required
@require_POST
def period_exchange_rate(request: HttpRequest, period_id: str) -> HttpResponse:
    """Finance sets a currency's exchange rate for the period; a refusal is shown on the period's
    page and changes nothing."""
    user = current_user(request)
    period = _period_for(request, period_id)
    form = ExchangeRateForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            found = currency_services.set_exchange_rate(
                actor=user,
                period_id=period.pk,
                currency=data["currency"],
                rate=data["rate"],
                source=data["source"],
                as_of=data["as_of"],
            )
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, f"{period.label}: {found} ({found.source}, {found.as_of}).")
    else:
        problems = "; ".join(
            f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items()
        )
        messages.error(request, f"Exchange rate not set: {problems}")
    return redirect("metering-period", period_id=period.pk)


def _unpriced_text(period: BillingPeriod) -> str:
    hours = unpriced_card_hours_of(period=period)
    return f"{hours.normalize():f}" if hours else ""


@login_required
@require_POST
def period_close(request: HttpRequest, period_id: str) -> HttpResponse:
    user = current_user(request)
    period = _period_for(request, period_id)
    form = CloseForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Tick the confirmation to close the period: it cannot be undone.")
        return redirect("metering-period", period_id=period.pk)
    try:
        period_services.close_billing_period(
            actor=user,
            period_id=period.pk,
            idle=form.cleaned_data["idle"],
            acknowledge_unpriced=form.cleaned_data["acknowledge_unpriced"],
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{period.label} is closed; its report is final. Build the exports below.")
    return redirect("metering-period", period_id=period.pk)


@login_required
@require_POST
def period_start_closing(request: HttpRequest, period_id: str) -> HttpResponse:
    period = _period_for(request, period_id)
    try:
        period_services.start_closing_period(actor=current_user(request), period_id=period.pk)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{period.label} is in its grace period: late data still lands in place.")
    return redirect("metering-period", period_id=period.pk)


@login_required
@require_POST
def job_create(request: HttpRequest, period_id: str) -> HttpResponse:
    period = _period_for(request, period_id)
    form = ReportJobForm(request.POST)
    idle = (form.cleaned_data["idle"] or None) if form.is_valid() else None
    try:
        job = job_services.request_report_job(actor=current_user(request), period_id=period.pk, idle=idle)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        build_report_task.delay(str(job.pk))
        messages.success(request, "Report queued: its progress shows below.")
    return redirect("metering-period", period_id=period.pk)


@login_required
def job_progress(request: HttpRequest, job_id: str) -> HttpResponse:
    """The job's row, polled by htmx until it is finished (the fragment then stops polling)."""
    job = get_object_or_404(
        ReportJob.objects.visible_to(current_user(request)).prefetch_related("files"), pk=job_id
    )
    return render(request, "metering/_job.html", {"job": job})


@login_required
def job_download(request: HttpRequest, job_id: str, fmt: str) -> FileResponse:
    job = get_object_or_404(ReportJob.objects.visible_to(current_user(request)), pk=job_id)
    if fmt not in ExportFormat.values:
        raise Http404("No such format")
    stored = get_object_or_404(ReportFile.objects.filter(job=job, format=fmt))
    return FileResponse(stored.file.open("rb"), as_attachment=True, filename=stored.filename)
