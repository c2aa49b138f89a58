"""The admission loop: expire what ran out, then decide every cohort with pending requests again.

Runs from Celery beat and after changes to capacity, quotas or priorities. Each cohort is decided in
its own transaction under its locks, so one busy tree never holds up another.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction
from django.urls import reverse
from django.utils import timezone

from gpuplatform.audit.services import record_event
from gpuplatform.health.heartbeats import beat
from quotas.dispatch import materialise_after_commit
from quotas.lifecycle import ActorKind, Event, Move, move_requests
from quotas.models import CapacityRequest, Flavor
from quotas.models.requests import HOLDING, RequestState
from quotas.runner.cohort_reads import lock_cohort_reading
from quotas.runner.decide import Persisted, decide_cohort, persist
from quotas.runner.inputs import cohort_root_path, root_id_of, within_subtrees
from tenants.models import Tenant, TenantState

logger = logging.getLogger(__name__)


def _claim_each(
    rows: Iterable[CapacityRequest],
    *,
    event: Event,
    action: str,
    reason_code: str,
    message: str,
    now: datetime,
    lower_objects: bool,
) -> list[uuid.UUID]:
    """Move each request by the system, one transaction each, claimed by conditional UPDATE (a row
    another loop moved first is skipped), with its audit event; what was moved, by id."""
    moved: list[uuid.UUID] = []
    for row in rows:
        with transaction.atomic():
            move = Move(
                request=row, event=event, by=ActorKind.SYSTEM, reason_code=reason_code, message=message
            )
            if not move_requests(moves=[move], now=now, claim=True):
                continue  # someone else moved it first
            after = CapacityRequest.objects.get(pk=row.pk)
            record_event(
                actor=None,
                action=f"capacity_request.{action}",
                obj=after,
                after={"state": after.state, "reason_code": reason_code},
            )
            if lower_objects:
                materialise_after_commit([row.pk])
        moved.append(row.pk)
    return moved


def expire_requests(*, now: datetime) -> list[uuid.UUID]:
    """End admitted requests whose duration is over (their cluster objects are lowered after
    commit); idempotent."""
    due = CapacityRequest.objects.filter(state__in=HOLDING, expires_at__lte=now).only("pk", "state")
    message = "The requested duration is over; its cluster objects are lowered or removed."
    return _claim_each(
        due,
        event=Event.EXPIRE,
        action="expired",
        reason_code="expired",
        message=message,
        now=now,
        lower_objects=True,
    )


def withdraw_suspended(*, now: datetime) -> list[uuid.UUID]:
    """Pending requests of a suspended tenant, or of one below a suspended tenant, stop waiting
    (cancelled, saying why); idempotent."""
    suspended = list(Tenant.objects.filter(state=TenantState.SUSPENDED).values_list("path", flat=True))
    if not suspended:
        return []
    waiting = CapacityRequest.objects.filter(within_subtrees(suspended), state=RequestState.PENDING)
    waiting = waiting.only("pk", "state")
    message = "The tenant (or one above it) is suspended; the request no longer waits."
    return _claim_each(
        waiting,
        event=Event.WITHDRAW,
        action="withdrawn",
        reason_code="tenant_suspended",
        message=message,
        now=now,
        lower_objects=False,  # pending requests hold no cluster objects
    )


def readmit(*, root_path: str, flavors: list[Flavor], now: datetime) -> Persisted:
    """Decide every pending request of the cohort on these flavors again. Locks flavors and root;
    idempotent (a second run with nothing changed admits nothing more)."""
    with transaction.atomic():
        # The lock, both stamps and the live requests in one round trip, as a submission sends them.
        reads = lock_cohort_reading(root_id=root_id_of(root_path), root_path=root_path, flavors=flavors)
        outcome, snapshot_rows = decide_cohort(root_path=root_path, flavors=flavors, now=now, reads=reads)
        persisted = persist(outcome=outcome, snapshot_rows=snapshot_rows, now=now)
        materialise_after_commit([*persisted.admitted, *persisted.preempted])
    return persisted


def run_admission_loop(*, now: datetime | None = None) -> dict[str, Any]:
    """Expire, withdraw what suspended tenants wait for, then re-decide each cohort that has pending
    requests; idempotent."""
    now = now or timezone.now()
    expired = expire_requests(now=now)
    withdrawn = withdraw_suspended(now=now)
    cohorts: dict[str, set[uuid.UUID]] = defaultdict(set)
    pending = CapacityRequest.objects.filter(state=RequestState.PENDING)
    for path, flavor_id, fallback in pending.values_list(
        "tenant__path", "flavor_id", "fallback_flavors"
    ).distinct():
        # Every flavor a pending request may land on, so that one falling back is decided with all of
        # its flavors in the snapshot.
        cohorts[cohort_root_path(path)].update({flavor_id, *(uuid.UUID(i) for i in fallback or ())})
    admitted = 0
    # Every cohort's flavors in one read (a hundred cohorts share a handful of flavors), as each
    # cohort read them before its locks.
    known = {f.pk: f for f in Flavor.objects.filter(pk__in=set().union(*cohorts.values()))}
    for root_path, flavor_ids in sorted(cohorts.items()):
        flavors = sorted((known[i] for i in flavor_ids if i in known), key=lambda f: f.pk)
        persisted = readmit(root_path=root_path, flavors=flavors, now=now)
        admitted += len(persisted.admitted)
    beat(
        "quotas.admission_loop",
        label="Admission loop",
        every_seconds=settings.ADMISSION_LOOP_SECONDS,
        url=reverse("queues"),
    )
    return {
        "expired": len(expired),
        "withdrawn": len(withdrawn),
        "cohorts": len(cohorts),
        "admitted": admitted,
    }


def keep_admitting(*, stop: threading.Event, interval_seconds: float) -> None:
    """What beat does in production, in this process (where tasks run inline; the demo runs all of
    beat's schedule through demo/loops.py): run the admission loop every ``interval_seconds`` until
    ``stop`` is set. A failed run is logged and the
    next one tries again, as beat's next tick would."""
    while not stop.wait(interval_seconds):
        try:
            result = run_admission_loop()
            if result["expired"] or result["admitted"] or result["withdrawn"]:
                logger.info("admission loop: %s", result)
        except Exception:  # the thread must outlive one bad run, as a beat schedule does
            logger.exception("admission loop failed; retrying in %s s", interval_seconds)
        finally:
            close_old_connections()
