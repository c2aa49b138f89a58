"""Time the pure fragmentation analysis over a 5,000-node pool (8 GPUs per node, 40,000 cards).

Run: .venv/bin/python benchmarks/fragmentation.py [--nodes 5000] [--repeat 5]
Prints medians only; results go to docs/benchmarks.md with this command.

The pool mixes realistic geometries (from realworld/nvidia-smi-mig.txt and mig-parted configs) with a
seeded random share of busy instances, on H100 80GB and A100 40GB, plus MIG-disabled cards.
Each repeat clears the geometry caches first, so the figure is a cold analysis.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inventory.domain.gpu_models import resolve_gpu_model
from inventory.fragmentation import (
    GpuGeometry,
    PlacedInstance,
    ProfileDemand,
    analyze_cluster_fragmentation,
    analyze_gpu_placement,
    analyze_pool_fragmentation,
    cluster,
    combinational,
    geometry,
)

H100 = resolve_gpu_model(product="NVIDIA-H100-80GB-HBM3")
A100 = resolve_gpu_model(product="A100-SXM4-40GB")
LAYOUTS = {
    H100: [
        [("1g.10gb", s) for s in range(7)],
        [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)],
        [("3g.40gb", 0), ("3g.40gb", 4)],
        [("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)],
        [("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 4), ("1g.20gb", 6)],
        [("1g.10gb", 0), ("1g.10gb", 1), ("1g.10gb", 5)],
        [],
    ],
    A100: [
        [("1g.5gb", s) for s in range(7)],
        [("3g.20gb", 0), ("2g.10gb", 4)],
        [("4g.20gb", 0), ("2g.10gb", 4), ("1g.5gb", 6)],
        [("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4)],
    ],
}


def build_pool(nodes: int, seed: int = 7) -> dict[str, list[GpuGeometry]]:
    rng = random.Random(seed)
    pool = {}
    for n in range(nodes):
        model = H100 if n % 3 else A100
        gpus = []
        for g in range(8):
            if rng.random() < 0.1:
                gpus.append(GpuGeometry(f"n{n}-g{g}", model, mig_enabled=False, in_use=rng.random() < 0.7))
                continue
            layout = rng.choice(LAYOUTS[model])
            instances = tuple(PlacedInstance(p, s, in_use=rng.random() < 0.6) for p, s in layout)
            gpus.append(
                GpuGeometry(f"n{n}-g{g}", model, instances=instances, reconfigurable=rng.random() < 0.3)
            )
        pool[f"node-{n}"] = gpus
    return pool


def clear_caches() -> None:
    for fn in (
        geometry._placeable_starts,
        geometry._placeable,
        combinational._best_packing,
        cluster._greedy_count,
    ):
        fn.cache_clear()


def timed(label: str, repeat: int, fn) -> None:
    samples = []
    for _ in range(repeat):
        clear_caches()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    print(f"{label:<48} median {statistics.median(samples) * 1000:9.1f} ms   (n={repeat})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    pool = build_pool(args.nodes)
    gpus = [gpu for node in pool.values() for gpu in node]
    print(f"pool: {args.nodes} nodes, {len(gpus)} GPUs (built in {time.perf_counter() - start:.1f} s)")
    demand = ["1g.10gb", "3g.40gb", "1g.5gb", "2g.10gb"]
    timed("placement report, every GPU", args.repeat, lambda: [analyze_gpu_placement(gpu=g) for g in gpus])
    timed(
        "pool fragmentation (combinational)",
        args.repeat,
        lambda: analyze_pool_fragmentation(pool_name="p", nodes=pool, demand=demand),
    )
    halves = {"a": gpus[: len(gpus) // 2], "b": gpus[len(gpus) // 2 :]}
    demands = [
        ProfileDemand("3g.40gb", 5000, "H100-80GB"),
        ProfileDemand("1g.5gb", 20000),
        ProfileDemand("whole", 100),
    ]
    timed(
        "cluster fragmentation, 2 pools, 3 demands",
        args.repeat,
        lambda: analyze_cluster_fragmentation(pools=halves, demands=demands),
    )


if __name__ == "__main__":
    main()
