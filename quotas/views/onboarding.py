"""Onboarding a team from its parent's tenant page: one form, one service call (onboard_team), all or
nothing. A refusal is shown on the step it came from, and nothing was created."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from gpuplatform.accounts.models import User
from gpuplatform.ui.auth import current_user
from quotas.models import Flavor, Quota
from quotas.onboarding_forms import OnboardingForm, QuotaRow
from quotas.services.onboarding import OnboardingRefused, TeamPlan, onboard_team
from tenants import scoping
from tenants.models import Tenant


def _quota_rows(user: User, parent: Tenant) -> list[QuotaRow]:
    """Every flavor resource the viewer sees, with what the parent holds of it: a tenant-admin's grant
    is carved out of that, so it is what the parent still has to give."""
    held = {
        (flavor_id, resource): nominal
        for flavor_id, resource, nominal in Quota.objects.filter(tenant=parent).values_list(
            "flavor_id", "resource", "nominal"
        )
    }
    rows: list[QuotaRow] = []
    for flavor in Flavor.objects.visible_to(user).order_by("name"):
        for resource in flavor.resource_names:
            rows.append(
                QuotaRow(
                    field=f"quota_{len(rows)}",
                    flavor=flavor,
                    resource=resource,
                    parent_has=held.get((flavor.pk, resource)),
                )
            )
    return rows


def _summary(plan: TeamPlan) -> str:
    parts = [f"{len(plan.namespaces)} namespace(s)"] if plan.namespaces else []
    parts += [f"{len(plan.quotas)} quota(s)"] if plan.quotas else []
    parts += [f"queue {plan.queue_name}"] if plan.queue_name else []
    parts += ["a budget"] if plan.budget_ge_hours is not None else []
    parts += [f"{len(plan.members)} member(s)"] if plan.members else []
    return ", ".join(parts) or "no quota, queue, budget or members yet"


@login_required
def team_onboard(request: HttpRequest, tenant_id: uuid.UUID) -> HttpResponse:
    user = current_user(request)
    parent = Tenant.objects.visible_to(user).filter(pk=tenant_id).first()
    if parent is None:
        raise Http404("No such tenant")
    context: dict[str, object] = {"parent": parent}
    if not scoping.can_manage(user, parent):
        context["refused"] = (
            "Only a tenant-admin of this tenant (or above it) or a platform-admin onboards teams here."
        )
        return render(request, "quotas/onboarding.html", context, status=403)
    flavors = Flavor.objects.visible_to(user).order_by("name")
    form = OnboardingForm(request.POST or None, quota_rows=_quota_rows(user, parent), flavors=flavors)
    if request.method == "POST" and form.is_valid():
        plan = form.plan()
        try:
            team = onboard_team(actor=user, parent_id=parent.pk, plan=plan)
        except OnboardingRefused as refused:
            form.show_refusal(refused)
        else:
            messages.success(
                request, f"Onboarded {team.display_name} under {parent.display_name}: {_summary(plan)}."
            )
            return redirect("tenant-detail", tenant_id=team.pk)
    context.update(form=form, platform_admin=user.is_platform_admin)
    return render(request, "quotas/onboarding.html", context, status=400 if form.errors else 200)
