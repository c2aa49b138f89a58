"""Writes sent together (`gpuplatform.db.together`), as a submission writes under the flavor lock:
the rows are those the one-by-one path writes, field for field; keys are set when the block ends;
nothing is sent when the block raises; a read placed after an advisory lock in one round trip sees
what the lock's holder committed while it waited."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction

from gpuplatform.audit.models import AuditEvent
from gpuplatform.audit.services import record_event
from gpuplatform.db.bulk_update import insert_each, insert_with_keys
from gpuplatform.db.locks import LockSpace, lock_ids_then
from gpuplatform.db.together import writes_together
from quotas.models import CapacityRequest, RequestTransition
from tests.quotas import factories as adm


def unsaved_request(cast: Any, *, message: str) -> CapacityRequest:
    return CapacityRequest(
        id=uuid.uuid4(),
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=adm.flavor(),
        priority_class=adm.priority_class(),
        amounts={adm.GPU: 2},
        fallback_flavors=[],
        flavor_attempts=[
            {"flavor": "h100", "outcome": "admitted", "reason": "", "message": "it's 100% free"}
        ],
        ge=Decimal("2.5"),
        duration_seconds=3600,
        reason="a 'quoted' reason; with -- and %s",
        state="admitted",
        message=message,
        created_by=cast.alice,
        created_order=7,
        created_at=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
        approval_basis=[{"flavor": "h100", "threshold": 4}],
    )


def stored(row: CapacityRequest) -> dict[str, Any]:
    found = dict(CapacityRequest.objects.filter(pk=row.pk).values().get())
    found.pop("id")
    found.pop("message")
    return found


@pytest.mark.django_db(transaction=True)
def test_rows_written_together_equal_rows_written_one_by_one(cast):
    # given two requests alike but for their ids and messages, and an event about each
    one_by_one, together = unsaved_request(cast, message="saved"), unsaved_request(cast, message="together")

    # when one is written as before (save, insert_each, create) and the other in one round trip
    with transaction.atomic():
        one_by_one.save(force_insert=True)
        first = RequestTransition(
            request_id=one_by_one.pk, from_state="", to_state="pending", actor=cast.alice
        )
        insert_each(RequestTransition, [first])
        old_event = record_event(
            actor=cast.alice, action="capacity_request.created", obj=one_by_one, after={"state": "admitted"}
        )
    with transaction.atomic(), writes_together():
        insert_with_keys(CapacityRequest, [together])
        second = RequestTransition(
            request_id=together.pk, from_state="", to_state="pending", actor=cast.alice
        )
        insert_each(RequestTransition, [second])
        new_event = record_event(
            actor=cast.alice, action="capacity_request.created", obj=together, after={"state": "admitted"}
        )
        # then nothing is sent before the block ends: no key yet
        assert second.pk is None and new_event.pk is None
        assert not CapacityRequest.objects.filter(pk=together.pk).exists()

    # then every field of the rows is the same (updated_at stamped by auto_now in both)
    old, new = stored(one_by_one), stored(together)
    assert old.pop("updated_at") <= new.pop("updated_at")
    assert old == new
    assert new["reason"] == "a 'quoted' reason; with -- and %s"
    assert not together._state.adding
    # and the transition and the event got their keys, and read back alike
    assert second.pk is not None and new_event.pk is not None
    transitions = {
        t["id"]: t for t in RequestTransition.objects.filter(pk__in=[first.pk, second.pk]).values()
    }
    assert transitions[second.pk]["request_id"] == together.pk
    assert {**transitions[second.pk], "id": 0, "request_id": 0, "at": 0} == {
        **transitions[first.pk],
        "id": 0,
        "request_id": 0,
        "at": 0,
    }
    events = {e["id"]: e for e in AuditEvent.objects.filter(pk__in=[old_event.pk, new_event.pk]).values()}
    skip = {"id": 0, "at": 0, "object_id": 0, "object_repr": 0}
    assert {**events[new_event.pk], **skip} == {**events[old_event.pk], **skip}
    assert events[new_event.pk]["object_repr"] == f"request {together.pk}"
    assert events[new_event.pk]["object_id"] == str(together.pk)


@pytest.mark.django_db(transaction=True)
def test_a_block_that_raises_sends_nothing(cast):
    row = unsaved_request(cast, message="never")

    def refused() -> None:
        with transaction.atomic(), writes_together():
            insert_with_keys(CapacityRequest, [row])
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        refused()
    assert not CapacityRequest.objects.filter(pk=row.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_a_read_sent_with_a_lock_sees_what_the_holder_committed(cast):
    # given a transaction that holds a flavor's lock and has just inserted a request
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks are PostgreSQL's")
    flavor = adm.flavor()
    row = unsaved_request(cast, message="held")
    row.flavor = flavor
    holding, waiting = threading.Event(), threading.Event()

    def holder() -> None:
        try:
            with transaction.atomic():
                lock_ids_then(LockSpace.QUOTA_FLAVOR, [flavor.pk], ("SELECT 1", None))
                insert_with_keys(CapacityRequest, [row])
                holding.set()
                waiting.wait(5)
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(5)

    # when another takes the lock and reads in one round trip (it waits for the holder's commit)
    with transaction.atomic():
        threading.Timer(0.2, waiting.set).start()
        rows = lock_ids_then(
            LockSpace.QUOTA_FLAVOR,
            [flavor.pk],
            ("SELECT count(*) FROM quotas_capacityrequest WHERE id = %s", [row.pk]),
        )
    thread.join(5)

    # then its read ran after the lock was granted, on a snapshot that sees the committed row
    assert rows == [(1,)]
