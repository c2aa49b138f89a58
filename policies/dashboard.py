"""Policies' parts of the dashboards: the pool dashboard's policy state (the declared sharing mode, its
revisions, the latest rollout and where each node's delivery stands), and the overview's attention
items (nodes in drift, failed, blocked or offline; rollouts that failed in the last week). Policy rows
are the platform's (PlatformOnlyQuerySet): a tenant sees that the state is the platform team's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.ui.attention import Attention
from inventory.models import NodePool
from policies.models import NodePolicyState, PolicyRevision, Rollout, RolloutState, SharingPolicy
from policies.node_states import NodeState

TEMPLATE = "policies/_pool_state.html"
NODES_SHOWN = 50
TROUBLED = (NodeState.DRIFT, NodeState.FAILED, NodeState.BLOCKED, NodeState.OFFLINE)
FAILED_ROLLOUT_DAYS = 7


def pool_state_context(user: User, pool: NodePool) -> dict[str, Any]:
    if not user.sees_all_tenants:
        return {"policy_hidden": True}
    policy = SharingPolicy.objects.visible_to(user).filter(pool=pool).first()
    latest = PolicyRevision.objects.visible_to(user).filter(pool=pool).order_by("-number").first()
    rollout = (
        Rollout.objects.visible_to(user)
        .filter(pool=pool)
        .select_related("revision")
        .order_by("-created_at")
        .first()
    )
    states = (
        NodePolicyState.objects.visible_to(user)
        .filter(node__pool=pool, node__present=True)
        .select_related("node", "desired_revision")
        .order_by("node__name")
    )
    counts = dict(states.order_by().values_list("state").annotate(n=Count("pk")).values_list("state", "n"))
    nodes = list(states[: NODES_SHOWN + 1])
    return {
        "policy_hidden": False,
        "policy": policy,
        "latest_revision": latest,
        "rollout": rollout,
        "node_states": nodes[:NODES_SHOWN],
        "node_states_more": len(nodes) > NODES_SHOWN,
        "state_counts": [(state.value, counts.get(state.value, 0)) for state in NodeState],
        "converged": counts.get(NodeState.APPLIED.value, 0),
        "node_total": sum(counts.values()),
        "unpublished": policy is not None and policy.published_revision is None,
    }


def attention(user: User) -> list[Attention]:
    if not user.is_platform_admin:
        return []
    items = []
    troubled = (
        NodePolicyState.objects.visible_to(user)
        .filter(state__in=[s.value for s in TROUBLED], node__present=True)
        .values_list("state", "node__pool_id")
        .annotate(n=Count("pk"))
        .order_by("state", "node__pool_id")
    )
    by_state: dict[str, int] = {}
    pools: dict[str, object] = {}
    for state, pool_id, n in troubled:
        by_state[state] = by_state.get(state, 0) + n
        pools.setdefault(state, pool_id)
    for state, n in sorted(by_state.items()):
        pool_id = pools[state]
        url = reverse("pool-dashboard", args=[pool_id]) if pool_id else reverse("policy-rollouts")
        items.append(
            Attention(
                key=f"policy-nodes-{state}",
                severity="critical" if state in (NodeState.FAILED, NodeState.DRIFT) else "warning",
                title=f"{n} node{'s' if n != 1 else ''} {state}",
                detail=f"policy delivery: the node's agent is {state}"
                + (" (its applied bundle is not the desired one)" if state == NodeState.DRIFT else ""),
                url=url,
                count=n,
            )
        )
    since = timezone.now() - timedelta(days=FAILED_ROLLOUT_DAYS)
    failed = list(
        Rollout.objects.visible_to(user)
        .filter(state=RolloutState.FAILED, finished_at__gte=since)
        .select_related("pool", "revision")
        .order_by("-finished_at")[:5]
    )
    if failed:
        first = failed[0]
        items.append(
            Attention(
                key="policy-rollouts-failed",
                severity="critical",
                title=f"{len(failed)} rollout{'s' if len(failed) != 1 else ''} failed this week",
                detail=f"latest: r{first.revision.number} on {first.pool.name}, rolled back",
                url=reverse("policy-rollout", args=[first.pk]),
                count=len(failed),
            )
        )
    return items
