"""Inventory pages: clusters with sync health, pools, a node's GPUs drawn as blocks, fragmentation,
allocation history. Every query goes through visible_to(), like the API."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Case, Count, Q, Sum, When
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from gpuplatform.errors import DomainError
from gpuplatform.ui.auth import current_user
from gpuplatform.ui.panels import POOL_DASHBOARD, panels_for
from inventory import selectors, services
from inventory.api.filters import AllocationFilter
from inventory.capacity import pool_model_capacity
from inventory.models import Allocation, Cluster, EnforcementBackend, Node, NodePool, ParseIssueCount
from inventory.node_layout import node_layout, tenant_colour
from inventory.sync.heartbeats import judge_sync_states
from inventory.topology import CliqueSummary, pool_cliques

POOLS_PER_PAGE = 25


@login_required
def clusters(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    cluster_rows = (
        Cluster.objects.visible_to(user)
        .annotate(parse_issue_count=Sum("parse_issues__count"))
        .prefetch_related("sync_states")
        .select_related("kueue_state")
        .order_by("name")  # the aggregate's GROUP BY drops Meta.ordering
    )
    clusters_shown: list[Cluster] = list(cluster_rows)
    if user.sees_all_tenants:
        clusters_shown = judge_sync_states(clusters_shown)
    page = Paginator(
        NodePool.objects.visible_to(user)
        .select_related("cluster", "tenant")
        .annotate(node_count=Count("nodes", filter=Q(nodes__present=True)))
        .order_by("cluster__name", "name"),
        POOLS_PER_PAGE,
    ).get_page(request.GET.get("page"))
    pools = list(page.object_list)
    capacity = pool_model_capacity(pool_ids=[p.pk for p in pools])
    cliques = pool_cliques(pool_ids=[p.pk for p in pools])
    for pool in pools:
        pool.nvlink = _nvlink_summary(cliques.get(pool.pk, []))
        rows = capacity.get(pool.pk, [])
        pool.cards = sum(r.cards for r in rows)
        pool.advertised_ge = sum((r.advertised_ge for r in rows), start=Decimal(0))
        pool.free_ge = sum((r.free_ge for r in rows), start=Decimal(0))
    issues = ParseIssueCount.objects.visible_to(user).select_related("cluster").order_by("-count")[:20]
    return render(
        request,
        "inventory/clusters.html",
        {
            "clusters": clusters_shown,
            "backends": EnforcementBackend.choices,
            "pools": pools,
            "page": page,
            "issues": issues,
            "previous_label": "← Previous",
            "next_label": "Next →",
        },
    )


@login_required
@require_POST
def cluster_enforcement(request: HttpRequest, cluster_id: uuid.UUID) -> HttpResponse:
    """A platform-admin switches the cluster's enforcement backend; anyone else finds no cluster."""
    user = current_user(request)
    cluster = get_object_or_404(Cluster.objects.visible_to(user), pk=cluster_id)
    try:
        services.update_cluster(
            actor=user, cluster_id=cluster.pk, enforcement_backend=request.POST.get("enforcement_backend", "")
        )
    except DomainError as error:
        messages.error(request, error.message)
    else:
        cluster.refresh_from_db(fields=["enforcement_backend"])
        messages.success(
            request,
            f"Cluster {cluster.name} now enforces through {cluster.get_enforcement_backend_display()}.",
        )
    return redirect("inventory")


def _nvlink_summary(cliques: list[CliqueSummary]) -> str:
    """ "2 cliques, 4 nodes · 1 node on no fabric"; "" when no node has fabric."""
    fabric = [c for c in cliques if c.clique]
    if not fabric:
        return ""
    nodes = sum(c.nodes for c in fabric)
    text = f"{len(fabric)} clique{'s' if len(fabric) != 1 else ''}, {nodes} node{'s' if nodes != 1 else ''}"
    rest = sum(c.nodes for c in cliques if not c.clique)
    return text + (f" · {rest} node{'s' if rest != 1 else ''} on no fabric" if rest else "")


@login_required
def pool_detail(request: HttpRequest, pool_id: str) -> HttpResponse:
    user = current_user(request)
    pool = get_object_or_404(
        NodePool.objects.visible_to(user).select_related("cluster", "tenant"), pk=pool_id
    )
    capacity = pool_model_capacity(pool_ids=[pool.pk])[pool.pk]
    # Grouped by NVLink clique, nodes without fabric last: only a clique's nodes reach each other over NVLink.
    nodes = (
        Node.objects.visible_to(user)
        .filter(pool=pool, present=True)
        .order_by(Case(When(nvlink_clique="", then=1), default=0), "nvlink_clique", "name")
    )
    chart = {
        "labels": [r.model_key for r in capacity],
        "allocated": [float(r.allocated_ge) for r in capacity],
        "free": [float(r.free_ge) for r in capacity],
    }
    return render(
        request,
        "inventory/pool.html",
        {"pool": pool, "capacity": capacity, "nodes": nodes, "chart": chart},
    )


@login_required
def pool_dashboard(request: HttpRequest, pool_id: str) -> HttpResponse:
    """A pool's dashboard: its fragmentation (inventory's own), then the panels of the apps above
    (metering's utilisation heatmap, policies' state), for a pool the viewer sees."""
    user = current_user(request)
    pool = get_object_or_404(
        NodePool.objects.visible_to(user).select_related("cluster", "tenant"), pk=pool_id
    )
    report = selectors.pool_fragmentation(pool=pool)
    panels = [
        render_to_string(panel.template, {"pool": pool, **panel.context(user, pool)}, request=request)
        for panel in panels_for(POOL_DASHBOARD)
    ]
    return render(
        request, "inventory/pool_dashboard.html", {"pool": pool, "report": report, "panels": panels}
    )


@login_required
def node_detail(request: HttpRequest, node_id: str) -> HttpResponse:
    user = current_user(request)
    node = get_object_or_404(Node.objects.visible_to(user).select_related("cluster", "pool"), pk=node_id)
    layout = node_layout(node=node)
    return render(
        request,
        "inventory/node.html",
        {
            "node": node,
            "layout": layout,
            "cards": layout.cards,
            "loose": layout.loose,
            "parse_issues": [*node.parse_issues, *selectors.node_slice_issues(node=node)],
            **selectors.node_device_taints(node=node),
        },
    )


@login_required
def fragmentation(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    pools = NodePool.objects.visible_to(user).select_related("cluster").order_by("cluster__name", "name")
    page = Paginator(pools, 20).get_page(request.GET.get("page"))
    by_pool = selectors.pools_fragmentation(pools=list(page))
    reports = [(pool, by_pool[pool.pk]) for pool in page]
    return render(request, "inventory/fragmentation.html", {"page": page, "reports": reports})


@login_required
def allocations(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    queryset = (
        Allocation.objects.visible_to(user)
        .select_related("cluster", "tenant", "claim")
        .order_by("-started_at")
    )
    filtered = AllocationFilter(request.GET, queryset=queryset)
    page = Paginator(filtered.qs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "inventory/allocations.html",
        {"page": page, "filters": request.GET, "query": query.urlencode(), "colour": tenant_colour},
    )
