"""The rows a capacity request names (tenant, queue, flavors, priority class), found through the
scoping door, and whether its tenant is suspended.

A submission named them with five queries before it was decided (a quarter of its server time with
the ORM's compiling); they change only when an operator edits the catalogue. So each name is looked
up in a per-process cache valid while the catalogue stamp is unchanged (quotas migrations 0002 and
0006: tenants, queues, priority classes and flavors renew it in the writer's transaction), one stamp
read for all of them. Only the common case is answered from the cache: a visible tenant, and flavors
and a class it may use. Anything else (a name missing, hidden or not usable, a queue named by id
alone) takes the query path below, so every refusal keeps its exact code and wording.

A tenant not yet cached brings its whole cohort in (up to ``COHORT_FILL_LIMIT`` tenants): every
tenant of the tree, each one's first queue and whether it is suspended, in two queries, where each
tenant alone cost three; a cohort's teams tend to submit alike, and each worker process learns a
cohort once per stamp rather than once per team.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db.models import QuerySet

from gpuplatform.accounts.models import User
from gpuplatform.db.stamped_cache import StampedCache
from gpuplatform.errors import NotFound, ValidationFailed
from gpuplatform.ids import is_uuid
from quotas.models import Flavor, PriorityClass, Queue
from quotas.runner.inputs import cohort_root_path
from quotas.scoping import usable_by
from tenants import scoping
from tenants.models import Tenant, TenantState

MAX_FLAVORS = 8
COHORT_FILL_LIMIT = 2_000  # a larger tree is learnt tenant by tenant, as before


def _by_id_or_name(queryset: QuerySet[Any], value: str, name_field: str) -> Any:
    try:
        return queryset.filter(pk=uuid.UUID(str(value))).first()
    except ValueError:
        return queryset.filter(**{name_field: value}).first()


def flavor_names(flavor: str | None, flavors: list[str] | None) -> list[str]:
    """The flavors a request names, in order: one (`flavor`) or an ordered list to fall back along."""
    if flavor is not None and flavors is not None:
        raise ValidationFailed(
            "Give either 'flavor' or an ordered list 'flavors', not both.",
            code="flavor_and_flavors",
            field="flavors",
        )
    names = [flavor] if flavor is not None else list(flavors or [])
    if not names:
        raise ValidationFailed(
            "Name a flavor, or an ordered list of flavors.", code="flavor_required", field="flavor"
        )
    if len(names) > MAX_FLAVORS:
        raise ValidationFailed(
            f"At most {MAX_FLAVORS} flavors to fall back along.", code="too_many_flavors", field="flavors"
        )
    return names


def _resolve_flavors(actor: User, tenant: Tenant, names: list[str]) -> list[Flavor]:
    """The named flavors through the scoping door, each usable by the tenant, none twice, all counting
    the same resources (a fallback asks the same amounts of another flavor)."""
    found: list[Flavor] = []
    visible = Flavor.objects.visible_to(actor).select_related("tenant")
    for name in names:
        named = _by_id_or_name(visible, name, "name")
        if named is None:
            raise NotFound("No such flavor.", code="flavor_not_found", field="flavor")
        if not usable_by(tenant.path, named.tenant.path if named.tenant else None):
            raise ValidationFailed(
                "This tenant may not use this flavor.", code="flavor_not_allowed", field="flavor"
            )
        if any(f.pk == named.pk for f in found):
            raise ValidationFailed(
                f"Flavor {named.name!r} is named twice.", code="flavor_repeated", field="flavors"
            )
        if found and sorted(named.resource_names) != sorted(found[0].resource_names):
            raise ValidationFailed(
                f"Flavor {named.name!r} counts {', '.join(named.resource_names)}, "
                f"{found[0].name!r} counts {', '.join(found[0].resource_names)}: a fallback asks the same "
                "amounts, so every flavor must count the same resources.",
                code="flavors_incompatible",
                field="flavors",
            )
        found.append(named)
    return found


@dataclass(frozen=True)
class Resolved:
    """The rows a request names, found through the scoping door."""

    tenant: Tenant
    queue: Queue
    flavors: list[Flavor]  # the first choice, then those to fall back to, in order
    priority_class: PriorityClass
    suspended: bool | None = None  # the tenant or one above it is suspended; None: not read yet

    @property
    def flavor(self) -> Flavor:
        return self.flavors[0]

    @property
    def tenant_suspended(self) -> bool:
        return self.suspended if self.suspended is not None else is_suspended(self.tenant)


def _resolve(
    actor: User, *, tenant: str | None, queue: str | None, flavors: list[str], priority_class: str | None
) -> Resolved:
    """Everything the request names, through the scoping door: what the actor cannot see is absent."""
    found_queue = None
    if queue is not None and tenant is None:
        found_queue = _by_id_or_name(Queue.objects.visible_to(actor).select_related("tenant"), queue, "pk")
        if found_queue is None:
            raise NotFound("No such queue.", code="queue_not_found", field="queue")
    if tenant is None and found_queue is None:
        raise ValidationFailed("Name the tenant (or a queue by id).", code="tenant_required", field="tenant")
    found_tenant = (
        found_queue.tenant
        if found_queue
        else _by_id_or_name(Tenant.objects.visible_to(actor), str(tenant), "slug")
    )
    if found_tenant is None:
        raise NotFound("No such tenant.", code="tenant_not_found", field="tenant")
    if found_queue is None:
        queues = Queue.objects.filter(tenant=found_tenant)
        found_queue = _by_id_or_name(queues, queue, "name") if queue else queues.order_by("name").first()
        if found_queue is None:
            raise NotFound("No such queue for this tenant.", code="queue_not_found", field="queue")
    found_flavors = _resolve_flavors(actor, found_tenant, flavors)
    classes = PriorityClass.objects.visible_to(actor).select_related("tenant")
    if priority_class is None:
        usable = [
            c
            for c in classes.order_by("value")
            if usable_by(found_tenant.path, c.tenant.path if c.tenant else None)
        ]
        if not usable:
            raise ValidationFailed(
                "No priority class is available.", code="priority_class_required", field="priority_class"
            )
        found_class = usable[0]  # the lowest usable: asking for more urgency is explicit
    else:
        found_class = _by_id_or_name(classes, priority_class, "name")
        if found_class is None:
            raise NotFound("No such priority class.", code="priority_class_not_found", field="priority_class")
    if not usable_by(found_tenant.path, found_class.tenant.path if found_class.tenant else None):
        raise ValidationFailed(
            f"Tenant {found_tenant.slug!r} may not use priority class {found_class.name!r}.",
            code="priority_class_not_allowed",
            field="priority_class",
        )
    return Resolved(
        tenant=found_tenant,
        queue=found_queue,
        flavors=found_flavors,
        priority_class=found_class,
    )


# Rows by name under the catalogue stamp. The values are shared between threads: callers get copies
# (a model instance carries a per-instance cache of related rows that a request may fill).
_rows: StampedCache[Any] = StampedCache("quotas_catalogue_stamp", limit=50_000)


def resolve_names(
    actor: User, *, tenant: str | None, queue: str | None, flavors: list[str], priority_class: str | None
) -> Resolved:
    """Everything the request names, through the scoping door: what the actor cannot see is absent.
    From the cache when all is found and allowed; else from the database, with its refusals."""
    cached = _from_cache(actor, tenant=tenant, queue=queue, flavors=flavors, priority_class=priority_class)
    if cached is not None:
        return cached
    return _resolve(actor, tenant=tenant, queue=queue, flavors=flavors, priority_class=priority_class)


def is_suspended(tenant: Tenant) -> bool:
    """The tenant or one of its ancestors is suspended: suspension covers the whole subtree (tenant
    states renew the catalogue stamp, so the answer may come from the cache)."""
    return bool(_rows.get(("suspended", tenant.path), _suspended_query(tenant).exists))


def _suspended_query(tenant: Tenant) -> QuerySet[Tenant]:
    return Tenant.objects.filter(path__in=tenant.lineage_paths, state=TenantState.SUSPENDED)


def _from_cache(
    actor: User, *, tenant: str | None, queue: str | None, flavors: list[str], priority_class: str | None
) -> Resolved | None:
    """The common case from the cache, or None to take the query path (which raises what it must)."""
    if tenant is None:
        return None
    stamp = _rows.stamp()
    if stamp is None:  # no stamp (SQLite, the demo): nothing is cached
        return None

    def get(key: Hashable, read: Callable[[], Any]) -> Any:
        value = _rows.get_at(stamp, key, read)
        return copy.copy(value) if isinstance(value, Tenant | Queue | Flavor | PriorityClass) else value

    found_tenant: Tenant | None = get(("tenant", tenant), partial(_tenant_and_cohort, stamp, tenant))
    # The scoping door's own test of one tenant (`visible_tenant_q` as a predicate).
    if found_tenant is None or not scoping.visibility_of(actor).sees_path(found_tenant.pk, found_tenant.path):
        return None
    queues = Queue.objects.filter(tenant=found_tenant)
    found_queue: Queue | None = (
        get(("queue", found_tenant.pk, queue), lambda: _by_id_or_name(queues, queue, "name"))
        if queue
        else get(("first-queue", found_tenant.pk), lambda: queues.order_by("name").first())
    )
    if found_queue is None:
        return None
    # A flavor or class the visible tenant may use is visible to the actor: dedicated to the tenant or
    # an ancestor, it is reachable (`quotas.scoping.reachable_tenant_ids`). Not usable: query path.
    found_flavors: list[Flavor] = []
    for name in flavors:
        flavor = get(("flavor", name), partial(_by_id_or_name, _flavor_rows(), name, "name"))
        if (
            flavor is None
            or not usable_by(found_tenant.path, flavor.tenant.path if flavor.tenant else None)
            or any(f.pk == flavor.pk for f in found_flavors)
            or (found_flavors and sorted(flavor.resource_names) != sorted(found_flavors[0].resource_names))
        ):
            return None
        found_flavors.append(flavor)
    if priority_class is None:
        classes: list[PriorityClass] = get(
            ("classes",), lambda: list(_class_rows().order_by("value", "name"))
        )
        usable = [c for c in classes if usable_by(found_tenant.path, c.tenant.path if c.tenant else None)]
        found_class = copy.copy(usable[0]) if usable else None
    else:
        found_class = get(
            ("class", priority_class), lambda: _by_id_or_name(_class_rows(), priority_class, "name")
        )
    if found_class is None or not usable_by(
        found_tenant.path, found_class.tenant.path if found_class.tenant else None
    ):
        return None
    return Resolved(
        tenant=found_tenant,
        queue=found_queue,
        flavors=found_flavors,
        priority_class=found_class,
        suspended=bool(get(("suspended", found_tenant.path), _suspended_query(found_tenant).exists)),
    )


def _tenant_and_cohort(stamp: int, name: str) -> Tenant | None:
    """The tenant named, read alone as before; its cohort's names cached beside it under ``stamp``."""
    found = _by_id_or_name(Tenant.objects.all(), name, "slug")
    if found is not None:
        _fill_cohort(stamp, cohort_root_path(found.path))
    return found


def _fill_cohort(stamp: int, root_path: str) -> None:
    """Each tenant under ``root_path`` cached as ``_from_cache`` reads it: by slug, its first queue (by
    name, as the query path orders them), and whether it or one above it is suspended (the cohort
    root has nothing above it). Read after the caller read ``stamp``, as every cached value is."""
    tenants = list(Tenant.objects.filter(path__startswith=root_path)[: COHORT_FILL_LIMIT + 1])
    if len(tenants) > COHORT_FILL_LIMIT:
        return
    first_queues: dict[uuid.UUID, Queue] = {}
    for queue in Queue.objects.filter(tenant__path__startswith=root_path).order_by("name"):
        first_queues.setdefault(queue.tenant_id, queue)
    suspended = {t.path for t in tenants if t.state == TenantState.SUSPENDED}
    values: dict[Hashable, Any] = {}
    for found in tenants:
        if not is_uuid(found.slug):  # such a name is looked up by id (`_by_id_or_name`)
            values[("tenant", found.slug)] = found
        values[("first-queue", found.pk)] = first_queues.get(found.pk)
        values[("suspended", found.path)] = any(path in suspended for path in found.lineage_paths)
    _rows.put_at(stamp, values)


def _flavor_rows() -> QuerySet[Flavor]:
    return Flavor.objects.select_related("tenant")


def _class_rows() -> QuerySet[PriorityClass]:
    return PriorityClass.objects.select_related("tenant")
