"""Statement pages: the list (finance sees every statement and books credits; a tenant's people see
the statements of the tenants they may see), one statement as a printable page, and its PDF."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from gpuplatform.errors import DomainError
from gpuplatform.ui.auth import current_user
from metering.forms import CreditForm
from metering.models import Credit, Statement
from metering.services.credits import book_credit
from metering.services.statements import statement_document
from metering.statements.pdf import render_pdf

PAGE = 50


@login_required
def statements(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = (
        Statement.objects.visible_to(user).select_related("period").order_by("-period__starts_at", "number")
    )
    label = request.GET.get("period", "")
    if label:
        rows = rows.filter(period__label=label)
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    credits = Credit.objects.visible_to(user).select_related("period", "tenant").order_by("-created_at")[:20]
    context = {
        "page": page,
        "label": label,
        "query": f"period={label}" if label else "",
        "credits": credits,
        "may_book": user.is_finance or user.is_platform_admin,
    }
    return render(request, "metering/statements.html", context)


@login_required
def credit_new(request: HttpRequest) -> HttpResponse:
    """Finance books a manual credit or charge; everyone else gets a 404 (the page is not theirs)."""
    user = current_user(request)
    if not (user.is_finance or user.is_platform_admin):
        raise Http404("No such page")
    form = CreditForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            credit = book_credit(
                actor=user,
                tenant_id=data["tenant"].pk,
                amount=data["amount"],
                currency=data["currency"],
                reason=data["reason"],
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(
                request,
                f"Booked {credit} for {credit.tenant.slug} in {credit.period.label}: "
                "it shows on the tenant's statement once that period closes."
            )  # fmt: skip
            return redirect("metering-statements")
    return render(request, "metering/credit_form.html", {"form": form}, status=400 if form.errors else 200)


def _statement_for(request: HttpRequest, statement_id: str) -> Statement:
    visible = Statement.objects.visible_to(current_user(request)).select_related("period")
    return get_object_or_404(visible, pk=statement_id)


@login_required
def statement_detail(request: HttpRequest, statement_id: str) -> HttpResponse:
    statement = _statement_for(request, statement_id)
    doc = statement_document(statement=statement)
    return render(request, "metering/statement.html", {"statement": statement, "doc": doc})


@login_required
def statement_pdf(request: HttpRequest, statement_id: str) -> HttpResponse:
    statement = _statement_for(request, statement_id)
    response = HttpResponse(
        render_pdf(statement_document(statement=statement)), content_type="application/pdf"
    )
    response["Content-Disposition"] = f'attachment; filename="statement-{statement.number}.pdf"'
    return response
