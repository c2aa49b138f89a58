"""Rollout pages: every rollout, one rollout's progress per node (polled by htmx while it is active),
and the platform-admin's controls: start, pause, resume, abort, roll back. Platform roles only; the
controls call the services the API calls, which make the same role checks."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import DomainError
from gpuplatform.ids import is_uuid
from gpuplatform.ui.auth import current_user
from inventory.models import Node, NodePool
from policies.models import ACTIVE_STATES, NodePolicyState, PolicyRevision, Rollout
from policies.node_states import NodeState
from policies.services import rollout_controls
from policies.services.rollouts import start_rollout

# Each control: its service, and the consequence a confirmation states (None: not destructive).
CONTROLS: dict[str, tuple[Any, str | None]] = {
    "pause": (rollout_controls.pause_rollout, None),
    "resume": (rollout_controls.resume_rollout, None),
    "abort": (
        rollout_controls.abort_rollout,
        "Nodes that applied this revision keep it; the others stay on what they run now. "
        "The rollout cannot be resumed.",
    ),
    "rollback": (
        rollout_controls.roll_back_rollout,
        "Every node this rollout reached is put back on the revision it ran before, as a new "
        "revision rolled out at once; this rollout ends.",
    ),
}
DONE = {"pause": "Paused.", "resume": "Resumed.", "abort": "Aborted.", "rollback": "Rolling back."}


@login_required
def rollouts(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = Rollout.objects.visible_to(user).select_related("pool", "pool__cluster", "revision")[:100]
    return render(request, "policies/rollouts.html", {"rollouts": rows})


def _visible_rollout(request: HttpRequest, rollout_id: Any) -> Rollout:
    rollout = (
        Rollout.objects.visible_to(current_user(request))
        .select_related("pool", "pool__cluster", "revision", "from_revision", "rolled_back_by__revision")
        .filter(pk=rollout_id)
        .first()
    )
    if rollout is None:
        raise Http404
    return rollout


def _live_context(request: HttpRequest, rollout: Rollout) -> dict[str, Any]:
    user = current_user(request)
    nodes = (
        NodePolicyState.objects.visible_to(user)
        .filter(rollout=rollout)
        .select_related("node", "desired_revision")
        .order_by("node__name")
    )
    counts = dict(nodes.values_list("state").annotate(n=Count("pk")).order_by())
    # Progress: the pool's nodes that run this rollout's revision and showed it (applied, and for a
    # MIG change verified on the node), out of every present node of the pool, reached yet or not.
    converged = nodes.filter(
        state=NodeState.APPLIED, verified=True, desired_revision_id=rollout.revision_id
    ).count()
    pool_nodes = Node.objects.visible_to(user).filter(pool_id=rollout.pool_id, present=True).count()
    active = rollout.state in ACTIVE_STATES
    controls = []
    if user.is_platform_admin:
        if rollout.state == "running":
            controls.append("pause")
        if rollout.state == "paused":
            controls.append("resume")
        if active:
            controls.append("abort")
        if rollout.from_revision_id and not rollout.rolled_back_by_id:
            controls.append("rollback")
    return {
        "rollout": rollout,
        "nodes": nodes,
        "counts": sorted(counts.items()),
        "converged": converged,
        "pool_nodes": pool_nodes,
        "active": active,
        "controls": [{"name": c, "consequence": CONTROLS[c][1]} for c in controls],
    }


@login_required
def rollout_detail(request: HttpRequest, rollout_id: str) -> HttpResponse:
    rollout = _visible_rollout(request, rollout_id)
    context = _live_context(request, rollout)
    if request.GET.get("part") == "live":
        # What htmx polls: the live part alone, which stops polling once the rollout is finished.
        return render(request, "policies/_rollout_live.html", context)
    context["events"] = AuditEvent.objects.filter(object_id=str(rollout.pk)).order_by("at")[:50]
    return render(request, "policies/rollout.html", context)


@login_required
@require_POST
def rollout_control(request: HttpRequest, rollout_id: str, control: str) -> HttpResponse:
    rollout = _visible_rollout(request, rollout_id)
    if control not in CONTROLS:
        raise Http404
    service, consequence = CONTROLS[control]
    target = rollout
    if consequence and request.POST.get("confirm") != "yes":
        messages.error(request, f"Tick the confirmation first: {consequence}")
    else:
        try:
            target = service(actor=current_user(request), rollout_id=rollout.pk)
        except DomainError as refused:
            messages.error(request, refused.message)
        else:
            messages.success(request, DONE[control])
    if request.headers.get("HX-Request") and target.pk == rollout.pk:
        # In place: the live part again, with the outcome as its message.
        rollout = _visible_rollout(request, rollout.pk)
        return render(request, "policies/_rollout_live.html", _live_context(request, rollout))
    if request.headers.get("HX-Request"):
        # A roll back is a new rollout: the browser goes to its page.
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("policy-rollout", kwargs={"rollout_id": target.pk})
        return response
    return redirect("policy-rollout", rollout_id=target.pk)


@login_required
@require_POST
def rollout_start(request: HttpRequest, pool_id: Any) -> HttpResponse:
    user = current_user(request)
    if not user.is_platform_admin:
        raise Http404
    pool = get_object_or_404(NodePool, pk=pool_id)
    revision_id = request.POST.get("revision", "")
    raw = request.POST.get("max_unavailable", "1")
    revision = None
    if is_uuid(revision_id):
        revision = PolicyRevision.objects.filter(pool=pool, pk=revision_id).first()
    if revision is None or not raw.isdigit():
        messages.error(request, "Choose a revision of this pool and a whole number of nodes at a time.")
        return redirect("policies-pool", pool_id=pool.pk)
    try:
        rollout = start_rollout(
            actor=user,
            pool_id=pool.pk,
            revision_id=revision.pk,
            max_unavailable=int(raw),
            approve_drain=request.POST.get("approve_drain") == "on",
        )
    except DomainError as refused:
        messages.error(request, refused.message)
        return redirect("policies-pool", pool_id=pool.pk)
    messages.success(request, f"Rollout of r{revision.number} started.")
    return redirect("policy-rollout", rollout_id=rollout.pk)
