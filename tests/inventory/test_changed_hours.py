"""The sync records the hours it changes after the fact: an allocation opened or closed at a time in an
hour already over (metering meters those hours again, tests/metering/test_corrections.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import Allocation, ChangedHours
from inventory.sync.ledger import Holder, WantedRow, close_holders, reconcile_holders
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def this_hour() -> datetime:
    return timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def holder(*, started_at: datetime, ended_at: datetime, rows: bool = True) -> Holder:
    row = WantedRow(
        unit_key="nvidia.com/gpu", resource_name="nvidia.com/gpu", count=1, ge=Decimal(1),
        model_key="H100-80GB", node_name="n0", node_id=None, pool_id=None, gpu_id=None, unit_id=None,
    )  # fmt: skip
    return Holder(
        kind="Pod", uid="uid-p", name="p", namespace="ns", tenant_id=None,
        started_at=started_at, ended_at=ended_at, rows=(row,) if rows else (),
    )  # fmt: skip


def test_a_holding_learnt_of_late_marks_the_hours_since_it_started():
    # given a pod that started 3 h 20 min before the current hour began, seen only now
    cluster = inv.cluster()
    started = this_hour() - timedelta(hours=3, minutes=20)
    reconcile_holders(cluster=cluster, holders=[holder(started_at=started, ended_at=started)], reason="t")
    # then its start hour up to the current hour are marked for metering again
    (change,) = ChangedHours.objects.all()
    assert (change.cluster_id, change.first_hour, change.end_hour) == (
        cluster.pk, this_hour() - timedelta(hours=4), this_hour()
    )  # fmt: skip


def test_an_end_learnt_of_late_marks_the_hours_since_it_ended():
    cluster = inv.cluster()
    started = this_hour() - timedelta(hours=10)
    reconcile_holders(cluster=cluster, holders=[holder(started_at=started, ended_at=started)], reason="t")
    ChangedHours.objects.all().delete()
    # when the sync learns it was deleted 90 minutes ago
    ended = this_hour() - timedelta(minutes=90)
    close_holders(cluster=cluster, kind="Pod", ended={"uid-p": ended}, reason="deleted")
    assert Allocation.objects.get().ended_at == ended
    (change,) = ChangedHours.objects.all()
    assert (change.first_hour, change.end_hour) == (this_hour() - timedelta(hours=2), this_hour())


def test_changes_inside_the_current_hour_mark_nothing():
    cluster = inv.cluster()
    now = timezone.now()
    reconcile_holders(cluster=cluster, holders=[holder(started_at=now, ended_at=now)], reason="t")
    close_holders(cluster=cluster, kind="Pod", ended={"uid-p": now}, reason="deleted")
    assert Allocation.objects.get().ended_at is not None
    assert not ChangedHours.objects.exists()
