"""The tenant pages: the tree, a tenant with its members, and forms by role. Thin: forms validate,
services decide, and a refused change becomes a message on the same form."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from gpuplatform.errors import DomainError
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.panels import TENANT, TENANT_DASHBOARD, panels_for
from tenants import scoping, services
from tenants.forms import MembershipForm, RoleForm, TenantForm
from tenants.models import Membership, Tenant

TREE_PAGE_SIZE = 50  # rows of the tree a page; a page break keeps depth order (indents stay true)


def _visible(request: HttpRequest, tenant_id: uuid.UUID) -> Tenant:
    tenant = Tenant.objects.visible_to(current_user(request)).filter(pk=tenant_id).first()
    if tenant is None:
        raise Http404("No such tenant")
    return tenant


def _fail(form: Any, error: DomainError) -> None:
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message)


@login_required
def tenant_tree(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    tenants = list(
        Tenant.objects.visible_to(user).annotate(member_count=Count("memberships")).order_by("path")
    )
    # Siblings in slug order: the path holds ids, so sort on the chain of ancestor slugs instead.
    ancestor_ids = {ancestor for t in tenants for ancestor in t.ancestor_ids}
    slug_of = dict(Tenant.objects.filter(pk__in=ancestor_ids).values_list("pk", "slug"))
    slug_of.update({t.pk: t.slug for t in tenants})
    tenants.sort(key=lambda t: [slug_of.get(a, "") for a in t.ancestor_ids] + [t.slug])
    query = request.GET.get("q", "").strip()
    if query:
        lowered = query.lower()
        tenants = [t for t in tenants if lowered in t.slug or lowered in t.display_name.lower()]
    # Depth relative to the shallowest visible tenant, so a team admin's tree starts at the left margin.
    base = min((t.depth for t in tenants), default=0)
    rows = [{"tenant": t, "indent": t.depth - base} for t in tenants]
    page = Paginator(rows, TREE_PAGE_SIZE).get_page(request.GET.get("page"))
    can_create_root = user.is_platform_admin
    can_create = can_create_root or bool(scoping.admin_root_paths(user))
    context = {
        "rows": page.object_list,
        "page": page,
        "query": query,
        "pager_query": urlencode({"q": query}) if query else "",
        "can_create": can_create,
    }
    # The live filter (htmx) swaps only the table.
    template = "tenants/_tree_rows.html" if getattr(request, "htmx", False) else "tenants/tree.html"
    return render(request, template, context)


@login_required
def tenant_detail(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    tenant = _visible(request, tenant_id)
    user = current_user(request)
    members = Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username")
    children = Tenant.objects.visible_to(user).filter(parent=tenant).order_by("slug")
    visible_ids = set(Tenant.objects.visible_to(user).values_list("pk", flat=True))
    ancestors = [
        t for t in Tenant.objects.filter(pk__in=tenant.ancestor_ids).order_by("depth") if t.pk in visible_ids
    ]
    context = {
        "tenant": tenant,
        "members": members,
        "children": children,
        "ancestors": ancestors,
        "namespaces": tenant.namespaces.all(),
        "can_manage": scoping.can_manage(user, tenant),
        "can_delete": scoping.can_manage_strictly_below(user, tenant),
        "member_form": MembershipForm(),
        "role_form": RoleForm,
        # Quotas, requests and holdings belong to higher apps; they fill the page's panels.
        "panels": [
            render_to_string(
                panel.template, {"tenant": tenant, **panel.context(user, tenant)}, request=request
            )
            for panel in panels_for(TENANT)
        ],
    }
    return render(request, "tenants/detail.html", context)


@login_required
def tenant_dashboard(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    """Quota against holds and use over time, queue waits and budgets: panels of the apps that own
    those figures (metering), for a tenant the viewer sees (another tenant's is a 404)."""
    tenant = _visible(request, tenant_id)
    user = current_user(request)
    panels = [
        render_to_string(panel.template, {"tenant": tenant, **panel.context(user, tenant)}, request=request)
        for panel in panels_for(TENANT_DASHBOARD)
    ]
    return render(request, "tenants/dashboard.html", {"tenant": tenant, "panels": panels})


@login_required
def tenant_create(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    parents = Tenant.objects.manageable_by(user).order_by("path")
    initial_parent = request.GET.get("parent")
    form = TenantForm(
        request.POST or None,
        parent_choices=parents,
        initial={"parent": initial_parent} if initial_parent else None,
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            tenant = services.create_tenant(
                actor=user,
                slug=data["slug"],
                display_name=data["display_name"],
                cost_centre=data["cost_centre"],
                state=data["state"],
                parent_id=data["parent"].pk if data["parent"] else None,
                namespaces=data["namespaces"],
            )
        except DomainError as error:
            _fail(form, error)
        else:
            messages.success(request, f"Created {tenant.display_name}.")
            return redirect("tenant-detail", tenant_id=tenant.pk)
    return render(request, "tenants/form.html", {"form": form, "title": "New tenant"})


@login_required
def tenant_edit(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    tenant = _visible(request, tenant_id)
    user = current_user(request)
    parents = Tenant.objects.manageable_by(user).exclude(path__startswith=tenant.path).order_by("path")
    initial = {
        "slug": tenant.slug,
        "display_name": tenant.display_name,
        "cost_centre": tenant.cost_centre,
        "state": tenant.state,
        "parent": tenant.parent_id,
        "namespaces": "\n".join(str(ns).removeprefix("*/") for ns in tenant.namespaces.all()),
    }
    form = TenantForm(request.POST or None, parent_choices=parents, initial=initial)
    if not scoping.can_manage_strictly_below(user, tenant):
        form.fields["parent"].disabled = True
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        changes: dict[str, Any] = {
            "slug": data["slug"],
            "display_name": data["display_name"],
            "cost_centre": data["cost_centre"],
            "state": data["state"],
            "namespaces": data["namespaces"],
        }
        if not form.fields["parent"].disabled:
            changes["parent_id"] = data["parent"].pk if data["parent"] else None
        try:
            services.update_tenant(actor=user, tenant_id=tenant.pk, **changes)
        except DomainError as error:
            _fail(form, error)
        else:
            messages.success(request, f"Saved {data['display_name']}.")
            return redirect("tenant-detail", tenant_id=tenant.pk)
    return render(
        request, "tenants/form.html", {"form": form, "title": f"Edit {tenant.display_name}", "tenant": tenant}
    )


@login_required
@require_POST
def tenant_delete(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    tenant = _visible(request, tenant_id)
    parent_id = tenant.parent_id
    try:
        services.delete_tenant(actor=current_user(request), tenant_id=tenant.pk)
    except DomainError as error:
        messages.error(request, error.message)
        return redirect("tenant-detail", tenant_id=tenant.pk)
    messages.success(request, f"Deleted {tenant.display_name}.")
    return redirect("tenant-detail", tenant_id=parent_id) if parent_id else redirect("tenant-tree")


@login_required
@require_POST
def membership_add(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    tenant = _visible(request, tenant_id)
    form = MembershipForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {v[0]}" for k, v in form.errors.items()))
    else:
        try:
            services.add_membership(
                actor=current_user(request),
                tenant_id=tenant.pk,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
            )
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request, f"Added {form.cleaned_data['username']} as {form.cleaned_data['role']}."
            )
    return redirect("tenant-detail", tenant_id=tenant.pk)


def _visible_membership(request: HttpRequest, membership_id: uuid.UUID) -> Membership:
    membership = Membership.objects.visible_to(current_user(request)).filter(pk=membership_id).first()
    if membership is None:
        raise Http404("No such membership")
    return membership


@login_required
@require_POST
def membership_edit(request: HttpRequest, membership_id: uuid.UUID) -> HttpResponse:
    membership = _visible_membership(request, membership_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            services.change_membership_role(
                actor=current_user(request),
                membership_id=membership.pk,
                role=form.cleaned_data["role"],
            )
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, f"{membership.user} is now {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Choose a valid role.")
    return redirect("tenant-detail", tenant_id=membership.tenant_id)


@login_required
@require_POST
def membership_remove(request: HttpRequest, membership_id: uuid.UUID) -> HttpResponse:
    membership = _visible_membership(request, membership_id)
    try:
        services.remove_membership(actor=current_user(request), membership_id=membership.pk)
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Removed {membership.user} from {membership.tenant}.")
    return redirect("tenant-detail", tenant_id=membership.tenant_id)
