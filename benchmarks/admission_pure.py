"""Benchmark of the pure admission engine (DESIGN section 10: decision <= 1 ms).

Fleet: 1,000 tenants in 100 cohorts of 10 (root -> 2 departments -> 2 teams each, plus 3 projects
under the first team: four levels), 4 flavors (H100, A100, H100 MIG 3g.40gb, HAMi shares with two resources),
10,000 active allocations and 1,000 pending requests. Times `decide` on random pending requests
(median and P99) and one `schedule` pass over all 1,000 pending.

Run: .venv/bin/python benchmarks/admission_pure.py [--decisions 20000] [--seed 7] [--fallback 0.5]
[--clock cpu]. --fallback gives that share of the whole-GPU requests a second flavor to fall back to
(H100 <-> A100, issue #18); --clock cpu times with this process's CPU clock instead of the wall clock,
which a loaded shared machine inflates (the CPU clock counts only the time the decision ran).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from quotas.admission import (  # the path above makes the repo importable
    ActiveAllocation,
    BudgetSpec,
    FlavorResource,
    FlavorSpec,
    PendingRequest,
    PriorityClassSpec,
    QueueingStrategy,
    QueueSpec,
    QuotaSpec,
    Snapshot,
    TenantNode,
    decide,
    schedule,
)

COHORTS = 100
ALLOCATIONS = 10_000
PENDING = 1_000
FLAVORS = (
    FlavorSpec(
        name="h100",
        gpu_model="H100",
        resources=(FlavorResource(name="nvidia.com/gpu", ge_per_unit=Fraction(1)),),
    ),
    FlavorSpec(
        name="a100",
        gpu_model="A100",
        resources=(FlavorResource(name="nvidia.com/gpu", ge_per_unit=Fraction(1)),),
    ),
    FlavorSpec(
        name="h100-mig",
        gpu_model="H100",
        resources=(FlavorResource(name="nvidia.com/mig-3g.40gb", ge_per_unit=Fraction(1, 2)),),
    ),
    FlavorSpec(
        name="t4-hami",
        gpu_model="T4",
        resources=(
            FlavorResource(name="nvidia.com/gpumem", ge_per_unit=Fraction(1, 15360)),
            FlavorResource(name="nvidia.com/gpucores", ge_per_unit=Fraction(1, 100)),
        ),
    ),
)
CLASSES = (
    PriorityClassSpec(name="batch", value=100),
    PriorityClassSpec(name="standard", value=500),
    PriorityClassSpec(name="urgent", value=1000),
    PriorityClassSpec(name="system", value=2000, preemptible=False),
)


def amounts_for(flavor: str, rng: random.Random) -> dict[str, int]:
    if flavor == "t4-hami":
        return {
            "nvidia.com/gpumem": rng.choice([2048, 4096, 8192]),
            "nvidia.com/gpucores": rng.choice([10, 25, 50]),
        }
    resource = FLAVORS[[f.name for f in FLAVORS].index(flavor)].resources[0].name
    return {resource: rng.choice([1, 1, 1, 2, 2, 4])}


def build(seed: int, fallback: float = 0.0) -> Snapshot:
    rng = random.Random(seed)
    now = datetime(2025, 3, 15, tzinfo=UTC)
    tenants: list[TenantNode] = []
    quotas: list[QuotaSpec] = []
    leaves: list[str] = []
    for c in range(COHORTS):
        root = f"c{c}"
        tenants.append(TenantNode(id=root))
        quotas += _quotas(root, scale=2, rng=rng)
        for d in range(2):
            dept = f"{root}-d{d}"
            tenants.append(TenantNode(id=dept, parent=root))
            quotas += _quotas(dept, scale=0, rng=rng, borrowing=rng.choice([None, 20]))
            for t in range(2):
                team = f"{dept}-t{t}"
                tenants.append(TenantNode(id=team, parent=dept))
                quotas += _quotas(team, scale=6, rng=rng, lending=rng.choice([None, 5]))
                leaves.append(team)
        for p in range(3):
            project = f"{root}-d0-t0-p{p}"
            tenants.append(TenantNode(id=project, parent=f"{root}-d0-t0"))
            quotas += _quotas(project, scale=2, rng=rng)
            leaves.append(project)
    queues = [
        QueueSpec(
            id=f"{t}-q",
            tenant=t,
            strategy=rng.choice(list(QueueingStrategy)),
            weight=Fraction(rng.randint(1, 3)),
        )
        for t in leaves
    ]
    active = []
    for i in range(ALLOCATIONS):
        flavor = rng.choice(FLAVORS).name
        active.append(
            ActiveAllocation(
                request_id=f"a{i}",
                tenant=rng.choice(leaves),
                flavor=flavor,
                amounts=amounts_for(flavor, rng),
                priority_class=rng.choice(CLASSES).name,
                admitted_order=i,
                ends_at=rng.choice([None, now + timedelta(hours=rng.randint(1, 400))]),
            )
        )
    pending = []
    for i in range(PENDING):
        flavor = rng.choice(FLAVORS).name
        tenant = rng.choice(leaves)
        pending.append(
            PendingRequest(
                id=f"p{i}",
                tenant=tenant,
                queue=f"{tenant}-q",
                flavor=flavor,
                amounts=amounts_for(flavor, rng),
                priority_class=rng.choice(CLASSES).name,
                created_order=ALLOCATIONS + i,
                duration=rng.choice([None, timedelta(hours=rng.randint(1, 72))]),
                requires_approval=rng.random() < 0.05,
            )
        )
    if fallback:
        # A separate generator, so the fleet is the same with and without fallbacks.
        other = {"h100": "a100", "a100": "h100"}
        pick = random.Random(seed + 1)
        pending = [
            replace(p, fallback_flavors=(other[p.flavor],))
            if p.flavor in other and pick.random() < fallback
            else p
            for p in pending
        ]
    budgets = [
        BudgetSpec(
            tenant=t,
            flavor=None,
            limit_ge_hours=Fraction(rng.randint(5_000, 50_000)),
            burned_ge_hours=Fraction(rng.randint(0, 5_000)),
            hard=rng.random() < 0.5,
        )
        for t in leaves[::3]
    ]
    free = {
        "h100": {"nvidia.com/gpu": 2_000},
        "a100": {"nvidia.com/gpu": 2_000},
        "h100-mig": {"nvidia.com/mig-3g.40gb": 1_500},
        "t4-hami": {"nvidia.com/gpumem": 2_000 * 15360, "nvidia.com/gpucores": 150_000},
    }
    return Snapshot(
        now=now,
        month_end=datetime(2025, 4, 1, tzinfo=UTC),
        flavors=FLAVORS,
        tenants=tuple(tenants),
        quotas=tuple(quotas),
        priority_classes=CLASSES,
        queues=tuple(queues),
        free=free,
        budgets=tuple(budgets),
        active=tuple(active),
        pending=tuple(pending),
    )


def _quotas(
    tenant: str, *, scale: int, rng: random.Random, borrowing: int | None = None, lending: int | None = None
) -> list[QuotaSpec]:
    out = []
    for flavor in FLAVORS:
        for resource in flavor.resources:
            unit = {"nvidia.com/gpumem": 15360, "nvidia.com/gpucores": 100}.get(resource.name, 1)
            out.append(
                QuotaSpec(
                    tenant=tenant,
                    flavor=flavor.name,
                    resource=resource.name,
                    nominal=scale * unit * rng.randint(1, 3) if scale else 0,
                    borrowing_limit=None if borrowing is None else borrowing * unit,
                    lending_limit=None if lending is None else lending * unit,
                )
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fallback", type=float, default=0.0)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    start = time.perf_counter()
    snap = build(args.seed, args.fallback)
    built = time.perf_counter()
    # The snapshot is long-lived: moving it out of the collector's generations keeps a gen-2 pass
    # over its ~100k objects (tens of ms) out of the measured decisions, as a server would.
    gc.collect()
    gc.freeze()
    command = f".venv/bin/python benchmarks/admission_pure.py --decisions {args.decisions} --seed {args.seed}"
    command += (f" --fallback {args.fallback}" if args.fallback else "") + (
        " --clock cpu" if args.clock == "cpu" else ""
    )
    print(f"command: {command}")
    sizes = f"{len(snap.tenants)} tenants, {COHORTS} cohorts, {len(snap.active)} active"
    print(f"fleet: {sizes}, {len(snap.pending)} pending")
    print(f"snapshot build (data + index): {(built - start) * 1000:.1f} ms")

    rng = random.Random(args.seed)
    ids = [p.id for p in snap.pending]
    for rid in ids[:200]:  # warm-up
        decide(snapshot=snap, request_id=rid)
    samples: list[float] = []
    outcomes: Counter[str] = Counter()
    for _ in range(args.decisions):
        rid = rng.choice(ids)
        t0 = clock()
        d = decide(snapshot=snap, request_id=rid)
        samples.append(clock() - t0)
        outcomes[d.reason.value if d.reason else d.outcome.value] += 1
    samples.sort()
    p50 = statistics.median(samples) * 1e6
    p99 = samples[int(len(samples) * 0.99) - 1] * 1e6
    print(
        f"decide x{args.decisions} ({args.clock} clock): median {p50:.0f} us, P99 {p99:.0f} us, "
        f"max {samples[-1] * 1e6:.0f} us"
    )
    print(f"  outcomes: {dict(outcomes.most_common())}")

    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        decisions = schedule(snapshot=snap)
        runs.append(time.perf_counter() - t0)
    admitted = sum(d.admitted for d in decisions)
    print(
        f"schedule over {len(snap.pending)} pending: best {min(runs) * 1000:.1f} ms of 3, "
        f"{admitted} admitted, {sum(len(d.victims) for d in decisions)} victims"
    )


if __name__ == "__main__":
    main()
