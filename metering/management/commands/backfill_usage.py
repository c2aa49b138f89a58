"""``manage.py backfill_usage --from 2025-03-01T00:00Z --to 2025-04-01T00:00Z [--cluster NAME]``:
rebuild the allocation-basis hourly ledger over a range of whole hours, with progress, and the usage
(utilisation, memory, energy) of each hour where the cluster has a usage source (``--no-usage`` skips
it). A usage hour the source cannot answer is reported and left incomplete, not fatal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from gpuplatform.errors import DomainError
from inventory.models import Cluster
from metering.services.adjustments import BookingRun
from metering.services.collection import meter_usage_hour, usage_source_for
from metering.services.ledger import meter_allocation_hour


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CommandError(f"not an ISO 8601 time: {text!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Rebuild the hourly usage ledger from the allocation ledger over [--from, --to)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--from", dest="start", required=True, help="first hour, ISO 8601 (UTC if no offset)"
        )
        parser.add_argument("--to", dest="end", required=True, help="end, exclusive, ISO 8601")
        parser.add_argument("--cluster", default="", help="only this cluster (by name)")
        parser.add_argument("--no-usage", action="store_true", help="the allocation basis only")

    def handle(self, *args: Any, **options: Any) -> None:
        start, end = _instant(options["start"]), _instant(options["end"])
        if end <= start:
            raise CommandError("--to must come after --from")
        clusters = Cluster.objects.order_by("name")
        if options["cluster"]:
            clusters = clusters.filter(name=options["cluster"])
            if not clusters.exists():
                raise CommandError(f"no cluster named {options['cluster']!r}")
        hour = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        hours = []
        while hour < end:
            hours.append(hour)
            hour += timedelta(hours=1)
        total = len(hours) * clusters.count()
        done = 0
        run = BookingRun()  # what this backfill books: one run in the audit log, not a line per hour
        for cluster in clusters:
            source, config = (None, None) if options["no_usage"] else usage_source_for(cluster_id=cluster.pk)
            for hour in hours:
                try:
                    result = meter_allocation_hour(cluster_id=cluster.pk, hour=hour)
                except DomainError as exc:
                    raise CommandError(f"{cluster.name} {hour:%Y-%m-%dT%H:00Z}: {exc.message}") from exc
                done += 1
                usage = ""
                if source is not None:
                    used = meter_usage_hour(
                        cluster_id=cluster.pk, hour=hour, source=source, config=config, run=run
                    )
                    state = (
                        "complete"
                        if used.complete
                        else f"incomplete{': ' + used.error if used.error else ''}"
                    )
                    usage = f"; usage ({used.source}) {used.rows} rows, {state}"
                self.stdout.write(
                    f"[{done}/{total}] {cluster.name} {hour:%Y-%m-%dT%H:00Z}: {result.rows} rows"
                    + (f", {result.adjustments} adjustments" if result.adjustments else "")
                    + usage
                )
        self.stdout.write(self.style.SUCCESS(f"metered {done} cluster-hours"))
