"""The demo's billing: rate cards, and last month metered, closed, reported and exported, so the
metering pages show a final report, its files and its statements on the first visit.

Last month is metered as any month is: the demo writes the month's intervals into the inventory's
allocation ledger (pods that ran then and ended), and the ledger meters each hour of it
(``meter_allocation_hour``: card-hour rule, idle, capacity). The pattern comes from the demo
cluster's nodes as they are now (the demo has no history): each node is held by one of its pool's
tenants, fully in working hours (09-19 on weekdays, billing timezone) and by part of its cards
otherwise, rotating daily; the rest is idle. Only tenants that own a namespace hold anything: a pod
runs in a namespace, and the namespace is how the ledger knows whose it is. Deterministic, so every
demo shows the same month. Utilisation (used GE-hours) is the simulated usage source's
(demo/usage.py); hours it fills before this runs are priced and shown too.
Seeded once: a closed month is left as it is.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from gpuplatform.accounts.models import User
from inventory.models import Allocation, Cluster, Node
from metering.models import PeriodState, RateCard
from metering.services.ledger import meter_allocation_hour
from metering.services.periods import close_billing_period, ensure_period, month_of, start_closing_period
from metering.services.rates import create_rate_card
from metering.services.report_jobs import request_report_job, run_report_job
from quotas.models import Flavor
from tenants.models import Tenant, TenantNamespace

# GPU model key prefix -> price per GE-hour (USD); a model not listed stays unpriced, and shows so.
PRICES = {
    "H100": Decimal("2.50"),
    "A100": Decimal("1.60"),
    "L40S": Decimal("1.10"),
    "L4": Decimal("0.60"),
    "T4": Decimal("0.35"),
}
# pool name prefix -> the tenants that use it (demo/capacity.py's quotas). search has a quota but no
# namespace yet: nothing can run for it, so it holds nothing and is billed nothing.
TENANTS = {
    "NVIDIA-H100": ["vision", "nlp"],
    "Tesla-T4": ["recsys", "infra", "vision", "nlp"],
}
SHARE_OUT_OF_HOURS = (Decimal("0.75"), Decimal("0.5"), Decimal("0.25"), Decimal(0))
DEMO_UID = "demo-billing-"
_HOUR = timedelta(hours=1)


def seed_demo_billing(*, cluster: Cluster) -> bool:
    """Rate cards, last month's allocations metered from the ledger, the month closed by fiona (grace
    period, then close) and its report job run; False when done."""
    _, this_month, _ = month_of(at=timezone.now())
    last = ensure_period(at=this_month - _HOUR)
    if last.state == PeriodState.CLOSED:
        return False
    fiona = User.objects.get(username="fiona")
    nodes = list(Node.objects.filter(cluster=cluster, present=True, gpu_count__gt=0).select_related("pool"))
    _rate_cards(actor=fiona, models={n.model_key for n in nodes}, start=last.starts_at)
    with transaction.atomic():
        if not Allocation.objects.filter(cluster=cluster, holder_uid__startswith=DEMO_UID).exists():
            _allocations(cluster=cluster, nodes=nodes, start=last.starts_at, end=last.ends_at)
    hour = last.starts_at
    while hour < last.ends_at:  # idempotent: an interrupted seed meters the same rows again
        meter_allocation_hour(cluster_id=cluster.pk, hour=hour)
        hour += _HOUR
    if last.state == PeriodState.OPEN:
        start_closing_period(actor=fiona, period_id=last.pk)
    # Models without a demo price (H200) stay unpriced, shown so: closing says it knows.
    close_billing_period(actor=fiona, period_id=last.pk, idle="central", acknowledge_unpriced=True)
    run_report_job(job_id=request_report_job(actor=fiona, period_id=last.pk).pk)
    return True


def _rate_cards(*, actor: User, models: set[str], start: datetime) -> None:
    for model in sorted(models):
        price = next((p for prefix, p in PRICES.items() if model.startswith(prefix)), None)
        if price is None or RateCard.objects.filter(gpu_model=model, flavor__isnull=True).exists():
            continue
        create_rate_card(
            actor=actor,
            gpu_model=model,
            currency="USD",
            price_per_ge_hour=price,
            effective_from=start,
            note="demo list price",
        )


def _allocations(*, cluster: Cluster, nodes: list[Node], start: datetime, end: datetime) -> None:
    """The month's pods, as ended intervals of the allocation ledger: one per run of hours a tenant
    held the same number of a node's cards."""
    zone = ZoneInfo(settings.BILLING_TIMEZONE)
    tenants = {t.slug: t for t in Tenant.objects.all()}
    namespaces: dict[str, str] = {}
    for ns in TenantNamespace.objects.select_related("tenant").order_by("namespace"):
        namespaces.setdefault(ns.tenant.slug, ns.namespace)
    resources = _pool_resources()
    runs: list[Allocation] = []
    ordered = sorted(nodes, key=lambda n: n.name)
    current: dict[str, tuple[str, int, datetime]] = {}  # node -> (tenant slug, cards, since)

    def finish(node: Node, until: datetime) -> None:
        slug, held, since = current.pop(node.name)
        if not held:
            return
        runs.append(
            Allocation(
                cluster=cluster, tenant=tenants[slug], namespace=namespaces[slug], holder_kind="Pod",
                holder_name=f"demo-{slug}-{since:%m%d%H}",
                holder_uid=f"{DEMO_UID}{node.name}-{since:%Y%m%d%H}",
                unit_key=resources.get(node.pool_id, "nvidia.com/gpu"),
                resource_name=resources.get(node.pool_id, "nvidia.com/gpu"), count=held, ge=Decimal(held),
                model_key=node.model_key, node=node, node_name=node.name, pool=node.pool,
                started_at=since, ended_at=until, end_reason="completed",
            )
        )  # fmt: skip

    hour = start
    while hour < end:
        local = hour.astimezone(zone)
        working = local.weekday() < 5 and 9 <= local.hour < 19
        for i, node in enumerate(ordered):
            pool = node.pool.name if node.pool else ""
            users = next((v for prefix, v in TENANTS.items() if pool.startswith(prefix)), ["infra"])
            users = [slug for slug in users if slug in namespaces and slug in tenants]
            slug = users[(i + local.day) % len(users)] if users else ""
            share = Decimal(1) if working else SHARE_OUT_OF_HOURS[(i + local.day) % len(SHARE_OUT_OF_HOURS)]
            held = int(node.gpu_count * share) if slug else 0  # whole cards
            if node.name in current and current[node.name][:2] != (slug, held):
                finish(node, hour)
            current.setdefault(node.name, (slug, held, hour))
        hour += _HOUR
    for node in ordered:
        if node.name in current:
            finish(node, end)
    Allocation.objects.bulk_create(runs, batch_size=2000)


def _pool_resources() -> dict[object, str]:
    """Pool id -> the extended resource of its flavor, so the ledger names the flavor of each pod."""
    found: dict[object, str] = {}
    for flavor in Flavor.objects.filter(pool__isnull=False).order_by("-name"):
        if flavor.resource_names:
            found[flavor.pool_id] = flavor.resource_names[0]
    return found
