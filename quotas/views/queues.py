"""Queue pages: pending requests in order with positions and reasons, the approval inbox, quota bars
and budget burn per tenant, and oversubscription. Every query goes through visible_to()."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from gpuplatform.ui.auth import current_user
from inventory.models import Workload
from quotas import selectors
from quotas.models import Budget, CapacityRequest, Flavor, Queue, Quota, WorkloadApproval, WorkloadCheck
from quotas.models.requests import ApprovalState, RequestState
from quotas.selectors import preemption_words, with_flavor_chains, with_not_offered
from quotas.services import approval_authority
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
    # Kueue Workloads gpuplatform's admission check holds for approval, decided on their own page.
    held = (
        WorkloadCheck.objects.visible_to(user)
        .filter(
            approval=WorkloadApproval.AWAITING, tenant__in=Tenant.objects.manageable_by(user).values("pk")
        )
        .select_related("tenant", "workload")
        .order_by("decided_at")
    )
    recent = visible.exclude(state=RequestState.PENDING).order_by("-updated_at")[:20]
    # Shown, empty or not, to whoever may decide something; not to members, who never can.
    can_approve = Tenant.objects.manageable_by(user).exists()
    pending_rows = with_not_offered(with_flavor_chains(list(pending)))
    queues = Queue.objects.visible_to(user).select_related("tenant")
    context = {
        "pending": pending_rows,
        "inbox": inbox_rows,
        "workload_inbox": list(held),
        "recent": recent,
        "can_approve": can_approve,
        "now": timezone.now(),
        "queue_policies": [{"queue": q, "words": preemption_words(q)} for q in queues],
        # Kueue's Workloads on kueue clusters (synced by inventory), newest first.
        "workloads": Workload.objects.visible_to(user)
        .filter(present=True)
        .select_related("cluster", "tenant", "budget_check")
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
