"""Reads of the tenant tree that are more than a filter (DESIGN section 6)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from tenants.models import Membership, Tenant, TenantNamespace


def with_tree_counts(tenants: QuerySet[Tenant]) -> QuerySet[Tenant]:
    """``children_count`` and ``member_count`` on each tenant, as correlated counts rather than
    JOIN + GROUP BY: a page's COUNT(*) can then leave them out and only the page's rows are counted
    (a GROUP BY over the whole visible tree was most of the list's time in PostgreSQL)."""
    return tenants.annotate(
        children_count=_count_of(Tenant.objects.all(), "parent"),
        member_count=_count_of(Membership.objects.all(), "tenant"),
    )


def _count_of(related: QuerySet[Any], field: str) -> Coalesce:
    per_row = related.filter(**{field: OuterRef("pk")}).order_by().values(field).annotate(n=Count("*"))
    return Coalesce(Subquery(per_row.values("n")), 0)


def namespaces_by_tenant(tenants: list[Tenant]) -> dict[uuid.UUID, list[dict[str, str]]]:
    """Each tenant's namespaces, in one query for a page of tenants (a prefetch clones a queryset per
    tenant, which cost more than rendering the page)."""
    found: dict[uuid.UUID, list[dict[str, str]]] = {}
    rows = TenantNamespace.objects.filter(tenant_id__any=[t.pk for t in tenants]).values_list(
        "tenant_id", "cluster", "namespace"
    )
    for tenant_id, cluster, namespace in rows:
        found.setdefault(tenant_id, []).append({"cluster": cluster, "namespace": namespace})
    return found
