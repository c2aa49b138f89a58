"""`gpuplatform.db.bulk_update`'s two batch writes, on the table the admission loop writes through them:
each row gets its own values (NULLs, JSON, timestamps and foreign keys included), an instance given
twice is written once as it is last, and inserted rows get their primary keys in the order given."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gpuplatform.db.bulk_update import insert_each, update_each
from quotas.models import CapacityRequest, RequestTransition
from tests.quotas import factories as adm


def stored_request(cast: Any, order: int) -> CapacityRequest:
    return CapacityRequest.objects.create(
        id=uuid.uuid4(),
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=adm.flavor(),
        priority_class=adm.priority_class(),
        amounts={adm.GPU: 1},
        ge=Decimal(1),
        created_order=order,
        queue_position=order,
        message="waiting",
    )


@pytest.mark.django_db
def test_update_each_writes_each_row_its_own_values(cast):
    # given three waiting requests
    first, second, third = (stored_request(cast, n) for n in (1, 2, 3))
    at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    first.queue_position, first.message, first.flavor_attempts = None, "admitted", [{"flavor": "h100"}]
    first.admitted_at, first.preempted_by_id = at, second.pk
    second.queue_position, second.message, second.flavor_attempts = 7, "still waits", []
    second.admitted_at, second.preempted_by_id = None, None
    fields = ["queue_position", "message", "flavor_attempts", "admitted_at", "preempted_by"]

    # when the first two are written, the second given twice (changed in between: its last values win)
    update_each(CapacityRequest, [first, second], fields)
    second.queue_position = 8
    update_each(CapacityRequest, [second, first, second], fields)

    # then each has its own values, and the third is untouched
    rows = CapacityRequest.objects.order_by("created_order").values_list(
        "queue_position", "message", "flavor_attempts", "admitted_at", "preempted_by_id"
    )
    assert list(rows) == [
        (None, "admitted", [{"flavor": "h100"}], at, second.pk),
        (8, "still waits", [], None, None),
        (3, "waiting", [], None, None),
    ]
    assert third.queue_position == 3


@pytest.mark.django_db
def test_insert_each_sets_primary_keys_in_order(cast):
    # given a stored request and three transitions of it
    row = stored_request(cast, 1)
    at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    steps = [("", "pending", cast.alice), ("pending", "admitted", None), ("admitted", "active", None)]
    transitions = [
        RequestTransition(request_id=row.pk, from_state=a, to_state=b, actor=who, reason_code=b, at=at)
        for a, b, who in steps
    ]

    # when they are inserted in one statement
    insert_each(RequestTransition, transitions)

    # then each got the key of its own row, ascending in the order given
    keys = [t.pk for t in transitions]
    assert keys == sorted(keys) and len(set(keys)) == 3
    found = RequestTransition.objects.filter(request_id=row.pk).order_by("pk")
    assert [(t.pk, t.from_state, t.to_state, t.actor_id, t.at) for t in found] == [
        (keys[0], "", "pending", cast.alice.pk, at),
        (keys[1], "pending", "admitted", None, at),
        (keys[2], "admitted", "active", None, at),
    ]
    assert not any(t._state.adding for t in transitions)
