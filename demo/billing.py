"""The demo's billing: rate cards, and last month metered, closed, reported and exported, so the
metering pages show a final report and its files on the first visit.

Last month's allocation ledger is written from the demo cluster's nodes as they are now (the demo
has no history): each node is held by one of its pool's tenants, fully in working hours (09-19 on
weekdays, billing timezone) and by part of its cards otherwise, rotating daily; the rest is idle.
Deterministic, so every demo shows the same month. Utilisation (used GE-hours) is the simulated
usage source's (demo/usage.py); hours it fills before this runs are priced and shown too.
Seeded once: a closed month is left as it is.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from gpuplatform.accounts.models import User
from inventory.models import Cluster, Node
from metering.models import CapacityHour, PeriodState, RateCard, UsageHour
from metering.services.periods import close_billing_period, ensure_period, month_of
from metering.services.rates import create_rate_card
from metering.services.report_jobs import request_report_job, run_report_job
from quotas.models import Flavor
from tenants.models import Tenant

# GPU model key prefix -> price per GE-hour (USD); a model not listed stays unpriced, and shows so.
PRICES = {
    "H100": Decimal("2.50"),
    "A100": Decimal("1.60"),
    "L40S": Decimal("1.10"),
    "L4": Decimal("0.60"),
    "T4": Decimal("0.35"),
}
# pool name prefix -> the tenants that use it (demo/capacity.py's quotas)
TENANTS = {
    "NVIDIA-H100": ["vision", "nlp"],
    "Tesla-T4": ["recsys", "search", "infra", "vision", "nlp"],
}
SHARE_OUT_OF_HOURS = (Decimal("0.75"), Decimal("0.5"), Decimal("0.25"), Decimal(0))
_HOUR = timedelta(hours=1)


def seed_demo_billing(*, cluster: Cluster) -> bool:
    """Rate cards, last month's ledger, closed by fiona, and its report job run; False when done."""
    _, this_month, _ = month_of(at=timezone.now())
    last = ensure_period(at=this_month - _HOUR)
    if last.state == PeriodState.CLOSED:
        return False
    fiona = User.objects.get(username="fiona")
    nodes = list(Node.objects.filter(cluster=cluster, present=True, gpu_count__gt=0).select_related("pool"))
    _rate_cards(actor=fiona, models={n.model_key for n in nodes}, start=last.starts_at)
    with transaction.atomic():
        if not UsageHour.objects.filter(period=last, source="simulated", meter="allocated_ge_hours").exists():
            _ledger(cluster=cluster, nodes=nodes, period_id=last.pk, start=last.starts_at, end=last.ends_at)
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


def _ledger(
    *, cluster: Cluster, nodes: list[Node], period_id: uuid.UUID, start: datetime, end: datetime
) -> None:
    zone = ZoneInfo(settings.BILLING_TIMEZONE)
    tenants = {t.slug: t for t in Tenant.objects.all()}
    flavors = {f.pool_id: f.name for f in Flavor.objects.filter(pool__cluster=cluster).order_by("-name")}
    usage: list[UsageHour] = []
    capacity: list[CapacityHour] = []
    hour = start
    while hour < end:
        local = hour.astimezone(zone)
        working = local.weekday() < 5 and 9 <= local.hour < 19
        for i, node in enumerate(sorted(nodes, key=lambda n: n.name)):
            pool = node.pool.name if node.pool else ""
            users = next((v for prefix, v in TENANTS.items() if pool.startswith(prefix)), ["infra"])
            slug = users[(i + local.day) % len(users)]
            share = Decimal(1) if working else SHARE_OUT_OF_HOURS[(i + local.day) % len(SHARE_OUT_OF_HOURS)]
            held = Decimal(int(node.gpu_count * share))  # whole cards
            common = {"cluster": cluster, "period_id": period_id, "hour": hour, "pool": node.pool}
            capacity.append(
                CapacityHour(
                    **common, node_name=node.name, pool_name=pool, gpu_model=node.model_key,
                    cards=node.gpu_count, card_hours=Decimal(node.gpu_count),
                    idle_card_hours=Decimal(node.gpu_count) - held,
                )
            )  # fmt: skip
            if held and slug in tenants:
                usage.append(
                    UsageHour(
                        **common, share_key=f"demo/{node.name}/{slug}", meter="allocated_ge_hours",
                        tenant=tenants[slug], namespace=f"team-{slug}", pool_name=pool, node_name=node.name,
                        gpu_model=node.model_key, flavor_name=flavors.get(node.pool_id, ""), ge=held,
                        seconds=3600, quantity=held, card_hours=held, attribution="allocation",
                        source="simulated",
                    )
                )  # fmt: skip
        hour += _HOUR
    CapacityHour.objects.bulk_create(capacity, batch_size=2000)
    UsageHour.objects.bulk_create(usage, batch_size=2000)
