"""Reads for the queue pages: quota use per tenant and flavor, budget burn, oversubscription."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from inventory.capacity import cached_pool_card_capacity, pools_not_offered
from inventory.domain.gpu_models import resolve_gpu_model
from inventory.selectors import cached_pool_resource_capacity
from quotas.models import Budget, CapacityRequest, Flavor, FlavorKind, Queue, Quota
from quotas.models.requests import HOLDING
from quotas.runner.inputs import burned_ge_hours, month_bounds
from tenants.models import Tenant


@dataclass(frozen=True)
class QuotaStanding:
    """Where one quota row stands now, in its resource's native units.

    used: what the tenant holds (admitted and active requests); borrowed: the part of that taken
    from relatives' unused quota (the loans recorded when each request was admitted); lent: what
    relatives' requests hold of this tenant's unused quota; available: what the tenant can still be
    admitted within its own nominal at once, ``nominal - (used - borrowed) - lent`` (lent quota can
    be reclaimed by preemption, so more may come)."""

    nominal: int
    used: int
    borrowed: int
    lent: int

    @property
    def available(self) -> int:
        return max(0, self.nominal - (self.used - self.borrowed) - self.lent)


def quota_standing(*, quotas: list[Quota]) -> dict[uuid.UUID, QuotaStanding]:
    """Per quota row: used, borrowed, lent and available (QuotaStanding). Two queries for any number
    of rows: the tenants' own holding requests, and the holding requests with loans on their flavors."""
    if not quotas:
        return {}
    tenant_ids = {q.tenant_id for q in quotas}
    flavor_ids = {q.flavor_id for q in quotas}
    slug_of = dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "slug"))
    used: dict[tuple[Any, Any, str], int] = defaultdict(int)
    borrowed: dict[tuple[Any, Any, str], int] = defaultdict(int)
    lent: dict[tuple[str, Any, str], int] = defaultdict(int)
    holding = CapacityRequest.objects.filter(state__in=HOLDING, flavor_id__in=flavor_ids)
    for tenant, flavor, amounts, loans in holding.filter(tenant_id__in=tenant_ids).values_list(
        "tenant_id", "flavor_id", "amounts", "borrowed"
    ):
        for r, a in amounts.items():
            used[(tenant, flavor, r)] += int(a)
        for loan in loans or []:
            borrowed[(tenant, flavor, loan["resource"])] += int(loan["amount"])
    for flavor, loans in holding.exclude(borrowed=[]).values_list("flavor_id", "borrowed"):
        for loan in loans or []:
            lent[(loan["lender"], flavor, loan["resource"])] += int(loan["amount"])
    return {
        q.pk: QuotaStanding(
            nominal=q.nominal,
            used=used[(q.tenant_id, q.flavor_id, q.resource)],
            borrowed=borrowed[(q.tenant_id, q.flavor_id, q.resource)],
            lent=lent[(slug_of.get(q.tenant_id, ""), q.flavor_id, q.resource)],
        )
        for q in quotas
    }


@dataclass(frozen=True)
class QuotaBar:
    tenant: str
    flavor: str
    resource: str
    standing: QuotaStanding

    @property
    def nominal(self) -> int:
        return self.standing.nominal

    @property
    def in_use(self) -> int:
        return self.standing.used

    @property
    def borrowed(self) -> int:
        return self.standing.borrowed

    @property
    def scale(self) -> int:
        return max(self.nominal, self.in_use, 1)

    def percent(self, value: int) -> float:
        return round(100 * value / self.scale, 1)

    @property
    def use_percent(self) -> float:
        return self.percent(self.in_use - self.borrowed)

    @property
    def borrow_percent(self) -> float:
        return self.percent(self.borrowed)

    @property
    def lent_percent(self) -> float:
        return self.percent(min(self.standing.lent, max(0, self.nominal - (self.in_use - self.borrowed))))


def quota_bars(*, quotas: Any) -> list[QuotaBar]:
    """One bar per visible quota row: its own use, borrowed, lent (QuotaStanding)."""
    rows = list(quotas.select_related("tenant", "flavor").order_by("tenant__path", "flavor__name"))
    standing = quota_standing(quotas=rows)
    return [QuotaBar(q.tenant.slug, q.flavor.name, q.resource, standing[q.pk]) for q in rows]


def budget_burn(*, budgets: Any, now: datetime) -> list[dict[str, Any]]:
    rows = list(budgets.select_related("tenant", "flavor"))
    start, _ = month_bounds(now)
    burn = burned_ge_hours(tenant_ids=[b.tenant_id for b in rows], now=now, month_start=start)
    result = []
    for b in rows:
        per_flavor = burn.get(b.tenant_id, {})
        burned = (
            sum(per_flavor.values(), Fraction(0))
            if b.flavor_id is None
            else per_flavor.get(b.flavor_id, Fraction(0))
        )
        limit = Fraction(b.limit_ge_hours)
        result.append(
            {
                "budget": b,
                "burned": round(float(burned), 2),
                "percent": min(100.0, round(100 * float(burned / limit), 1)) if limit else 100.0,
            }
        )
    return result


def oversubscription() -> list[dict[str, Any]]:
    """Per flavor and resource: the sum of nominal quota against the pool's capacity, in native units
    and in GE against the physical cards of the flavor's GPU model (cards, not advertised units: a
    card carved into MIG instances or replicas is still one card). A flavor whose pool has tainted or
    cordoned cards of its model says why they are not offered (``flavors_not_offered``, the flavor
    pages' words), on its last resource's row: one read for the page, with the cards already read."""
    flavors = list(Flavor.objects.select_related("pool"))
    pool_ids = [f.pool_id for f in flavors if f.pool_id]
    capacity = cached_pool_resource_capacity(pool_ids=pool_ids)
    cards = cached_pool_card_capacity(pool_ids=pool_ids)
    not_offered = flavors_not_offered(flavors=flavors, cards=cards)
    nominal: dict[tuple[uuid.UUID, str], int] = defaultdict(int)
    for flavor, resource, value in Quota.objects.values_list("flavor_id", "resource", "nominal"):
        nominal[(flavor, resource)] += value
    rows = []
    for f in flavors:
        ge_per_unit = f.ge_per_unit()
        models_cards = cards.get(f.pool_id, {}) if f.pool_id else {}
        flavor_cards = (
            _cards_of_model(models_cards, f.gpu_model) if f.gpu_model else sum(models_cards.values())
        )
        names = f.resource_names
        for r in names:
            physical = capacity.get(f.pool_id, {}).get(r, 0) if f.pool_id else 0
            total = nominal[(f.pk, r)]
            nominal_ge = float(total * ge_per_unit.get(r, 0))
            rows.append(
                {
                    "flavor": f,
                    "resource": r,
                    "nominal": total,
                    "physical": physical,
                    "ratio": round(total / physical, 2) if physical else None,
                    "nominal_ge": round(nominal_ge, 3),
                    "cards": flavor_cards,
                    "card_ratio": round(nominal_ge / flavor_cards, 2) if flavor_cards else None,
                    "pool_missing": f.pool_id is None,
                    "not_offered": not_offered.get(f.pk, "") if r == names[-1] else "",
                }
            )
    return rows


def flavors_not_offered(
    *, flavors: list[Flavor], cards: dict[uuid.UUID, dict[str, int]] | None = None
) -> dict[uuid.UUID, str]:
    """Per flavor whose pool has tainted or cordoned cards of its GPU model (any model when it names
    none): why its free capacity is short, in the pool page's words ("1 of 8 H100-80GB not offered:
    1 GPU tainted by gpu.nvidia.com/xid=79:NoSchedule"). One read for all the flavors of a page;
    ``cards`` (``pool_card_capacity`` of their pools), when the caller has them, saves a query."""
    by_pool = pools_not_offered(pool_ids={f.pool_id for f in flavors if f.pool_id}, cards=cards)
    result: dict[uuid.UUID, str] = {}
    for f in flavors:
        entries = by_pool.get(f.pool_id, []) if f.pool_id else []
        if f.gpu_model:
            wanted = resolve_gpu_model(product=f.gpu_model).key
            entries = [e for e in entries if resolve_gpu_model(product=e.model_key).key == wanted]
        if entries:
            result[f.pk] = "; ".join(e.words for e in entries)
    return result


def _cards_of_model(cards_by_model: dict[str, int], gpu_model: str) -> int:
    """Cards of a flavor's GPU model. A flavor names its model as an admin typed it, often the GFD
    product label ("NVIDIA-H100-80GB-HBM3", as the demo does), while cards are counted under the
    catalog's key ("H100-80GB"): both sides are resolved to one key before they are compared."""
    wanted = resolve_gpu_model(product=gpu_model).key
    return sum(n for key, n in cards_by_model.items() if resolve_gpu_model(product=key).key == wanted)


@dataclass(frozen=True)
class Enforcement:
    """Whether the cluster can hold a tenant to its quota of this flavor apart from other flavors."""

    separately: bool
    reason: str = ""
    shared_with: tuple[str, ...] = ()


def flavor_enforcement(*, flavors: list[Flavor], visible: Any) -> dict[uuid.UUID, Enforcement]:
    """Per flavor: a device-plugin flavor is enforced by the namespace's ResourceQuota, which counts
    a resource name on the whole cluster; when another device-plugin flavor on the same cluster uses
    the same name, the quota holds their sum and a pod may spend it on either pool (until each pool
    advertises a name of its own). DRA flavors are enforced per claim. Names of flavors the viewer
    cannot see (``visible`` is their queryset) are not given; one query."""
    clusters = {f.pool.cluster_id for f in flavors if f.pool and f.kind == FlavorKind.DEVICE_PLUGIN}
    others = list(
        Flavor.objects.filter(kind=FlavorKind.DEVICE_PLUGIN, pool__cluster_id__in=clusters).values_list(
            "pk", "name", "pool__cluster_id", "resources"
        )
    )
    ids = [o[0] for o in others]
    seen = set(visible.filter(pk__in=ids).values_list("pk", flat=True)) if ids else set()
    result: dict[uuid.UUID, Enforcement] = {}
    for f in flavors:
        if f.kind != FlavorKind.DEVICE_PLUGIN or f.pool is None:
            result[f.pk] = Enforcement(separately=True)
            continue
        pool, mine = f.pool, set(f.resource_names)
        sharing = [
            (name, sorted(mine & {r["name"] for r in resources}), pk in seen)
            for pk, name, cluster_id, resources in others
            if pk != f.pk and cluster_id == pool.cluster_id and mine & {r["name"] for r in resources}
        ]
        if not sharing:
            result[f.pk] = Enforcement(separately=True)
            continue
        names = tuple(sorted(name for name, _, shown in sharing if shown))
        hidden = sum(1 for _, _, shown in sharing if not shown)
        resources = ", ".join(sorted({r for _, rs, _ in sharing for r in rs}))
        who = ", ".join(names) + (f" and {hidden} other flavor(s)" if hidden else "")
        result[f.pk] = Enforcement(
            separately=False,
            shared_with=names,
            reason=(
                f"The cluster cannot enforce this flavor separately: {resources} is also the resource of "
                f"{who} on the same cluster, so a namespace's ResourceQuota holds their sum and a pod may "
                "use it on either pool. It becomes enforceable once its pool advertises a resource name of "
                "its own."
            ),
        )
    return result


__all__ = [
    "Budget",
    "Enforcement",
    "QuotaBar",
    "QuotaStanding",
    "budget_burn",
    "flavor_enforcement",
    "oversubscription",
    "quota_bars",
    "quota_standing",
]


def with_flavor_chains(rows: list[CapacityRequest]) -> list[CapacityRequest]:
    """Each request with `flavor_chain`: the flavors it names, in order ("h100 → a100"), for pages.
    One read of the fallback flavors' names for all rows."""
    ids = {i for row in rows for i in row.fallback_flavors or ()}
    names = {str(pk): name for pk, name in Flavor.objects.filter(pk__in=ids).values_list("pk", "name")}
    for row in rows:
        chain = [row.flavor.name, *(names.get(i, "?") for i in row.fallback_flavors or ())]
        row.flavor_chain = " → ".join(chain)  # type: ignore[attr-defined]
    return rows


# Waiting for the pool's devices, not for quota: what tainted or cordoned GPUs may explain.
_PHYSICAL = frozenset({"no_physical_fit", "exceeds_max_possible"})


def with_not_offered(rows: list[CapacityRequest]) -> list[CapacityRequest]:
    """Each pending request that waits for the pool's devices with `not_offered`: the tainted or
    cordoned GPUs of its flavors that the pool does not offer, in words ("" when none). Read once for
    all rows, when the page is drawn: the stored message says what admission saw, this what is now."""
    waiting = [r for r in rows if r.state == "pending" and r.reason_code in _PHYSICAL]
    for row in rows:
        row.not_offered = ""  # type: ignore[attr-defined]
    if not waiting:
        return rows
    ids = {r.flavor_id for r in waiting} | {i for r in waiting for i in r.fallback_flavors or ()}
    words = flavors_not_offered(flavors=list(Flavor.objects.filter(pk__in=ids)))
    for row in waiting:
        chain = [row.flavor_id, *(uuid.UUID(str(i)) for i in row.fallback_flavors or ())]
        row.not_offered = "; ".join(words[f] for f in chain if f in words)  # type: ignore[attr-defined]
    return rows


def preemption_words(queue: Queue) -> str:
    """What a queue's requests may preempt, in words (Kueue's `preemption` block)."""
    own = {
        "Never": "never their own tenant's work",
        "LowerPriority": "their tenant's lower-priority work",
        "LowerOrNewerEqualPriority": "their tenant's lower-priority work, and newer work of equal priority",
    }[queue.within_tenant]
    reclaim = {
        "Never": "never relatives' work",
        "LowerPriority": "lower-priority work of relatives beyond their quota",
        "LowerOrNewerEqualPriority": "lower or newer equal-priority work of relatives beyond their quota",
        "Any": "any work of relatives beyond their quota",
    }[queue.reclaim_within_cohort]
    if queue.borrow_within_cohort == "LowerPriority":
        limit = (
            f" at priority {queue.max_priority_threshold} or below"
            if queue.max_priority_threshold is not None
            else ""
        )
        borrowing = f"; while borrowing, relatives' lower-priority work{limit}"
    else:
        borrowing = "; relatives only when the request then stays within its quota or its department's"
    borrow = "takes" if queue.when_can_borrow == "MayStopSearch" else "passes over"
    preempt = "takes" if queue.when_can_preempt == "MayStopSearch" else "passes over"
    flavors = (
        f"; among its flavors it {borrow} the first it must borrow on"
        f" and {preempt} the first it must preempt on"
    )
    return f"{own}; {reclaim}{borrowing}{flavors}."


TIMES = "\u00d7"


def request_names(ids: list[str]) -> dict[str, str]:
    """Requests as the audit log names them: "vision: 2 x nvidia.com/gpu on h100"."""
    rows = CapacityRequest.objects.filter(pk__in=ids).values_list(
        "pk", "tenant__slug", "amounts", "flavor__name"
    )
    return {
        str(pk): f"{tenant}: {', '.join(f'{v} {TIMES} {k}' for k, v in amounts.items())} on {flavor}"
        for pk, tenant, amounts, flavor in rows
    }
