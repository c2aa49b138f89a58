"""Reads the database into the pure admission engine's `Snapshot`, scoped to one cohort and flavors.

Scoping matters: a full-fleet snapshot costs ~200 ms, while a decision only ever looks at the
requesting tenant's tree (quota is lent only within a cohort) and its flavors (its own and those it
falls back to; physical capacity is per flavor). Engine names are slugs and flavor/class names, so
the engine's messages read well; `SnapshotRows` maps them back to rows.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.db.models import BigIntegerField, Q, Sum, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from gpuplatform.db.stamped_cache import UNREAD
from gpuplatform.db.together import Statement, run_together
from inventory.selectors import cached_pool_resource_capacity
from quotas import admission as engine
from quotas import ports
from quotas.admission.snapshot import hours
from quotas.models import Budget, CapacityRequest, Flavor, FlavorHold, WorkloadCheck
from quotas.models.requests import HOLDING, RequestState
from quotas.runner.catalogue import Catalogue, catalogue_of
from quotas.runner.locks import lock_flavors, lock_flavors_then
from tenants.models import Tenant

MICROS = 1_000_000
# Only what deciding and explaining need, as tuples: model instances (and the JSON of loans, warnings
# and cluster objects) for a hundred holders would cost more than the decision itself.
LIVE_FIELDS = (
    "id",
    "tenant_id",
    "queue_id",
    "flavor_id",
    "priority_class_id",
    "amounts_text",
    "created_order",
    "duration_seconds",
    "approval",
    "state",
    "admitted_order",
    "expires_at",
    "reason_code",
    "message",
    "queue_position",
    "cohort_position",
    "fallback_text",
)
# The JSON columns read as text and decoded through a memo: a cohort's hundred holders mostly hold the
# same few amounts (`{"nvidia.com/gpu": 1}`), so most rows cost a dictionary look-up, not a parse. The
# decoded values are shared: the snapshot only reads them.
JSON_AS_TEXT = {
    "amounts_text": Cast("amounts", TextField()),
    "fallback_text": Cast("fallback_flavors", TextField()),
}


@functools.lru_cache(maxsize=4096)
def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True, slots=True)
class Explained:
    """How a live request explains itself now: persist rewrites it only when a decision changes it."""

    reason_code: str
    message: str
    queue_position: int | None
    cohort_position: int | None


def micros(moment: datetime) -> int:
    """A monotonic-enough integer order from a timestamp (ties fall back to the request id)."""
    return int(moment.timestamp() * MICROS)


def month_bounds(now: datetime) -> tuple[datetime, datetime]:
    """Start and end of the billing month containing ``now``, cut in BILLING_TIMEZONE."""
    local = now.astimezone(ZoneInfo(settings.BILLING_TIMEZONE))
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def root_id_of(path: str) -> uuid.UUID:
    """The id of the cohort root above a tenant: the first segment of its materialised path."""
    return uuid.UUID(path.strip("/").split("/")[0])


def cohort_root_path(path: str) -> str:
    """The materialised path of the cohort root above the tenant at ``path`` (``/<root hex>/``): the
    prefix every tenant of the cohort shares, and the cohort's key in the admission runner."""
    return f"/{root_id_of(path).hex}/"


def ge_of(flavor: Flavor, amounts: dict[str, int]) -> Fraction:
    units = flavor.ge_per_unit()
    return max((units.get(r, Fraction(0)) * a for r, a in amounts.items()), default=Fraction(0))


def engine_flavor(flavor: Flavor) -> engine.FlavorSpec:
    return engine.FlavorSpec(
        name=flavor.name,
        gpu_model=flavor.gpu_model,
        resources=tuple(
            engine.FlavorResource(name=name, ge_per_unit=ge) for name, ge in flavor.ge_per_unit().items()
        ),
    )


_HELD_SQL = f"SELECT flavor_id, resource, held FROM {FlavorHold._meta.db_table} WHERE flavor_id = ANY(%s)"  # noqa: S608


def held_by_flavor(flavors: list[Flavor], *, lock: bool = False) -> dict[uuid.UUID, dict[str, int]]:
    """What admitted and active requests hold, per flavor and resource. On PostgreSQL one indexed read
    of the trigger-kept `FlavorHold` counters; on SQLite (the demo) a sum over the holding requests.
    With ``lock``, the flavors' admission locks are taken first (`lock_flavors`) and the holds read
    under them, the locks and the read in one round trip."""
    held: dict[uuid.UUID, dict[str, int]] = {f.pk: {} for f in flavors}
    if connection.vendor == "postgresql":
        # A constant text: no ORM query built under the flavor lock.
        read = (_HELD_SQL, [list(held)])
        found = lock_flavors_then(flavor_ids=list(held), read=read) if lock else run_together([read])[0]
        for flavor_id, resource, total in found or ():
            held[flavor_id][resource] = total
        return held
    if lock:
        lock_flavors(flavor_ids=list(held))
    names = sorted({r for flavor in flavors for r in flavor.resource_names})
    sums = {
        f"r{i}": Sum(Cast(KeyTextTransform(r, "amounts"), BigIntegerField())) for i, r in enumerate(names)
    }
    rows = (
        CapacityRequest.objects.filter(flavor__in=flavors, state__in=HOLDING)
        .values("flavor_id")
        .annotate(**sums)
        .order_by()
        .values_list("flavor_id", *sums)
    )
    for flavor_id, *totals in rows:
        held[flavor_id] = {r: int(total or 0) for r, total in zip(names, totals, strict=True)}
    return held


def pool_capacity(
    flavors: Iterable[Flavor], *, stamp: int | None = UNREAD
) -> dict[uuid.UUID, dict[str, int]]:
    """Each flavor's pool's capacity per resource (inventory's, cached until it changes). ``stamp``:
    inventory's capacity stamp, when the caller read it (`quotas.runner.cohort_reads`)."""
    return cached_pool_resource_capacity(pool_ids=[f.pool_id for f in flavors if f.pool_id], stamp=stamp)


def physical_free(
    flavors: Iterable[Flavor], *, capacity: dict[uuid.UUID, dict[str, int]] | None = None, lock: bool = False
) -> dict[str, dict[str, int]]:
    """Physical capacity of each flavor's pool minus what admitted requests (all tenants) hold.
    ``capacity``: `pool_capacity`, when the caller read it already; ``lock``: read the holds under
    the flavors' admission locks, taken here (`held_by_flavor`)."""
    flavors = list(flavors)
    if capacity is None:
        capacity = pool_capacity(flavors)
    held = held_by_flavor(flavors, lock=lock)
    free: dict[str, dict[str, int]] = {}
    for flavor in flavors:
        pool = capacity.get(flavor.pool_id, {}) if flavor.pool_id else {}
        free[flavor.name] = {r: pool.get(r, 0) - held[flavor.pk].get(r, 0) for r in flavor.resource_names}
    return free


@dataclass
class SnapshotRows:
    """What persisting a decision needs of the rows the snapshot read: how each live request explains
    itself now, and the unsaved requests to insert."""

    explained: dict[str, Explained] = field(default_factory=dict)  # the live requests read, by id
    unsaved: dict[str, CapacityRequest] = field(default_factory=dict)  # `extra` requests, by id
    flavors: dict[str, Flavor] = field(default_factory=dict)  # the snapshot's flavors, by name


def request_record(
    *,
    rid: str,
    tenant: str,
    queue: str,
    flavor: str,
    klass: str,
    amounts: dict[str, int],
    created_order: int,
    duration_seconds: int | None,
    approval: str,
    fallback: tuple[str, ...] = (),
) -> engine.PendingRequest:
    """A pending request as the engine sees it, from a stored row's values or an unsaved request's."""
    return engine.PendingRequest(
        id=rid,
        tenant=tenant,
        queue=queue,
        flavor=flavor,
        amounts={r: int(a) for r, a in amounts.items()},
        priority_class=klass,
        created_order=created_order,
        duration=None if duration_seconds is None else timedelta(seconds=duration_seconds),
        requires_approval=approval != "not-required",
        approved=approval == "approved",
        fallback_flavors=fallback,
    )


# The cohort's live requests, as `LIVE_FIELDS` in the ORM's order (newest first, then id). On
# PostgreSQL one constant text over arrays: building the ORM's query (a filter of three IN lists, two
# casts) and converting its rows took ~3 ms a decision, more than running it (~0.7 ms for 140 rows).
_LIVE_SQL = f"""
    SELECT id, tenant_id, queue_id, flavor_id, priority_class_id, amounts::text, created_order,
           duration_seconds, approval, state, admitted_order, expires_at, reason_code, message,
           queue_position, cohort_position, fallback_flavors::text
    FROM {CapacityRequest._meta.db_table}
    WHERE flavor_id = ANY(%s) AND state = ANY(%s) AND tenant_id = ANY(%s)
    ORDER BY created_at DESC, id
"""  # noqa: S608 - a constant table name
_LIVE_STATES = [str(state) for state in (*HOLDING, RequestState.PENDING)]


def live_statement(*, tenant_ids: list[uuid.UUID], flavor_ids: list[uuid.UUID]) -> Statement:
    """The read of the cohort's live requests (PostgreSQL), for a caller that sends it with others."""
    return (_LIVE_SQL, [flavor_ids, _LIVE_STATES, tenant_ids])


@dataclass(frozen=True)
class LiveRead:
    """The live requests as a caller read them (`quotas.runner.cohort_reads`) for the tenants of
    ``catalogue`` and these flavors: `build_snapshot` takes them only if it decides on that very
    catalogue (the one cached at the stamp read with them), else it reads them again."""

    catalogue: Catalogue
    flavor_ids: tuple[uuid.UUID, ...]
    rows: list[tuple[Any, ...]]


def _live_rows(*, tenant_ids: list[uuid.UUID], flavor_ids: list[uuid.UUID]) -> Iterable[tuple[Any, ...]]:
    if connection.vendor != "postgresql":
        return (
            CapacityRequest.objects.filter(
                tenant_id__in=tenant_ids, flavor_id__in=flavor_ids, state__in=_LIVE_STATES
            )
            .annotate(**JSON_AS_TEXT)
            .values_list(*LIVE_FIELDS)
        )
    with connection.cursor() as cursor:
        cursor.execute(*live_statement(tenant_ids=tenant_ids, flavor_ids=flavor_ids))
        return cursor.fetchall()


def build_snapshot(
    *,
    root_path: str,
    flavors: list[Flavor],
    now: datetime,
    free: dict[str, dict[str, int]],
    extra: Iterable[CapacityRequest] = (),
    catalogue_stamp: int | None = UNREAD,
    live: LiveRead | None = None,
) -> tuple[engine.Snapshot, SnapshotRows]:
    """The cohort under ``root_path`` for ``flavors``, plus ``extra`` unsaved pending requests, with
    ``free`` physical capacity (see `physical_free`; the caller decides when to read it).
    ``catalogue_stamp``: as `catalogue_of` takes it; ``live``: the live requests, if the caller read
    them with that stamp."""
    snapshot_rows = SnapshotRows(flavors={f.name: f for f in flavors})
    flavor_ids = [f.pk for f in flavors]
    catalogue = catalogue_of(root_path=root_path, flavors=flavors, stamp=catalogue_stamp)
    slug_of, class_name, queue_of = catalogue.slug_of, catalogue.class_name, catalogue.queue_of
    flavor_name = {f.pk: f.name for f in flavors}
    by_text = {str(f.pk): f.name for f in flavors}

    def fallback_of(ids: list[str] | None) -> tuple[str, ...]:
        # Only the flavors this snapshot holds: the runner loads every flavor of the requests it
        # decides (`with_fallbacks`); the others are only context here and are not decided.
        return tuple(by_text[i] for i in ids or () if i in by_text)

    if live is not None and live.catalogue is catalogue and live.flavor_ids == tuple(flavor_ids):
        rows: Iterable[tuple[Any, ...]] = live.rows
    else:
        rows = _live_rows(tenant_ids=list(slug_of), flavor_ids=flavor_ids)
    active: list[engine.ActiveAllocation] = []
    pending: list[engine.PendingRequest] = []
    for (
        pk,
        tenant_id,
        queue_id,
        flavor_id,
        class_id,
        amounts_text,
        created_order,
        duration_seconds,
        approval,
        state,
        admitted_order,
        expires_at,
        reason_code,
        message,
        queue_position,
        cohort_position,
        fallback_text,
    ) in rows:
        amounts, fallback_ids = _json(amounts_text), _json(fallback_text)
        rid = str(pk)
        snapshot_rows.explained[rid] = Explained(reason_code, message, queue_position, cohort_position)
        tenant, flavor = slug_of[tenant_id], flavor_name[flavor_id]
        if state == RequestState.PENDING:
            pending.append(
                request_record(
                    rid=rid,
                    tenant=tenant,
                    queue=queue_of[queue_id],
                    flavor=flavor,
                    klass=class_name[class_id],
                    amounts=amounts,
                    created_order=created_order,
                    duration_seconds=duration_seconds,
                    approval=approval,
                    fallback=fallback_of(fallback_ids),
                )
            )
        else:
            active.append(
                engine.ActiveAllocation(
                    request_id=rid,
                    tenant=tenant,
                    flavor=flavor,
                    amounts={r: int(a) for r, a in amounts.items()},
                    priority_class=class_name[class_id],
                    admitted_order=admitted_order or 0,
                    ends_at=expires_at,
                    created_order=created_order,
                )
            )
    for req in extra:
        rid = str(req.pk)
        snapshot_rows.unsaved[rid] = req
        snapshot_rows.explained[rid] = Explained(req.reason_code, req.message, None, None)
        pending.append(
            request_record(
                rid=rid,
                tenant=slug_of[req.tenant_id],
                queue=queue_of[req.queue_id],
                flavor=flavor_name[req.flavor_id],
                klass=class_name[req.priority_class_id],
                amounts=req.amounts,
                created_order=req.created_order,
                duration_seconds=req.duration_seconds,
                approval=req.approval,
                fallback=fallback_of(req.fallback_flavors),
            )
        )
    month_start, month_end = month_bounds(now)
    budgets = _budgets(
        catalogue.budget_rows, slug_of, flavors, now=now, month_start=month_start, month_end=month_end
    )
    snapshot = engine.Snapshot(
        now=now,
        month_end=month_end,
        flavors=tuple(engine_flavor(f) for f in flavors),
        tenants=catalogue.tenants,
        quotas=catalogue.quotas,
        priority_classes=catalogue.priority_classes,
        queues=catalogue.queues,
        free=free,
        budgets=budgets,
        active=tuple(active),
        pending=tuple(pending),
    )
    return snapshot, snapshot_rows


def _budgets(
    rows: tuple[Budget, ...],
    slug_of: dict[uuid.UUID, str],
    flavors: list[Flavor],
    *,
    now: datetime,
    month_start: datetime,
    month_end: datetime,
) -> tuple[engine.BudgetSpec, ...]:
    """Budgets of the cohort, with burn to date. A tenant-wide budget also counts, as burned, what
    holders of flavors outside this snapshot will still burn: the engine only sees these flavors."""
    flavor_ids = {f.pk for f in flavors}
    if not rows:
        return ()
    # Metering fills this port with its usage ledger's figures; quotas' own answer is the fallback.
    burn = ports.burn_source(burned_ge_hours)(
        tenant_ids=[b.tenant_id for b in rows], now=now, month_start=month_start
    )
    outside = committed_outside(
        tenant_ids=[b.tenant_id for b in rows if b.flavor_id is None],
        flavor_ids=flavor_ids,
        now=now,
        month_end=month_end,
    )
    # Kueue Workloads gpuplatform's admission check let through count as admitted requests do.
    workloads = reserved_by_workloads(tenant_ids=[b.tenant_id for b in rows], now=now, month_end=month_end)
    flavor_name = {f.pk: f.name for f in flavors}
    result = []
    for b in rows:
        reserved = workloads.get(b.tenant_id, {})
        if b.flavor_id is None:
            burned = sum(burn[b.tenant_id].values(), Fraction(0)) + outside.get(b.tenant_id, Fraction(0))
            burned += sum(reserved.values(), Fraction(0))
        else:
            burned = burn[b.tenant_id].get(b.flavor_id, Fraction(0)) + reserved.get(b.flavor_id, Fraction(0))
        result.append(
            engine.BudgetSpec(
                tenant=slug_of[b.tenant_id],
                flavor=flavor_name[b.flavor_id] if b.flavor_id else None,
                limit_ge_hours=Fraction(b.limit_ge_hours),
                burned_ge_hours=burned,
                hard=b.hard,
            )
        )
    return tuple(result)


def with_fallbacks(*, root_path: str, flavors: list[Flavor]) -> list[Flavor]:
    """These flavors and every flavor the cohort's pending requests on them may fall back to, sorted
    by id (one read of the pending requests; a second only when there are fallbacks to load)."""
    known = {f.pk for f in flavors}
    wanted = set(known)
    rows = CapacityRequest.objects.filter(
        tenant__path__startswith=root_path, state=RequestState.PENDING, flavor_id__in=known
    ).exclude(fallback_flavors=[])
    for ids in rows.values_list("fallback_flavors", flat=True):
        wanted.update(uuid.UUID(i) for i in ids or ())
    extra = list(Flavor.objects.filter(pk__in=wanted - known)) if wanted != known else []
    return sorted([*flavors, *extra], key=lambda f: str(f.pk))


def within_subtrees(paths: Iterable[str]) -> Q:
    """Requests anywhere below (or at) these tenant paths; nothing for no paths."""
    within = Q(pk__in=[])
    for path in sorted(set(paths)):
        within |= Q(tenant__path__startswith=path)
    return within


def _subtrees(tenant_ids: list[uuid.UUID]) -> tuple[dict[uuid.UUID, str], Q]:
    """Each budget tenant's path, and a filter for requests anywhere in those subtrees."""
    paths = dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "path"))
    return paths, within_subtrees(paths.values())


def _covering(paths: dict[uuid.UUID, str], tenant_path: str) -> list[uuid.UUID]:
    return [tenant for tenant, path in paths.items() if tenant_path.startswith(path)]


def burned_ge_hours(
    *, tenant_ids: list[uuid.UUID], now: datetime, month_start: datetime
) -> dict[uuid.UUID, dict[uuid.UUID, Fraction]]:
    """GE-hours each tenant's subtree held this month so far, per flavor (a budget covers its whole
    subtree; from request intervals, until metering's usage ledger replaces this)."""
    burn: dict[uuid.UUID, dict[uuid.UUID, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    if not tenant_ids:
        return burn
    paths, within = _subtrees(tenant_ids)
    rows = (
        CapacityRequest.objects.filter(within, admitted_at__isnull=False)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=month_start))
        .values_list("tenant__path", "flavor_id", "ge", "admitted_at", "ended_at")
    )
    for tenant_path, flavor, ge, admitted_at, ended_at in rows:
        start, end = max(admitted_at or month_start, month_start), min(ended_at or now, now)
        if end > start:
            held = Fraction(Decimal(ge)) * hours(end - start)
            for tenant in _covering(paths, tenant_path):
                burn[tenant][flavor] += held
    return burn


def committed_outside(
    *, tenant_ids: list[uuid.UUID], flavor_ids: set[uuid.UUID], now: datetime, month_end: datetime
) -> dict[uuid.UUID, Fraction]:
    if not tenant_ids:
        return {}
    paths, within = _subtrees(tenant_ids)
    committed: dict[uuid.UUID, Fraction] = defaultdict(Fraction)
    rows = (
        CapacityRequest.objects.filter(within, state__in=HOLDING)
        .exclude(flavor_id__in=flavor_ids)
        .values_list("tenant__path", "ge", "expires_at")
    )
    for tenant_path, ge, expires_at in rows:
        end = month_end if expires_at is None else min(expires_at, month_end)
        for tenant in _covering(paths, tenant_path):
            committed[tenant] += Fraction(Decimal(ge)) * hours(end - now)
    return committed


def reserved_by_workloads(
    *, tenant_ids: list[uuid.UUID], now: datetime, month_end: datetime
) -> dict[uuid.UUID, dict[uuid.UUID, Fraction]]:
    """GE-hours the Kueue Workloads gpuplatform's admission check reserved for still commit, per
    budget tenant (its whole subtree) and flavor: GE x the hours left of each reservation, within the
    month (what ran before now is metering's burn)."""
    if not tenant_ids:
        return {}
    paths = dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "path"))
    within = Q(pk__in=[])
    for path in sorted(set(paths.values())):
        within |= Q(tenant__path__startswith=path)
    rows = (
        WorkloadCheck.objects.filter(within, reserved_at__isnull=False, released_at__isnull=True)
        .filter(reserved_until__gt=now)
        .values_list("tenant__path", "ge_by_flavor", "reserved_until")
    )
    reserved: dict[uuid.UUID, dict[uuid.UUID, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for tenant_path, ge_by_flavor, until in rows:
        left = hours(min(until or now, month_end) - now)
        if left <= 0:
            continue
        for tenant in _covering(paths, tenant_path):
            for flavor_id, ge in (ge_by_flavor or {}).items():
                reserved[tenant][uuid.UUID(flavor_id)] += Fraction(Decimal(ge)) * left
    return reserved
