"""Compile one cluster's slice of the quota tree into Kueue v1beta2 objects (docs/kueue.md).

Pure: plain records in (``CompileInput``), plain dicts out (``Compiled``), no Django. All or nothing:
every problem found is collected and raised together as a ``CompileError``, so a catalogue Kueue
cannot express is refused whole, never applied half-way.

| ours | Kueue |
| --- | --- |
| flavor | ResourceFlavor (node labels that select its pool, tolerations of the pool's taints) |
| tenant with children | Cohort (``parentName``; its own quota rows as resource groups) |
| tenant holding quota | ClusterQueue (``cohortName`` its parent; namespaces; quota; its queue's policy) |
| tenant namespace x queue | LocalQueue |
| priority class | WorkloadPriorityClass |
| budgets and approvals | AdmissionCheck ``gpuplatform-budget`` on every ClusterQueue |
| admitted capacity request | its amounts added to its tenant's ClusterQueue nominal while it holds |
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from quotas.kueue.grants import grants_by_tenant, raised
from quotas.kueue.model import (
    ADMISSION_CHECK,
    ADMISSION_CHECK_CONTROLLER,
    API_VERSION,
    FLAVOR_LABEL,
    MANAGED_BY,
    TENANT_LABEL,
    Compiled,
    CompileError,
    CompileInput,
    FlavorInput,
    QueueInput,
    QuotaInput,
    TenantInput,
)
from quotas.kueue.nodes import distinguishing_labels, pool_tolerations

# Limits of Kueue v0.19's ClusterQueue and Cohort schemas and webhooks.
MAX_RESOURCE_GROUPS = 16
MAX_FLAVORS_PER_GROUP = 64
MAX_RESOURCES_PER_GROUP = 64
MAX_FLAVORS_TOTAL = 256
# v1beta2's reclaimWithinCohort enum; the engine also knows LowerOrNewerEqualPriority there.
RECLAIM_POLICIES = frozenset({"Never", "LowerPriority", "Any"})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_QUEUE = "default"
# HAMi's share dimensions: one vGPU asked as a count, its memory and its cores; Kueue counts each on
# its own, and so do the engine's quotas, so a flavor may list them together.
HAMI_SHARE = frozenset(
    {"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"}
)


def compile_cluster(spec: CompileInput) -> Compiled:
    """Every Kueue object gpuplatform wants on ``spec.cluster``, sorted and deterministic; raises
    ``CompileError`` listing every reason the catalogue cannot be expressed."""
    problems: list[str] = []
    notes: list[str] = []
    tenants = {t.slug: t for t in spec.tenants}
    children: dict[str, list[str]] = defaultdict(list)
    for tenant in spec.tenants:
        if tenant.parent is not None:
            if tenant.parent not in tenants:
                problems.append(f"Tenant {tenant.slug!r} names parent {tenant.parent!r}, which is not given.")
            else:
                children[tenant.parent].append(tenant.slug)
    _check_namespaces(spec.tenants, problems)
    flavors = {f.name: f for f in spec.flavors}
    flavor_objects, node_labels = _resource_flavors(spec, problems)
    mappings = _device_class_mappings(spec.flavors, problems)
    rows: dict[str, list[QuotaInput]] = defaultdict(list)
    for quota in spec.quotas:
        if quota.tenant not in tenants:
            problems.append(f"A quota names tenant {quota.tenant!r}, which is not given.")
        elif quota.flavor not in flavors:
            problems.append(
                f"Tenant {quota.tenant!r} has quota on flavor {quota.flavor!r}, which is not on cluster "
                f"{spec.cluster!r}."
            )
        elif quota.resource not in {r.name for r in flavors[quota.flavor].resources}:
            problems.append(f"Flavor {quota.flavor!r} counts no resource {quota.resource!r}.")
        else:
            rows[quota.tenant].append(quota)
    _check_same_nodes_same_resource(flavors, node_labels, rows, problems)
    grants = grants_by_tenant(spec, tenants, flavors, problems)
    queues: dict[str, list[QueueInput]] = defaultdict(list)
    for queue in spec.queues:
        queues[queue.tenant].append(queue)

    cohorts, cluster_queues, local_queues = [], [], []
    for slug in sorted(tenants):
        tenant = tenants[slug]
        held = rows.get(slug, [])
        if children.get(slug):
            cohorts.append(_cohort(tenant, held, flavors, problems, notes))
            if tenant.namespaces:
                # Its own workloads are a ClusterQueue in its own Cohort, with no quota of its own: it
                # uses the Cohort's pool, as the engine counts such a tenant's usage at its node.
                notes.append(
                    f"Tenant {slug!r} has children and namespaces: its own workloads go to ClusterQueue "
                    f"{slug!r} in its Cohort, with nominal 0 on what the Cohort holds."
                )
                own = [QuotaInput(tenant=slug, flavor=q.flavor, resource=q.resource, nominal=0) for q in held]
                own = raised(tenant, own, grants.get(slug, {}), notes)
                queue = _primary_queue(slug, queues.get(slug, []), notes)
                cluster_queues.append(_cluster_queue(tenant, slug, own, flavors, queue, problems, notes))
                local_queues.extend(_local_queues(tenant, queues.get(slug, [])))
            elif grants.get(slug):
                notes.append(
                    f"Tenant {slug!r} holds admitted requests but has no namespace on cluster "
                    f"{spec.cluster!r}: no ClusterQueue of its own to raise."
                )
        elif held or grants.get(slug):
            held = raised(tenant, held, grants.get(slug, {}), notes)
            queue = _primary_queue(slug, queues.get(slug, []), notes)
            cluster_queues.append(
                _cluster_queue(tenant, tenant.parent, held, flavors, queue, problems, notes)
            )
            local_queues.extend(_local_queues(tenant, queues.get(slug, [])))
        elif tenant.namespaces:
            notes.append(
                f"Tenant {slug!r} holds no quota on cluster {spec.cluster!r}: its namespaces get no "
                "LocalQueue, so Kueue admits nothing there (as the engine admits nothing without quota)."
            )
    if problems:
        raise CompileError(problems)
    for pc in spec.priority_classes:
        if not pc.preemptible:
            notes.append(
                f"Priority class {pc.name!r} is not preemptible here; Kueue has no such flag, so its "
                "Workloads can be preempted by higher priorities there."
            )
    objects = [
        *flavor_objects,
        *(_priority_class(pc) for pc in sorted(spec.priority_classes, key=lambda p: p.name)),
        _admission_check(),
        *_parents_first(cohorts, tenants),
        *cluster_queues,
        *sorted(local_queues, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])),
    ]
    return Compiled(objects=tuple(objects), device_class_mappings=tuple(mappings), notes=tuple(sorted(notes)))


def _meta(name: str, labels: dict[str, str] | None = None, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, **(labels or {})}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _object(kind: str, metadata: dict[str, Any], **body: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, **body}


def _check_namespaces(tenants: Iterable[TenantInput], problems: list[str]) -> None:
    owners: dict[str, set[str]] = defaultdict(set)
    for tenant in tenants:
        for namespace in tenant.namespaces:
            owners[namespace].add(tenant.slug)
    for namespace, slugs in sorted(owners.items()):
        if len(slugs) > 1:
            problems.append(
                f"Namespace {namespace!r} is owned by tenants {', '.join(sorted(slugs))}: a ClusterQueue's "
                "namespaceSelector must match exactly one tenant's namespaces."
            )


def _resource_flavors(
    spec: CompileInput, problems: list[str]
) -> tuple[list[dict[str, Any]], dict[str, tuple[tuple[str, str], ...]]]:
    objects, labels_of = [], {}
    for flavor in sorted(spec.flavors, key=lambda f: f.name):
        _check_mechanisms(flavor, problems)
        if flavor.pool is None:
            problems.append(f"Flavor {flavor.name!r} has no node pool: Kueue cannot place its Workloads.")
            continue
        labels = distinguishing_labels(pool=flavor.pool, nodes=spec.nodes, pool_label=spec.pool_label)
        if labels is None:
            problems.append(
                f"Flavor {flavor.name!r}: pool {flavor.pool!r} has no node label that all its nodes share "
                "and no other node has, so a ResourceFlavor cannot select it; label its nodes."
            )
            continue
        labels_of[flavor.name] = tuple(sorted(labels.items()))
        body: dict[str, Any] = {"nodeLabels": labels}
        tolerations = pool_tolerations(pool=flavor.pool, nodes=spec.nodes)
        if tolerations:
            body["tolerations"] = tolerations
        objects.append(_object("ResourceFlavor", _meta(flavor.name, {FLAVOR_LABEL: flavor.name}), spec=body))
    return objects, labels_of


def _check_mechanisms(flavor: FlavorInput, problems: list[str]) -> None:
    """The engine charges a request on a flavor one share, its dominant GE over the flavor's
    resources; Kueue counts every resource on its own. The two agree for the dimensions of one share
    (HAMi: gpu, gpumem, gpucores) and for one counted resource, not for devices of different
    mechanisms counted side by side (whole GPUs and MIG slices, two MIG profiles)."""
    names = {r.name for r in flavor.resources}
    if not names:
        problems.append(f"Flavor {flavor.name!r} counts no resource.")
    elif flavor.kind == "dra":
        if len(names) > 1:
            problems.append(
                f"DRA flavor {flavor.name!r} counts {', '.join(sorted(names))}: Kueue v0.19 counts a "
                "DeviceClass as one resource (device count); counters and capacity need Kueue's own "
                "deviceClassMappings sources, which gpuplatform does not compile."
            )
        if not flavor.device_class:
            problems.append(f"DRA flavor {flavor.name!r} names no DeviceClass for Kueue to map.")
    elif len(names) > 1 and not names <= HAMI_SHARE:
        problems.append(
            f"Flavor {flavor.name!r} counts GE across {', '.join(sorted(names))}, which Kueue counts in "
            "different units, each on its own: give each mechanism a flavor of its own."
        )


def _device_class_mappings(flavors: Iterable[FlavorInput], problems: list[str]) -> list[dict[str, Any]]:
    """Kueue's ``resources.deviceClassMappings``: each DRA flavor's DeviceClass counted as its
    resource. Kueue refuses one DeviceClass mapped to two names."""
    by_name: dict[str, set[str]] = defaultdict(set)
    names_of_class: dict[str, set[str]] = defaultdict(set)
    for flavor in flavors:
        if flavor.kind != "dra" or not flavor.device_class or len(flavor.resources) != 1:
            continue
        resource = flavor.resources[0].name
        by_name[resource].add(flavor.device_class)
        names_of_class[flavor.device_class].add(resource)
    for device_class, names in sorted(names_of_class.items()):
        if len(names) > 1:
            problems.append(
                f"DeviceClass {device_class!r} is counted as {', '.join(sorted(names))} by different DRA "
                "flavors; Kueue maps a DeviceClass to one resource name."
            )
    return [{"name": name, "deviceClassNames": sorted(classes)} for name, classes in sorted(by_name.items())]


def _check_same_nodes_same_resource(
    flavors: dict[str, FlavorInput],
    node_labels: dict[str, tuple[tuple[str, str], ...]],
    rows: dict[str, list[QuotaInput]],
    problems: list[str],
) -> None:
    """Two flavors selecting the same nodes and counting the same resource are one flavor to Kueue:
    a Workload admitted on either lands on the same GPUs, so their quotas cannot be held apart."""
    used = {q.flavor for held in rows.values() for q in held}
    seen: dict[tuple[tuple[tuple[str, str], ...], str], str] = {}
    for name in sorted(used):
        if name not in node_labels:
            continue
        for resource in sorted(r.name for r in flavors[name].resources):
            key = (node_labels[name], resource)
            if key in seen:
                problems.append(
                    f"Flavors {seen[key]!r} and {name!r} select the same nodes and both count {resource}: "
                    "Kueue cannot hold their quotas apart; merge them or split the pool."
                )
            else:
                seen[key] = name


def _resource_groups(
    holder: str,
    held: list[QuotaInput],
    flavors: dict[str, FlavorInput],
    *,
    has_parent: bool,
    is_cohort: bool,
    problems: list[str],
    notes: list[str],
) -> list[dict[str, Any]]:
    """Kueue's resource groups: flavors that share a resource are one group, and each flavor of a
    group must count the same resources (coveredResources, in order)."""
    quota = {(q.flavor, q.resource): q for q in held}
    names = sorted({q.flavor for q in held})
    covers = {name: tuple(sorted({r.name for r in flavors[name].resources})) for name in names}
    groups: list[list[str]] = []
    for name in names:
        joined = [g for g in groups if any(set(covers[m]) & set(covers[name]) for m in g)]
        merged = [name]
        for group in joined:
            groups.remove(group)
            merged.extend(group)
        groups.append(sorted(merged))
    result: list[dict[str, Any]] = []
    for group in sorted(groups, key=lambda g: covers[g[0]]):
        resources = covers[group[0]]
        odd = [n for n in group if covers[n] != resources]
        if odd:
            counted = "; ".join(f"{n}: {' + '.join(covers[n])}" for n in group)
            problems.append(
                f"Tenant {holder!r}: flavors {', '.join(group)} share resources but count different sets "
                f"of them ({counted}); a Kueue resource group needs every flavor to count the same resources."
            )
            continue
        if len(group) > MAX_FLAVORS_PER_GROUP or len(resources) > MAX_RESOURCES_PER_GROUP:
            problems.append(
                f"Tenant {holder!r}: a resource group of {len(group)} flavors and {len(resources)} "
                f"resources is over Kueue's {MAX_FLAVORS_PER_GROUP} of each."
            )
        result.append(
            {
                "coveredResources": list(resources),
                "flavors": [
                    {
                        "name": name,
                        "resources": [
                            _resource_quota(
                                holder, quota.get((name, r)), name, r, has_parent, is_cohort, notes
                            )
                            for r in resources
                        ],
                    }
                    for name in group
                ],
            }
        )
    if len(result) > MAX_RESOURCE_GROUPS:
        problems.append(
            f"Tenant {holder!r} needs {len(result)} resource groups; Kueue allows {MAX_RESOURCE_GROUPS}."
        )
    if sum(len(g["flavors"]) for g in result) > MAX_FLAVORS_TOTAL:
        problems.append(f"Tenant {holder!r} lists more than {MAX_FLAVORS_TOTAL} flavors in all.")
    return result


def _resource_quota(
    holder: str,
    row: QuotaInput | None,
    flavor: str,
    resource: str,
    has_parent: bool,
    is_cohort: bool,
    notes: list[str],
) -> dict[str, Any]:
    if row is None:
        # The engine admits nothing of a resource without a quota row; Kueue would let a nominal of 0
        # borrow, so the borrowing limit closes it.
        notes.append(
            f"Tenant {holder!r} has no quota row for {resource} on {flavor!r}: compiled as 0, not borrowed."
        )
        entry: dict[str, Any] = {"name": resource, "nominalQuota": "0"}
        if has_parent:
            entry["borrowingLimit"] = "0"
        return entry
    entry = {"name": resource, "nominalQuota": str(row.nominal)}
    limits = {"borrowingLimit": row.borrowing_limit, "lendingLimit": row.lending_limit}
    if not is_cohort and row.lending_limit is not None and row.lending_limit >= row.nominal:
        # Lending at least all one holds is lending all of it (the engine caps it there); Kueue's
        # webhook refuses a ClusterQueue's lendingLimit above its nominal.
        limits["lendingLimit"] = None
    for field, value in limits.items():
        if value is None:
            continue
        if not has_parent:
            notes.append(
                f"Tenant {holder!r} is a root: its {field} on {flavor!r} {resource} has no one to borrow "
                "from or lend to, and Kueue refuses it there; left out."
            )
            continue
        entry[field] = str(value)
    return entry


def _cohort(
    tenant: TenantInput,
    held: list[QuotaInput],
    flavors: dict[str, FlavorInput],
    problems: list[str],
    notes: list[str],
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if tenant.parent is not None:
        spec["parentName"] = tenant.parent
    groups = _resource_groups(
        tenant.slug,
        held,
        flavors,
        has_parent=tenant.parent is not None,
        is_cohort=True,
        problems=problems,
        notes=notes,
    )
    if groups:
        spec["resourceGroups"] = groups
    return _object("Cohort", _meta(tenant.slug, {TENANT_LABEL: tenant.slug}), spec=spec)


def _primary_queue(slug: str, queues: list[QueueInput], notes: list[str]) -> QueueInput:
    """The queue whose settings the tenant's ClusterQueue takes: ``default``, else the first by name
    (the model's defaults when it has none). Kueue has one set per ClusterQueue."""
    if not queues:
        return QueueInput(tenant=slug, name=DEFAULT_QUEUE)
    ordered = sorted(queues, key=lambda q: (q.name != DEFAULT_QUEUE, q.name))
    primary = ordered[0]
    differing = [q.name for q in ordered[1:] if _policy(q) != _policy(primary)]
    if differing:
        notes.append(
            f"Tenant {slug!r}: queues {', '.join(differing)} differ from {primary.name!r} in strategy, "
            f"weight or preemption; its ClusterQueue takes {primary.name!r}'s (one set per ClusterQueue)."
        )
    return primary


def _policy(queue: QueueInput) -> tuple[Any, ...]:
    return (
        queue.strategy,
        queue.weight,
        queue.within_tenant,
        queue.reclaim_within_cohort,
        queue.borrow_within_cohort,
        queue.max_priority_threshold,
        queue.when_can_borrow,
        queue.when_can_preempt,
    )


def _cluster_queue(
    tenant: TenantInput,
    cohort: str | None,
    held: list[QuotaInput],
    flavors: dict[str, FlavorInput],
    queue: QueueInput,
    problems: list[str],
    notes: list[str],
) -> dict[str, Any]:
    if queue.reclaim_within_cohort not in RECLAIM_POLICIES:
        problems.append(
            f"Queue {tenant.slug}/{queue.name}: reclaim within cohort {queue.reclaim_within_cohort!r} is "
            f"not one of Kueue v1beta2's ({', '.join(sorted(RECLAIM_POLICIES))})."
        )
    if queue.reclaim_within_cohort == "Never" and queue.borrow_within_cohort != "Never":
        problems.append(
            f"Queue {tenant.slug}/{queue.name}: Kueue refuses borrowWithinCohort "
            f"{queue.borrow_within_cohort} with reclaimWithinCohort Never."
        )
    borrow: dict[str, Any] = {"policy": queue.borrow_within_cohort}
    if queue.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = queue.max_priority_threshold
    spec: dict[str, Any] = {
        "admissionChecksStrategy": {"admissionChecks": [{"name": ADMISSION_CHECK}]},
        "fairSharing": {"weight": _quantity(queue.weight)},
        "flavorFungibility": {
            "whenCanBorrow": queue.when_can_borrow,
            "whenCanPreempt": queue.when_can_preempt,
        },
        "namespaceSelector": _namespace_selector(tenant.namespaces),
        "preemption": {
            "borrowWithinCohort": borrow,
            "reclaimWithinCohort": queue.reclaim_within_cohort,
            "withinClusterQueue": queue.within_tenant,
        },
        "queueingStrategy": queue.strategy,
        "resourceGroups": _resource_groups(
            tenant.slug,
            held,
            flavors,
            has_parent=cohort is not None,
            is_cohort=False,
            problems=problems,
            notes=notes,
        ),
    }
    if cohort is not None:
        spec["cohortName"] = cohort
    return _object("ClusterQueue", _meta(tenant.slug, {TENANT_LABEL: tenant.slug}), spec=spec)


def _namespace_selector(namespaces: tuple[str, ...]) -> dict[str, Any]:
    if not namespaces:
        # An empty selector matches every namespace; every namespace carries its name label (set by
        # the API server), so "DoesNotExist" matches none.
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}
        ]
    }


def _local_queues(tenant: TenantInput, queues: list[QueueInput]) -> list[dict[str, Any]]:
    names = sorted({q.name for q in queues}) or [DEFAULT_QUEUE]
    return [
        _object(
            "LocalQueue",
            _meta(name, {TENANT_LABEL: tenant.slug}, namespace=namespace),
            spec={"clusterQueue": tenant.slug},
        )
        for namespace in sorted(set(tenant.namespaces))
        for name in names
    ]


def _priority_class(pc: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"value": pc.value}
    if pc.description:
        body["description"] = pc.description
    return _object("WorkloadPriorityClass", _meta(pc.name), **body)


def _admission_check() -> dict[str, Any]:
    return _object(
        "AdmissionCheck", _meta(ADMISSION_CHECK), spec={"controllerName": ADMISSION_CHECK_CONTROLLER}
    )


def _parents_first(cohorts: list[dict[str, Any]], tenants: dict[str, TenantInput]) -> list[dict[str, Any]]:
    def depth(slug: str) -> int:
        level = 0
        while tenants[slug].parent is not None:
            slug = tenants[slug].parent or ""
            level += 1
        return level

    return sorted(cohorts, key=lambda o: (depth(o["metadata"]["name"]), o["metadata"]["name"]))


def _quantity(value: Decimal) -> str:
    return format(Decimal(value).normalize(), "f")
