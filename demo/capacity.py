"""The demo's capacity catalogue and a few requests in every state, seeded once after the first sync.

Flavors come from the demo cluster's pools; quotas, classes, queues and budgets are set so the
printed tokens can request capacity at once (vision and nlp have room on h100 right away).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from gpuplatform.accounts.models import User
from inventory.models import Cluster, NodePool
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.runner.loop import run_admission_loop
from quotas.services.catalogue import create_entry
from quotas.services.requests import cancel_request, decide_approval, release_request, submit_request
from tenants.models import Tenant

# (name, pool, kind, resources [(name, GE per unit)], device class, approval above)
FLAVORS = [
    ("h100", "NVIDIA-H100-80GB-HBM3", "device-plugin", [("nvidia.com/gpu", "1")], "", 6),
    ("h100-mig-3g", "NVIDIA-H100-80GB-HBM3", "device-plugin", [("nvidia.com/mig-3g.40gb", "1/2")], "", None),
    ("h100-dra", "NVIDIA-H100-80GB-HBM3", "dra", [("gpu.nvidia.com", "1")], "gpu.nvidia.com", None),
    ("t4-shared", "Tesla-T4", "device-plugin", [("nvidia.com/gpu", "1/4")], "", None),
]
CLASSES = [("batch", 100, True), ("standard", 500, True), ("prod", 1000, False)]
# tenant slug -> {flavor: nominal}
QUOTAS = {
    "vision": {"h100": 4, "h100-dra": 4, "t4-shared": 16, "h100-mig-3g": 2},
    "nlp": {"h100": 4, "h100-dra": 4, "t4-shared": 16},
    # Product and platform use the shared T4s: the H100 pool is research's, so its teams lend and
    # borrow among themselves.
    "recsys": {"t4-shared": 16},
    "search": {"t4-shared": 8},
    "infra": {"t4-shared": 8},
}


def seed_demo_capacity(*, cluster: Cluster) -> bool:
    """Create the catalogue and the example requests once; False when already there."""
    if Flavor.objects.exists():
        return False
    admin = User.objects.get(username="admin")
    pools = {p.name: p for p in NodePool.objects.filter(cluster=cluster)}
    flavors: dict[str, Flavor] = {}
    for name, pool, kind, resources, device_class, approval in FLAVORS:
        if pool in pools:
            flavors[name] = create_entry(
                actor=admin,
                model=Flavor,
                name=name,
                pool=pools[pool],
                kind=kind,
                device_class=device_class,
                resources=[{"name": r, "ge_per_unit": ge} for r, ge in resources],
                approval_above=approval,
                gpu_model=pool,
            )
    for name, value, preemptible in CLASSES:
        create_entry(actor=admin, model=PriorityClass, name=name, value=value, preemptible=preemptible)
    tenants = {t.slug: t for t in Tenant.objects.all()}
    for slug, nominals in QUOTAS.items():
        create_entry(actor=admin, model=Queue, tenant=tenants[slug], name="default")
        for flavor_name, nominal in nominals.items():
            if flavor_name in flavors:
                flavor = flavors[flavor_name]
                create_entry(
                    actor=admin,
                    model=Quota,
                    tenant=tenants[slug],
                    flavor=flavor,
                    resource=flavor.resource_names[0],
                    nominal=nominal,
                )
    create_entry(
        actor=admin, model=Queue, tenant=tenants["vision"], name="interactive", strategy="StrictFIFO"
    )
    create_entry(
        actor=admin,
        model=Budget,
        tenant=tenants["vision"],
        flavor=None,
        limit_ge_hours=Decimal(5000),
        hard=False,
    )
    create_entry(
        actor=admin,
        model=Budget,
        tenant=tenants["search"],
        flavor=None,
        limit_ge_hours=Decimal(1),
        hard=True,
    )
    if "h100" in flavors:
        _requests_in_every_state()
    return True


def _requests_in_every_state() -> None:
    users = {
        u.username: u
        for u in User.objects.filter(username__in=["admin", "alice", "bob", "dave", "rita", "erin"])
    }
    ask = _asker(users)
    ask("alice", "vision", 2, reason="training run: detector v7")  # active
    old = ask("bob", "nlp", 4, reason="fine-tune sweep")  # active, released below
    ask("alice", "vision", 4, reason="ablation study (may borrow)")  # waits; admitted, then preempted
    cancelled = ask("dave", "vision", 3, reason="duplicate of the ablation")
    cancel_request(actor=users["dave"], request_id=cancelled.pk)  # cancelled
    release_request(actor=users["bob"], request_id=old.pk)  # released; the ablation is admitted, borrowing
    ask("bob", "nlp", 4, priority="standard", reason="nlp reclaims its quota")  # preempts the borrower
    rejected = ask("dave", "vision", 6, reason="large eval")
    decide_approval(
        actor=users["rita"], request_id=rejected.pk, approve=False, note="split it into smaller runs"
    )
    ask("dave", "vision", 5, reason="needs sign-off")  # awaiting approval
    ask("alice", "vision", 3, reason="queued after the detector")  # waiting for quota
    ask("dave", "vision", 1, reason="short smoke test", duration=60)
    run_admission_loop(now=timezone.now() + timedelta(minutes=5))  # the smoke test has expired
    ask(
        "erin", "search", 8, flavor="t4-shared", reason="month-long job", duration=30 * 24 * 3600
    )  # over budget


def _asker(users: dict[str, User]) -> Any:
    def ask(
        user: str,
        tenant: str,
        amount: int,
        *,
        flavor: str = "h100",
        priority: str = "batch",
        reason: str = "",
        duration: int | None = None,
    ) -> Any:
        return submit_request(
            actor=users[user],
            tenant=tenant,
            flavor=flavor,
            amount=amount,
            priority_class=priority,
            reason=reason,
            duration_seconds=duration,
        ).request

    return ask
