"""`python manage.py demo`: migrate, seed the demo organisation, print how to get in, serve."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

import kubesim
from demo.billing import seed_demo_billing
from demo.capacity import seed_demo_capacity
from demo.kueue import (
    JOBS,
    KUEUE_CLUSTER,
    decide_when_synced,
    seed_kueue_catalogue,
    seed_kueue_cluster,
    start_kueue_sim,
    submit_demo_jobs,
)
from demo.loops import beat_loops, keep_running, sync_loop
from demo.seed import seed_demo_cluster, seed_demo_organisation
from demo.server import configure_demo_process, serve
from demo.usage import seed_demo_usage
from inventory.sync.service import sync_cluster
from kubesim.controllers import CONTROLLER_NAMES
from quotas.kueue_apply.service import apply_kueue

DEMO_NODES = 24
USAGE_RECHECK_SECONDS = 3600.0
# Where kubectl finds the simulated clusters (beside the demo's SQLite file: var/ by default).
KUBECONFIG = "demo-kubeconfig.yaml"
KUEUE_KUBECONFIG = "demo-kueue-kubeconfig.yaml"


class Command(BaseCommand):
    help = "Run the demo: SQLite, no other server needed. Seeds a demo organisation and prints logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--seed-only", action="store_true", help="Seed and print, do not serve.")
        parser.add_argument("--nodes", type=int, default=DEMO_NODES, help="Size of the simulated cluster.")

    def handle(self, *args: Any, **options: Any) -> None:
        configure_demo_process()  # loopback clusters, the report build in its own thread and slices
        call_command("migrate", verbosity=0, interactive=False)
        credentials = seed_demo_organisation(token_file=_token_file())
        # An in-process simulated cluster (mixed scenario: exclusive, MIG, time-slicing, MPS, HAMi, DRA),
        # kept synced by a background thread while the server runs; its kubeconfig is kept where a user
        # can point kubectl at it.
        state = _state_dir()
        sim = kubesim.start(
            scenario="mixed",
            nodes=options["nodes"],
            seed=1,
            controllers=_controllers(),
            kubeconfig_path=state / KUBECONFIG,
        )
        cluster = seed_demo_cluster(kubeconfig=sim.kubeconfig_path.read_text())
        # A second, small cluster enforced through Kueue (its CRDs and a stand-in for its controller).
        kueue_sim = start_kueue_sim(kubeconfig_path=state / KUEUE_KUBECONFIG)
        stop = threading.Event()
        sync = sync_loop(cluster=cluster, stop=stop)
        # What beat runs in production (SLO evaluation, the admission loop, rollouts, hourly
        # metering): tasks run inline without Redis, so a thread per entry runs it on its schedule.
        beats = beat_loops(stop=stop)
        # One cold sync first: flavors are made from the pools it finds.
        sync_cluster(cluster_id=cluster.pk)
        seed_demo_capacity(cluster=cluster)
        seed_demo_billing(cluster=cluster)  # rate cards and last month closed, with its report files
        # demo-kueue, registered once the main catalogue is seeded (each catalogue write queues the
        # apply of every kueue cluster): its pools, its catalogue (once), its Kueue objects, the Jobs.
        kueue_cluster = seed_kueue_cluster(kubeconfig=kueue_sim.kubeconfig_path.read_text())
        kueue_sync = sync_loop(cluster=kueue_cluster, stop=stop, name="demo-inventory-kueue")
        sync_cluster(cluster_id=kueue_cluster.pk)
        seed_kueue_catalogue(cluster=kueue_cluster)
        apply_kueue(cluster_id=kueue_cluster.pk)
        submit_demo_jobs(api_client=kueue_sim.api_client())
        # gpuplatform's admission check decides the Jobs' Workloads once the sync has seen them.
        checks = decide_when_synced(cluster=kueue_cluster, stop=stop)
        # A month of per-share usage (simulated without PROMETHEUS_URL), newest hour first, beside the
        # server: metering it takes minutes on SQLite. --seed-only meters the last day and returns.
        usage = threading.Thread(
            target=keep_running,
            kwargs={
                "name": "usage",
                "iteration": lambda: seed_demo_usage(cluster=cluster, stop=stop, pause_seconds=1.0),
                "stop": stop,
                "pause": lambda: USAGE_RECHECK_SECONDS,  # a failed backfill resumes where it stopped
            },
            name="demo-usage",
            daemon=True,
        )
        if options["seed_only"]:
            seed_demo_usage(cluster=cluster, days=1)
        else:
            for thread in (sync, kueue_sync, checks, *beats, usage):
                thread.start()
        url = f"http://{options['host']}:{options['port']}"
        lines = [
            "",
            "gpuplatform demo",
            f"  UI:        {url}/",
            f"  API docs:  {url}/api/docs/",
            f"  Ready:     {url}/readyz",
            f"  Log in as platform-admin: {credentials.admin_username} / {credentials.admin_password}",
            "  (every demo user has that password: alice, bob, rita, carol, dave, erin, frank, fiona, ivan)",
            "  API tokens (read+write; kept for the next run of the demo):",
        ]
        for who, token in credentials.tokens.items():
            lines.append(f"    {who}: {token}")
        first = next(iter(credentials.tokens.values()))
        lines += [
            "  Try:",
            f'    curl -H "Authorization: Bearer {first}" {url}/api/v1/me/',
            f'    curl -H "Authorization: Bearer {first}" {url}/api/v1/tenants/',
            "  Request capacity (alice for vision, 1 H100; pending ones say why and where they stand):",
            f'    curl -X POST -H "Authorization: Bearer {first}" -H "Content-Type: application/json" \\',
            '         -H "Idempotency-Key: demo-$(date +%s)" \\',
            '         -d \'{"tenant": "vision", "flavor": "h100", "amount": 1}\' \\',
            f"         {url}/api/v1/capacity-requests/",
            f"  Queues, quotas, approvals: {url}/queues/",
            "  kubectl against the simulated clusters (kubeconfigs rewritten at each start):",
            f"    kubectl --kubeconfig {_shown(sim.kubeconfig_path)} get nodes",
            f"    kubectl --kubeconfig {_shown(kueue_sim.kubeconfig_path)} get clusterqueues,workloads -A",
            f"  Cluster {KUEUE_CLUSTER} enforces through Kueue; the tenants' Jobs there, and what each"
            " shows once gpuplatform's admission check decides it:",
            *(f"    {job.namespace}/{job.name} ({job.gpus} H100): {job.shows}" for job in JOBS),
            "",
        ]
        self.stdout.write("\n".join(lines))
        self.stdout.write(f"  Inventory: {url}/inventory/ (kubesim at {sim.url}, synced in the background)")
        try:
            if options["seed_only"]:
                return
            serve(host=options["host"], port=options["port"])
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            sim.stop()
            kueue_sim.stop()


def _token_file() -> Path:
    """Where the printed tokens are kept between runs: beside the demo's SQLite file (a new file
    means new tokens), or in var/ on another database."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        return Path(database["NAME"]).with_suffix(".tokens.json")
    return Path(settings.BASE_DIR) / "var" / "demo-tokens.json"


def _state_dir() -> Path:
    """Where the demo keeps files between runs: beside its SQLite file (var/ by default), or var/ on
    another database."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        directory = Path(database["NAME"]).parent
    else:
        directory = Path(settings.BASE_DIR) / "var"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _shown(path: Path) -> str:
    """The path as typed from the checkout (``var/demo-kubeconfig.yaml``), absolute elsewhere."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def _controllers() -> Any:
    """Every controller, churn included, so the inventory visibly moves while the demo runs."""
    return list(CONTROLLER_NAMES)
