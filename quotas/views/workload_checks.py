"""A Kueue Workload held by gpuplatform's admission check: its estimate, why it waits, and the
approval form (an admin above the tenant approves; any admin of the tenant rejects, with a note).
Another tenant's is a 404."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from gpuplatform.accounts.models import User
from gpuplatform.errors import DomainError, NotFound
from gpuplatform.ui.auth import current_user
from quotas.forms import DecisionForm
from quotas.kueue_check.service import decide_workload_approval
from quotas.models import WorkloadApproval, WorkloadCheck
from quotas.services import approval_authority
from tenants import scoping

VERDICTS = {"approve": True, "reject": False}


def _found(user: User, check_id: str) -> WorkloadCheck:
    found = (
        WorkloadCheck.objects.visible_to(user)
        .select_related("tenant", "workload", "workload__cluster", "approved_by")
        .filter(pk=check_id)
        .first()
    )
    if found is None:
        raise Http404("No such workload.")
    return found


def _context(user: User, found: WorkloadCheck, **extra: Any) -> dict[str, Any]:
    awaiting = found.approval == WorkloadApproval.AWAITING
    may_decide = awaiting and scoping.can_manage(user, found.tenant)
    may_approve = may_decide and approval_authority.may_approve_below(
        user, approval_authority.governing_tenant(tenant=found.tenant, requester=None).path
    )
    return {
        "c": found,
        "w": found.workload,
        "can_reject": may_decide,
        "can_approve": may_approve,
        "decision_form": extra.pop("decision_form", None) or DecisionForm(),
        **extra,
    }


@login_required
def workload_check(request: HttpRequest, check_id: str) -> HttpResponse:
    user = current_user(request)
    return render(request, "quotas/workload_check.html", _context(user, _found(user, check_id)))


@login_required
@require_POST
def decide(request: HttpRequest, check_id: str, verdict: str) -> HttpResponse:
    """Approve or reject with a note, as the API's decision does."""
    user = current_user(request)
    if verdict not in VERDICTS:
        raise Http404("No such decision.")
    found = _found(user, check_id)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, str(form.errors["note"][0]))
        return redirect("queues-workload", check_id=found.pk)
    try:
        decide_workload_approval(
            actor=user, check_id=found.pk, approve=VERDICTS[verdict], note=form.cleaned_data["note"]
        )
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("queues-workload", check_id=found.pk)
    messages.success(
        request,
        f"{verdict.capitalize()}d, with your note."
        + (" The workload is admitted on gpuplatform's next check." if VERDICTS[verdict] else ""),
    )
    return redirect("queues-workload", check_id=found.pk)
