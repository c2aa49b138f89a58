from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inventory.models import Cluster
from inventory.sync.service import keep_synced, sync_cluster


class Command(BaseCommand):
    help = "Sync inventory from clusters: list and reconcile (--once), or list then watch until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", help="only this cluster (by name)")
        parser.add_argument("--once", action="store_true", help="one full sync, then exit")

    def handle(self, *args: Any, **options: Any) -> None:
        clusters = Cluster.objects.all()
        if options["cluster"]:
            clusters = clusters.filter(name=options["cluster"])
            if not clusters.exists():
                raise CommandError(f"no cluster named {options['cluster']!r}")
        if options["once"]:
            for cluster in clusters:
                result = sync_cluster(cluster_id=cluster.pk)
                self.stdout.write(f"{cluster.name}: {result}")
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        threads = [
            threading.Thread(target=keep_synced, kwargs={"cluster": c, "stop": stop}, name=f"sync-{c.name}")
            for c in clusters
        ]
        for thread in threads:
            thread.start()
        try:
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(timeout=1)
        except KeyboardInterrupt:
            stop.set()
