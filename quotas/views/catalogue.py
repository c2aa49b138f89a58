"""Catalogue pages: list, create, edit and delete flavors, priority classes, quotas, budgets and
queues. Thin adapters: the form checks shape, the catalogue service decides rights and cross-row
rules and writes the audit event; a refusal becomes a message on the same form and nothing changes.
A row the user cannot see is a 404, as in the API."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from gpuplatform.accounts.models import User
from gpuplatform.errors import DomainError
from gpuplatform.input_warnings import InputWarning, confirmed
from gpuplatform.ui.auth import current_user
from quotas.catalogue_forms import (
    BudgetForm,
    CatalogueForm,
    FlavorForm,
    PriorityClassForm,
    QueueForm,
    QuotaForm,
    tenants_below,
)
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.selectors import flavors_not_offered
from quotas.services import catalogue as catalogue_services
from quotas.services.advice import catalogue_warnings
from tenants import scoping
from tenants.models import Tenant

PAGE_SIZE = 25


def _platform_admin(user: User, row: Any) -> bool:
    return user.is_platform_admin


def _from_above(user: User, row: Any) -> bool:
    return scoping.can_manage_strictly_below(user, row.tenant)


def _tenant_admin(user: User, row: Any) -> bool:
    return scoping.can_manage(user, row.tenant)


def _dedicated(row: Any) -> str:
    return row.tenant.slug if row.tenant_id else "everyone"


def _optional(value: Any) -> str:
    return "—" if value is None else str(value)


@dataclass(frozen=True)
class Kind:
    """One catalogue model as the pages show it: its columns and who may change a row."""

    slug: str
    title: str
    singular: str
    model: type[Any]
    form: type[CatalogueForm]
    related: tuple[str, ...]
    columns: tuple[tuple[str, Callable[[Any], Any]], ...]
    may_change: Callable[[User, Any], bool]
    may_create: Callable[[User], bool]
    # Words per row read once for a whole page (a flavor's capacity its pool does not offer, and why).
    notes: Callable[[list[Any]], dict[Any, str]] | None = None


def _flavor_notes(rows: list[Any]) -> dict[Any, str]:
    return flavors_not_offered(flavors=rows)


KINDS = {
    kind.slug: kind
    for kind in (
        Kind(
            slug="flavors",
            title="Flavors",
            singular="flavor",
            model=Flavor,
            form=FlavorForm,
            related=("pool", "tenant"),
            columns=(
                ("Name", lambda f: f.name),
                ("Display name", lambda f: f.display_name),
                ("Kind", lambda f: f.kind),
                ("Pool", lambda f: f.pool.name if f.pool_id else "— (pool missing)"),
                ("GPU model", lambda f: f.gpu_model),
                (
                    "Resources",
                    lambda f: ", ".join(f"{r['name']} = {r['ge_per_unit']} GE" for r in f.resources),
                ),
                ("Approval above", lambda f: _optional(f.approval_above)),
                ("Dedicated to", _dedicated),
            ),
            may_change=_platform_admin,
            may_create=lambda user: user.is_platform_admin,
            notes=_flavor_notes,
        ),
        Kind(
            slug="priority-classes",
            title="Priority classes",
            singular="priority class",
            model=PriorityClass,
            form=PriorityClassForm,
            related=("tenant",),
            columns=(
                ("Name", lambda p: p.name),
                ("Value", lambda p: p.value),
                ("Preemptible", lambda p: "yes" if p.preemptible else "no"),
                ("Description", lambda p: p.description),
                ("Dedicated to", _dedicated),
            ),
            may_change=_platform_admin,
            may_create=lambda user: user.is_platform_admin,
        ),
        Kind(
            slug="quotas",
            title="Quotas",
            singular="quota",
            model=Quota,
            form=QuotaForm,
            related=("tenant", "flavor"),
            columns=(
                ("Tenant", lambda q: q.tenant.slug),
                ("Flavor", lambda q: q.flavor.name),
                ("Resource", lambda q: q.resource),
                ("Nominal", lambda q: q.nominal),
                ("Borrowing limit", lambda q: _optional(q.borrowing_limit)),
                ("Lending limit", lambda q: _optional(q.lending_limit)),
            ),
            may_change=_from_above,
            may_create=lambda user: tenants_below(user).exists(),
        ),
        Kind(
            slug="budgets",
            title="Budgets",
            singular="budget",
            model=Budget,
            form=BudgetForm,
            related=("tenant", "flavor"),
            columns=(
                ("Tenant", lambda b: b.tenant.slug),
                ("Flavor", lambda b: b.flavor.name if b.flavor_id else "every flavor"),
                ("Limit (GE-hours a month)", lambda b: b.limit_ge_hours),
                ("Hard", lambda b: "hard" if b.hard else "soft"),
            ),
            may_change=_from_above,
            may_create=lambda user: tenants_below(user).exists(),
        ),
        Kind(
            slug="queues",
            title="Queues",
            singular="queue",
            model=Queue,
            form=QueueForm,
            related=("tenant",),
            columns=(
                ("Tenant", lambda q: q.tenant.slug),
                ("Name", lambda q: q.name),
                ("Strategy", lambda q: q.strategy),
                ("Weight", lambda q: q.weight),
            ),
            may_change=_tenant_admin,
            may_create=lambda user: Tenant.objects.manageable_by(user).exists(),
        ),
    )
}


def _kind(slug: str) -> Kind:
    if slug not in KINDS:
        raise Http404("No such catalogue")
    return KINDS[slug]


def _visible(kind: Kind, user: User) -> QuerySet[Any]:
    return kind.model.objects.visible_to(user).select_related(*kind.related)


def _row(kind: Kind, user: User, pk: uuid.UUID) -> Any:
    found = _visible(kind, user).filter(pk=pk).first()
    if found is None:
        raise Http404("Not found")
    return found


def _fail(form: CatalogueForm, error: DomainError) -> None:
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message)


def _unconfirmed_warnings(
    request: HttpRequest, kind: Kind, form: CatalogueForm, current: Any | None = None
) -> list[InputWarning]:
    """The warnings the user has not yet said "save anyway" to: shown on the form, nothing saved."""
    if confirmed(request.POST):
        return []
    return catalogue_warnings(model=kind.model, values=form.values(), current=current)


@login_required
def catalogue_index(request: HttpRequest) -> HttpResponse:
    return redirect("catalogue-list", kind="flavors")


@login_required
def catalogue_list(request: HttpRequest, kind: str) -> HttpResponse:
    found = _kind(kind)
    user = current_user(request)
    rows_shown = _visible(found, user)
    tenant = request.GET.get("tenant", "").strip()
    if tenant:  # the tenant page links here for one tenant's rows
        rows_shown = rows_shown.filter(tenant__slug=tenant)
    page = Paginator(rows_shown, PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page)
    notes = found.notes(shown) if found.notes else None
    rows = [
        {
            "obj": obj,
            "cells": [cell(obj) for _, cell in found.columns],
            "note": notes.get(obj.pk, "") if notes is not None else "",
            "can_change": found.may_change(user, obj),
        }
        for obj in shown
    ]
    headers = [header for header, _ in found.columns]
    context = {
        "kind": found,
        "kinds": KINDS.values(),
        "headers": headers,
        "rows": rows,
        "page": page,
        "can_create": found.may_create(user),
        "query": urlencode({"tenant": tenant}) if tenant else "",
        "previous_label": "← Previous",
        "next_label": "Next →",
    }
    return render(request, "quotas/catalogue/list.html", context)


@login_required
def catalogue_create(request: HttpRequest, kind: str) -> HttpResponse:
    found = _kind(kind)
    user = current_user(request)
    form = found.form(request.POST or None, user=user)
    warnings: list[InputWarning] = []
    if request.method == "POST" and form.is_valid():
        warnings = _unconfirmed_warnings(request, found, form)
    if request.method == "POST" and form.is_valid() and not warnings:
        try:
            catalogue_services.create_entry(actor=user, model=found.model, **form.values())
        except DomainError as error:
            _fail(form, error)
        else:
            messages.success(request, f"Created the {found.singular}.")
            return redirect("catalogue-list", kind=found.slug)
    context = {
        "kind": found,
        "kinds": KINDS.values(),
        "form": form,
        "title": f"New {found.singular}",
        "warnings": warnings,
    }
    return render(request, "quotas/catalogue/form.html", context)


@login_required
def catalogue_edit(request: HttpRequest, kind: str, pk: uuid.UUID) -> HttpResponse:
    found = _kind(kind)
    user = current_user(request)
    row = _row(found, user, pk)
    form = found.form(request.POST or None, user=user, instance=row)
    may_change = found.may_change(user, row)
    if not may_change:  # shown, not offered; a POST anyway meets the service's refusal
        for field in form.fields.values():
            field.disabled = True
    warnings: list[InputWarning] = []
    if request.method == "POST" and form.is_valid() and may_change:
        warnings = _unconfirmed_warnings(request, found, form, current=row)
    if request.method == "POST" and form.is_valid() and not warnings:
        try:
            catalogue_services.update_entry(actor=user, model=found.model, pk=row.pk, **form.values())
        except DomainError as error:
            _fail(form, error)
        else:
            messages.success(request, f"Saved the {found.singular}.")
            return redirect("catalogue-list", kind=found.slug)
    context = {
        "kind": found,
        "kinds": KINDS.values(),
        "form": form,
        "row": row,
        "title": f"Edit {found.singular}" if may_change else found.singular.capitalize(),
        "can_delete": may_change,
        "read_only": not may_change,
        "warnings": warnings,
        "note": found.notes([row]).get(row.pk, "") if found.notes else "",
    }
    return render(request, "quotas/catalogue/form.html", context)


@login_required
@require_POST
def catalogue_delete(request: HttpRequest, kind: str, pk: uuid.UUID) -> HttpResponse:
    found = _kind(kind)
    user = current_user(request)
    row = _row(found, user, pk)
    try:
        catalogue_services.delete_entry(actor=user, model=found.model, pk=row.pk)
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("catalogue-edit", kind=found.slug, pk=row.pk)
    messages.success(request, f"Deleted the {found.singular}.")
    return redirect("catalogue-list", kind=found.slug)
