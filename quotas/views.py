"""Queue pages: pending requests in order with positions and reasons, the approval inbox, quota bars
and budget burn per tenant, and oversubscription. Every query goes through visible_to()."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuplatform.errors import DomainError, NotFound
from gpuplatform.ui.auth import current_user
from inventory.models import Workload
from quotas import selectors
from quotas.forms import RequestCapacityForm
from quotas.models import Budget, CapacityRequest, Flavor, Queue, Quota
from quotas.models.requests import ApprovalState, RequestState
from quotas.selectors import preemption_words, with_flavor_chains
from quotas.services import approval_authority
from quotas.services import requests as request_services
from tenants.models import Tenant

WORKLOADS_SHOWN = 50


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    visible = CapacityRequest.objects.visible_to(user).select_related(
        "tenant", "queue", "flavor", "priority_class"
    )
    pending = visible.filter(state=RequestState.PENDING).order_by(
        "tenant__path", "queue__name", F("queue_position").asc(nulls_last=True), "created_at"
    )
    # The inbox holds what this user may decide: the same rule as every other tenant change.
    inbox = visible.filter(
        state=RequestState.PENDING,
        approval=ApprovalState.AWAITING,
        tenant__in=Tenant.objects.manageable_by(user).values("pk"),
    ).order_by("created_at")
    # Approving needs distance (an admin above the governing tenant, not the requester); refusing
    # does not.
    inbox_list = list(inbox)
    governing = approval_authority.governing_paths(inbox_list)
    inbox_rows = [
        {"request": row, "can_approve": approval_authority.may_approve(user, row, governing[row.pk])}
        for row in inbox_list
    ]
    recent = visible.exclude(state=RequestState.PENDING).order_by("-updated_at")[:20]
    # Shown, empty or not, to whoever may decide something; not to members, who never can.
    can_approve = Tenant.objects.manageable_by(user).exists()
    pending_rows = with_flavor_chains(list(pending))
    queues = Queue.objects.visible_to(user).select_related("tenant")
    context = {
        "pending": pending_rows,
        "inbox": inbox_rows,
        "recent": recent,
        "can_approve": can_approve,
        "queue_policies": [{"queue": q, "words": preemption_words(q)} for q in queues],
        # Kueue's Workloads on kueue clusters (synced by inventory), newest first.
        "workloads": Workload.objects.visible_to(user)
        .filter(present=True)
        .select_related("cluster", "tenant")
        .order_by("-created_in_cluster", "name")[:WORKLOADS_SHOWN],
    }
    return render(request, "quotas/queue.html", context)


@login_required
def quota_overview(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    quotas = Quota.objects.visible_to(user)
    bars = selectors.quota_bars(quotas=quotas)
    burn = selectors.budget_burn(budgets=Budget.objects.visible_to(user), now=timezone.now())
    flavors = list(Flavor.objects.filter(pk__in=quotas.values("flavor_id")).select_related("pool"))
    enforcement = selectors.flavor_enforcement(flavors=flavors, visible=Flavor.objects.visible_to(user))
    unenforced = {f.name: enforcement[f.pk].reason for f in flavors if not enforcement[f.pk].separately}
    return render(
        request,
        "quotas/quota_overview.html",
        {"bars": bars, "burn": burn, "unenforced": sorted(unenforced.items())},
    )


@login_required
def oversubscription(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = selectors.oversubscription() if user.sees_all_tenants else []
    return render(request, "quotas/oversubscription.html", {"rows": rows})


@login_required
@require_POST
def decide(request: HttpRequest, request_id: str, verdict: str) -> HttpResponse:
    user = current_user(request)
    try:
        request_services.decide_approval(
            actor=user, request_id=request_id, approve=verdict == "approve", note=request.POST.get("note", "")
        )
        messages.success(request, f"Request {verdict}d.")
    except NotFound as exc:  # another tenant's request: a 404, as on the API
        raise Http404(exc.message) from exc
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("queues")


@login_required
def request_capacity(request: HttpRequest) -> HttpResponse:
    """A tenant asks for capacity: the API's service, its answers and its messages."""
    user = current_user(request)
    form = RequestCapacityForm(request.POST or None, user=user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            fallback = data.get("fallback_flavor") or ""
            choice: dict[str, Any] = (
                {"flavors": [data["flavor"], fallback]} if fallback else {"flavor": data["flavor"]}
            )
            submitted = request_services.submit_request(
                actor=user,
                tenant=data["tenant"],
                **choice,
                priority_class=data["priority_class"] or None,
                amount=data["amount"],
                duration_seconds=data["duration_seconds"],
                reason=data["reason"],
                idempotency_key=data["idempotency_key"],
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect("queues-request", request_id=submitted.request.pk)
    return render(request, "quotas/request_form.html", {"form": form})


@login_required
def request_detail(request: HttpRequest, request_id: str) -> HttpResponse:
    """One request and its timeline of transitions; another tenant's request is a 404."""
    user = current_user(request)
    found = get_object_or_404(
        CapacityRequest.objects.visible_to(user).select_related(
            "tenant", "queue", "flavor", "priority_class", "created_by"
        ),
        pk=request_id,
    )
    timeline = found.transitions.select_related("actor").order_by("at", "id")
    with_flavor_chains([found])
    context = {"r": found, "timeline": timeline, "policy": preemption_words(found.queue)}
    return render(request, "quotas/request_detail.html", context)
