"""Rollout pages: every rollout, and one rollout's progress per node. Platform roles only."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from gpuplatform.audit.models import AuditEvent
from gpuplatform.ui.auth import current_user
from inventory.models import Node
from policies.models import NodePolicyState, Rollout
from policies.node_states import NodeState


@login_required
def rollouts(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rows = Rollout.objects.visible_to(user).select_related("pool", "pool__cluster", "revision")[:100]
    return render(request, "policies/rollouts.html", {"rollouts": rows})


@login_required
def rollout_detail(request: HttpRequest, rollout_id: str) -> HttpResponse:
    user = current_user(request)
    rollout = (
        Rollout.objects.visible_to(user)
        .select_related("pool", "pool__cluster", "revision", "from_revision", "rolled_back_by__revision")
        .filter(pk=rollout_id)
        .first()
    )
    if rollout is None:
        raise Http404
    nodes = (
        NodePolicyState.objects.visible_to(user)
        .filter(rollout=rollout)
        .select_related("node", "desired_revision")
    )
    counts = dict(nodes.values_list("state").annotate(n=Count("pk")).order_by())
    # Progress: the pool's nodes that run this rollout's revision and showed it (applied, and for a
    # MIG change verified on the node), out of every present node of the pool, reached yet or not.
    converged = nodes.filter(state=NodeState.APPLIED, verified=True).count()
    pool_nodes = Node.objects.visible_to(user).filter(pool_id=rollout.pool_id, present=True).count()
    events = AuditEvent.objects.filter(object_id=str(rollout.pk)).order_by("at")[:50]
    return render(
        request,
        "policies/rollout.html",
        {
            "rollout": rollout,
            "nodes": nodes,
            "counts": sorted(counts.items()),
            "converged": converged,
            "pool_nodes": pool_nodes,
            "events": events,
        },
    )
