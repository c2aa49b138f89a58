"""Inventory pages: clusters with sync health, pools, a node's GPUs drawn as blocks, fragmentation,
allocation history. Every query goes through visible_to(), like the API."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from gpuplatform.ui.auth import current_user
from inventory import selectors
from inventory.api.filters import AllocationFilter
from inventory.models import Allocation, Cluster, Node, NodePool, ParseIssueCount

UNASSIGNED_COLOUR = "#9aa5b1"


def tenant_colour(slug: str | None) -> str:
    """A stable colour per tenant, grey for the unassigned bucket."""
    if not slug:
        return UNASSIGNED_COLOUR
    hue = int(hashlib.sha256(slug.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue} 65% 48%)"


@login_required
def clusters(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    cluster_rows = (
        Cluster.objects.visible_to(user)
        .annotate(parse_issue_count=Sum("parse_issues__count"))
        .prefetch_related("sync_states")
    )
    pools = list(
        NodePool.objects.visible_to(user)
        .select_related("cluster", "tenant")
        .annotate(node_count=Count("nodes", filter=Q(nodes__present=True)))
        .order_by("cluster__name", "name")
    )
    capacity = selectors.pool_capacity(pool_ids=[p.pk for p in pools])
    for pool in pools:
        rows = capacity.get(pool.pk, [])
        pool.capacity_ge = sum((r.capacity_ge for r in rows), start=Decimal(0))
        pool.free_ge = sum((r.free_ge for r in rows), start=Decimal(0))
    issues = ParseIssueCount.objects.visible_to(user).select_related("cluster").order_by("-count")[:20]
    return render(
        request, "inventory/clusters.html", {"clusters": cluster_rows, "pools": pools, "issues": issues}
    )


@login_required
def pool_detail(request: HttpRequest, pool_id: str) -> HttpResponse:
    user = current_user(request)
    pool = get_object_or_404(
        NodePool.objects.visible_to(user).select_related("cluster", "tenant"), pk=pool_id
    )
    capacity = selectors.pool_capacity(pool_ids=[pool.pk])[pool.pk]
    nodes = Node.objects.visible_to(user).filter(pool=pool, present=True).order_by("name")
    chart = {
        "labels": [f"{r.kind} {r.model_key}" for r in capacity],
        "allocated": [float(r.allocated_ge) for r in capacity],
        "free": [float(r.free_ge) for r in capacity],
    }
    return render(
        request,
        "inventory/pool.html",
        {"pool": pool, "capacity": capacity, "nodes": nodes, "chart": chart},
    )


@login_required
def node_detail(request: HttpRequest, node_id: str) -> HttpResponse:
    user = current_user(request)
    node = get_object_or_404(Node.objects.visible_to(user).select_related("cluster", "pool"), pk=node_id)
    held = Allocation.objects.filter(node=node, ended_at__isnull=True).select_related("tenant")
    by_gpu: dict[Any, list[Allocation]] = defaultdict(list)
    by_resource: dict[str, list[Allocation]] = defaultdict(list)
    for allocation in held:
        if allocation.gpu_id:
            by_gpu[allocation.gpu_id].append(allocation)
        else:
            by_resource[allocation.resource_name].extend([allocation] * allocation.count)
    cards = []
    for gpu in node.gpus.order_by("index"):
        blocks = []
        for unit in gpu.units.order_by("key"):
            holders = (
                by_gpu.get(gpu.pk, []) if unit.kind == "hami_gpu" else by_resource.get(unit.resource_name, [])
            )
            for _ in range(unit.count if unit.kind != "hami_gpu" else 1):
                holder = holders.pop(0) if holders else None
                blocks.append(_block(unit.mig_profile or unit.kind, unit.ge_each, holder))
            if unit.kind == "hami_gpu":
                blocks.extend(_block("share", a.ge, a) for a in holders)
        cards.append({"gpu": gpu, "blocks": blocks})
    # MIG groups of a mixed node are not tied to one card by the labels: drawn as a node-wide strip.
    loose = []
    for unit in node.units.filter(gpu__isnull=True).order_by("key"):
        holders = by_resource.get(unit.resource_name, [])
        for _ in range(unit.count):
            loose.append(
                _block(unit.mig_profile or unit.kind, unit.ge_each, holders.pop(0) if holders else None)
            )
    return render(request, "inventory/node.html", {"node": node, "cards": cards, "loose": loose})


def _block(label: str, ge: Any, holder: Allocation | None) -> dict[str, Any]:
    slug = holder.tenant.slug if holder and holder.tenant else None
    return {
        "label": label,
        "width": max(float(ge) * 100, 4),
        "colour": tenant_colour(slug) if holder else "transparent",
        "holder": f"{holder.namespace}/{holder.holder_name} ({slug or 'unassigned'})" if holder else "free",
    }


@login_required
def fragmentation(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    pools = NodePool.objects.visible_to(user).select_related("cluster").order_by("cluster__name", "name")
    page = Paginator(pools, 20).get_page(request.GET.get("page"))
    reports = [(pool, selectors.pool_fragmentation(pool=pool)) for pool in page]
    return render(request, "inventory/fragmentation.html", {"page": page, "reports": reports})


@login_required
def allocations(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    queryset = Allocation.objects.visible_to(user).select_related("cluster", "tenant").order_by("-started_at")
    filtered = AllocationFilter(request.GET, queryset=queryset)
    page = Paginator(filtered.qs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "inventory/allocations.html",
        {"page": page, "filters": request.GET, "query": query.urlencode(), "colour": tenant_colour},
    )
