"""The Kueue compiler's input for one cluster, read from the database (quotas/kueue/model.py)."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from django.db.models import Q

from inventory.models import Cluster, Node
from quotas.kueue.model import (
    CompileInput,
    FlavorInput,
    GrantInput,
    NodeInput,
    PriorityClassInput,
    QueueInput,
    QuotaInput,
    ResourceInput,
    Taint,
    TenantInput,
)
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.models.requests import HOLDING
from tenants.models import Tenant, TenantNamespace

QUOTA_INPUT_FIELDS = ("tenant", "flavor", "resource", "nominal", "borrowing_limit", "lending_limit")
QUEUE_INPUT_FIELDS = (
    "tenant",
    "name",
    "strategy",
    "weight",
    "within_tenant",
    "reclaim_within_cohort",
    "borrow_within_cohort",
    "max_priority_threshold",
    "when_can_borrow",
    "when_can_preempt",
)


def compile_input_for(*, cluster: Cluster) -> CompileInput:
    """Everything the compiler needs for ``cluster``: its present nodes with their pools, the flavors
    of its pools, the whole tenant tree with each tenant's namespaces there (a namespace row without a
    cluster counts on every cluster), the quotas on those flavors, every queue and priority class, and
    the requests holding capacity on those flavors (admitted or active: each a temporary raise)."""
    nodes = tuple(
        NodeInput(
            name=name,
            pool=pool,
            labels=dict(labels or {}),
            taints=tuple(
                Taint(
                    key=str(t.get("key", "")),
                    effect=str(t.get("effect", "")),
                    value=str(t.get("value") or ""),
                )
                for t in taints or []
            ),
        )
        for name, pool, labels, taints in Node.objects.filter(cluster=cluster, present=True)
        .order_by("name")
        .values_list("name", "pool__name", "labels", "taints")
    )
    flavor_rows = list(Flavor.objects.filter(pool__cluster=cluster).select_related("pool"))
    flavors = tuple(
        FlavorInput(
            name=flavor.name,
            pool=flavor.pool.name if flavor.pool else None,
            kind=flavor.kind,
            resources=tuple(
                ResourceInput(name=str(r["name"]), ge_per_unit=Fraction(str(r["ge_per_unit"])))
                for r in flavor.resources
            ),
            device_class=flavor.device_class,
        )
        for flavor in flavor_rows
    )
    namespaces: dict[str, set[str]] = defaultdict(set)
    for slug, namespace in TenantNamespace.objects.filter(
        Q(cluster=cluster.name) | Q(cluster="")
    ).values_list("tenant__slug", "namespace"):
        namespaces[slug].add(namespace)
    tenants = tuple(
        TenantInput(slug=slug, parent=parent, namespaces=tuple(sorted(namespaces.get(slug, ()))))
        for slug, parent in Tenant.objects.order_by("path").values_list("slug", "parent__slug")
    )
    # Rows as tuples, not models: a thousand tenants' quotas and queues are read on every apply.
    quota_fields = ("tenant__slug", "flavor__name", "resource", "nominal", "borrowing_limit", "lending_limit")
    quotas = tuple(
        QuotaInput(**dict(zip(QUOTA_INPUT_FIELDS, row, strict=True)))
        for row in Quota.objects.filter(flavor__in=flavor_rows).values_list(*quota_fields)
    )
    queue_fields = ("tenant__slug", *QUEUE_INPUT_FIELDS[1:])
    queues = tuple(
        QueueInput(**dict(zip(QUEUE_INPUT_FIELDS, row, strict=True)))
        for row in Queue.objects.values_list(*queue_fields)
    )
    classes = tuple(
        PriorityClassInput(name=c.name, value=c.value, preemptible=c.preemptible, description=c.description)
        for c in PriorityClass.objects.all()
    )
    grants = tuple(
        GrantInput(tenant=slug, flavor=flavor, resource=str(resource), amount=int(amount), request=pk.hex[:8])
        for pk, slug, flavor, amounts in CapacityRequest.objects.filter(
            flavor__in=flavor_rows, state__in=HOLDING
        ).values_list("pk", "tenant__slug", "flavor__name", "amounts")
        for resource, amount in sorted((amounts or {}).items())
    )
    return CompileInput(
        cluster=cluster.name,
        pool_label=cluster.pool_label,
        nodes=nodes,
        flavors=flavors,
        tenants=tenants,
        quotas=quotas,
        queues=queues,
        priority_classes=classes,
        grants=grants,
    )
