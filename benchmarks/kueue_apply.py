"""The Kueue backend at fleet scale (DESIGN §10, issue 31): compiling and applying the objects of
--tenants tenants from scratch, re-applying with nothing changed, and a one-quota change reaching its
ClusterQueue on the cluster.

The organisation: --departments inner tenants under one root, the rest leaf teams spread over them,
each team with a namespace on the cluster, a queue and a quota of 1-8 GPUs on one H100 flavor (so the
compiler writes a Cohort per department, a ClusterQueue and a LocalQueue per team). kubesim runs in
its own process with Kueue's CRDs (`--kueue`) and no controllers; this process is the worker.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuplatform_bench_kueue \\
        .venv/bin/python benchmarks/kueue_apply.py --tenants 1000 --rounds 3

With --compare-with REV, the same measurement runs alternately on the code of REV (checked out beside
in a git worktree, its own database) and on this tree, and the medians and their ratio are printed:
a noisy shared machine slows both alike. The one-quota figure is the apply job's run after the
change is committed, to the ClusterQueue read back with the new nominal quota; the Celery hop that
queues the job (a few milliseconds on an idle broker) is not in it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
GPU = "nvidia.com/gpu"
POOL = "NVIDIA-H100-80GB-HBM3"


def ensure_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def start_kubesim(tree: Path, kubeconfig: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "kubesim", "--scenario", "mixed", "--nodes", "20", "--seed", "1"]
    command += ["--kueue", "--no-controllers", "--kubeconfig", str(kubeconfig)]
    process = subprocess.Popen(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not kubeconfig.exists() or kubeconfig.stat().st_size == 0:
        if process.poll() is not None or time.monotonic() > deadline:
            error = process.stderr.read().decode()[-2000:] if process.stderr else ""
            raise SystemExit(f"kubesim did not start: {error}")
        time.sleep(0.3)
    return process


def measure(tree: Path, tenants: int, departments: int) -> dict[str, float]:
    """One round on the code of ``tree``: a fresh kubesim, the organisation seeded once per database,
    the cluster registered again (so every object is written from scratch)."""
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
    os.environ.setdefault("CLUSTER_ALLOW_LOOPBACK", "1")
    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command
    from kubernetes import client as k8s

    call_command("migrate", verbosity=0)
    from gpuplatform.accounts.models import PlatformRole, User
    from inventory.cluster_access import client_for
    from inventory.models import Cluster, EnforcementBackend, NodePool
    from inventory.services import create_cluster
    from inventory.sync.service import sync_cluster
    from quotas.kueue_apply.service import apply_kueue
    from quotas.models import Flavor, PriorityClass, Queue, Quota
    from tenants.models import Tenant, TenantNamespace
    from tenants.services import create_tenant

    admin = User.objects.filter(username="bench-admin").first() or User.objects.create_user(
        username="bench-admin", password="x", platform_role=PlatformRole.PLATFORM_ADMIN
    )
    teams = _seed_tree(admin, tenants, departments, create_tenant, Tenant, TenantNamespace, Queue)
    PriorityClass.objects.get_or_create(name="batch", defaults={"value": 100})

    with tempfile.TemporaryDirectory() as folder:
        kubeconfig = Path(folder) / "kubeconfig"
        sim = start_kubesim(tree, kubeconfig)
        try:
            # The ledger keeps a cluster's allocations (protected): an earlier round's cluster is renamed
            # and its flavor (with the quotas on it) removed, so this round writes everything anew.
            for old in Cluster.objects.filter(name="bench"):
                Cluster.objects.filter(pk=old.pk).update(
                    name=f"bench-{old.pk.hex[:8]}", enforcement_backend=EnforcementBackend.RESOURCEQUOTA
                )
            Quota.objects.filter(flavor__name="h100").delete()
            Flavor.objects.filter(name="h100").delete()
            cluster = create_cluster(actor=admin, name="bench", kubeconfig=kubeconfig.read_text())
            sync_cluster(cluster_id=str(cluster.pk))
            api = client_for(cluster)
            core: Any = k8s.CoreV1Api(api)
            for team in teams:
                core.create_namespace({"metadata": {"name": f"ns-{team.slug}"}}, _preload_content=False)
            flavor = Flavor.objects.create(
                name="h100",
                pool=NodePool.objects.get(cluster=cluster, name=POOL),
                resources=[{"name": GPU, "ge_per_unit": "1"}],
            )
            Quota.objects.bulk_create(
                Quota(tenant=team, flavor=flavor, resource=GPU, nominal=1 + i % 8)
                for i, team in enumerate(teams)
            )
            Cluster.objects.filter(pk=cluster.pk).update(enforcement_backend=EnforcementBackend.KUEUE)

            started = time.perf_counter()
            cold = apply_kueue(cluster_id=cluster.pk)
            cold_s = time.perf_counter() - started
            if "applied" not in cold:
                raise SystemExit(f"the cold apply did not apply: {cold}")
            started = time.perf_counter()
            apply_kueue(cluster_id=cluster.pk)
            unchanged_s = time.perf_counter() - started

            quota = Quota.objects.get(tenant=teams[len(teams) // 2], flavor=flavor)
            quota.nominal += 5
            quota.save()  # committed (autocommit); the signal's queued job is this process's next call
            started = time.perf_counter()
            if os.environ.get("BENCH_PROFILE"):
                import cProfile
                import pstats

                with cProfile.Profile() as profile:
                    apply_kueue(cluster_id=cluster.pk)
                pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
            else:
                apply_kueue(cluster_id=cluster.pk)
            custom: Any = k8s.CustomObjectsApi(api)
            queue = custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "clusterqueues", quota.tenant.slug
            )
            nominal = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
            one_quota_s = time.perf_counter() - started
            if int(nominal) != quota.nominal:
                raise SystemExit(f"the ClusterQueue holds {nominal}, not {quota.nominal}")
            return {
                "objects": float(len(cold["applied"])),
                "cold_s": cold_s,
                "unchanged_s": unchanged_s,
                "one_quota_s": one_quota_s,
            }
        finally:
            sim.terminate()
            sim.wait(timeout=30)


def _seed_tree(admin: Any, tenants: int, departments: int, create_tenant: Any, *models: Any) -> list[Any]:
    """The root, ``departments`` departments and the teams under them (created once per database)."""
    tenant_model, namespace_model, queue_model = models
    root = tenant_model.objects.filter(slug="fleet").first()
    if root is None:
        root = create_tenant(actor=admin, slug="fleet", display_name="Fleet")
        heads = [
            create_tenant(actor=admin, slug=f"dept-{d:03d}", display_name=f"Dept {d}", parent_id=root.pk)
            for d in range(departments)
        ]
        for t in range(tenants - departments - 1):
            team = create_tenant(
                actor=admin,
                slug=f"team-{t:04d}",
                display_name=f"Team {t}",
                parent_id=heads[t % departments].pk,
            )
            namespace_model.objects.create(tenant=team, namespace=f"ns-{team.slug}", cluster="bench")
            queue_model.objects.create(tenant=team, name="default")
    return list(tenant_model.objects.filter(slug__startswith="team-").order_by("slug"))


def compare(args: argparse.Namespace) -> None:
    old_tree = Path(tempfile.gettempdir()) / f"kueue-bench-{args.compare_with}"
    if not old_tree.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old_tree), args.compare_with], cwd=HERE, check=True
        )
    base = os.environ["DATABASE_URL"].rpartition("/")[0]
    trees = {
        "before": (old_tree, f"{base}/gpp_bench_kueue_before"),
        "after": (HERE, f"{base}/gpp_bench_kueue_after"),
    }
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        for label, (tree, url) in trees.items():
            command = [sys.executable, str(Path(__file__).resolve()), "--tree", str(tree), "--json"]
            command += [
                "--tenants",
                str(args.tenants),
                "--departments",
                str(args.departments),
                "--rounds",
                "1",
            ]
            out = subprocess.run(
                command, env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True, check=False
            )
            if out.returncode != 0:
                raise SystemExit(f"{label} failed:\n{out.stderr[-3000:]}")
            results[label].append(json.loads(out.stdout.strip().splitlines()[-1])[0])
    load = os.getloadavg()[0]
    print(f"{args.tenants} tenants, {args.rounds} alternating rounds, load average {load:.1f}")
    for key in ("cold_s", "unchanged_s", "one_quota_s"):
        before = statistics.median(r[key] for r in results["before"])
        after = statistics.median(r[key] for r in results["after"])
        print(f"{key:12} before {before:7.2f} s  after {after:7.2f} s  ratio {before / after:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--departments", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=HERE, help="the checkout whose code is measured")
    parser.add_argument("--compare-with", help="a git revision measured alternately beside this tree")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.compare_with:
        compare(args)
        return
    rounds = [measure(args.tree, args.tenants, args.departments) for _ in range(args.rounds)]
    if args.json:
        print(json.dumps(rounds))
        return
    print(f"{args.tenants} tenants, {int(rounds[0]['objects'])} objects, load {os.getloadavg()[0]:.1f}")
    for key in ("cold_s", "unchanged_s", "one_quota_s"):
        print(f"{key:12} median {statistics.median(r[key] for r in rounds):7.2f} s")


if __name__ == "__main__":
    main()
