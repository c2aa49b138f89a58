"""The request state machine: every (state, event) pair, legal ones written with their transition row,
illegal ones refused with nothing changed."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from quotas.lifecycle import (
    NEW,
    RULES,
    ActorKind,
    ActorNotAllowed,
    Event,
    IllegalTransition,
    Move,
    move_requests,
)
from quotas.models import CapacityRequest, RequestState, RequestTransition
from quotas.models.requests import FINAL, ApprovalState
from tests.quotas import factories as adm

STATES = [NEW, *RequestState.values]
PAIRS = [(state, event) for state in STATES for event in Event]


def request_in(state: str, cast: Any) -> CapacityRequest:
    """A request of vision in ``state`` (unsaved when NEW), awaiting approval so approvals apply."""
    row = CapacityRequest(
        id=uuid.uuid4(),
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=adm.flavor(),
        priority_class=adm.priority_class(),
        amounts={adm.GPU: 1},
        ge=Decimal(1),
        approval=ApprovalState.AWAITING,
        created_by=cast.alice,
        queue_position=1,
    )
    if state != NEW:
        row.state = state
        row.save(force_insert=True)
    return row


def stored(row: CapacityRequest) -> tuple[Any, ...]:
    found = CapacityRequest.objects.filter(pk=row.pk).values_list("state", "reason_code", "message").first()
    return found, RequestTransition.objects.filter(request_id=row.pk).count()


@pytest.mark.django_db
@pytest.mark.parametrize(("state", "event"), PAIRS, ids=[f"{s or 'new'}-{e}" for s, e in PAIRS])
def test_every_state_and_event(cast, state, event):
    # given
    row = request_in(state, cast)
    rule = RULES[event]
    move = Move(
        request=row, event=event, by=min(rule.allowed), actor=cast.alice, reason_code="x", message="why"
    )
    before = stored(row)
    now = timezone.now()
    if state not in rule.sources:
        # when / then: refused, and nothing written
        with pytest.raises(IllegalTransition) as refused:
            move_requests(moves=[move], now=now)
        assert refused.value.code == "invalid_state"
        assert stored(row) == before
        return
    # when
    written = move_requests(moves=[move], now=now)
    # then: the row is in the target state, with its transition row, in the same write
    row.refresh_from_db()
    assert row.state == rule.target
    assert [(t.from_state, t.to_state, t.reason_code, t.actor_id) for t in written] == [
        (state, rule.target, "x", cast.alice.pk)
    ]
    assert RequestTransition.objects.filter(request=row, from_state=state, to_state=rule.target).count() == 1
    assert (row.ended_at == now) is (rule.target in FINAL)
    if rule.target != RequestState.PENDING:
        assert row.queue_position is None


@pytest.mark.django_db
@pytest.mark.parametrize("event", list(Event))
def test_only_the_kinds_of_actor_a_rule_names_may_cause_its_event(cast, event):
    rule = RULES[event]
    state = next(iter(rule.sources))
    for kind in set(ActorKind) - rule.allowed:
        row = request_in(state, cast)
        before = stored(row)
        move = Move(request=row, event=event, by=kind, reason_code="x", message="why")
        with pytest.raises(ActorNotAllowed):
            move_requests(moves=[move], now=timezone.now())
        assert stored(row) == before


@pytest.mark.django_db
def test_an_approval_applies_only_to_a_request_awaiting_one(cast):
    row = request_in(RequestState.PENDING, cast)
    CapacityRequest.objects.filter(pk=row.pk).update(approval=ApprovalState.NOT_REQUIRED)
    row.refresh_from_db()
    before = stored(row)
    move = Move(request=row, event=Event.APPROVE, by=ActorKind.APPROVER, reason_code="approved", message="")
    with pytest.raises(IllegalTransition, match="awaiting approval"):
        move_requests(moves=[move], now=timezone.now())
    assert stored(row) == before


@pytest.mark.django_db
def test_a_batch_with_one_illegal_move_writes_none_of_them(cast):
    pending, released = request_in(RequestState.PENDING, cast), request_in(RequestState.RELEASED, cast)
    before = stored(pending), stored(released)
    moves = [
        Move(request=pending, event=Event.ADMIT, by=ActorKind.SYSTEM, reason_code="admit", message="ok"),
        Move(request=released, event=Event.ADMIT, by=ActorKind.SYSTEM, reason_code="admit", message="no"),
    ]
    with pytest.raises(IllegalTransition):
        move_requests(moves=moves, now=timezone.now())
    assert (stored(pending), stored(released)) == before


@pytest.mark.django_db
def test_a_new_request_submitted_and_admitted_in_one_batch_is_inserted_once_with_both_rows(cast):
    row = request_in(NEW, cast)
    moves = [
        Move(request=row, event=Event.SUBMIT, by=ActorKind.REQUESTER, reason_code="submitted", message="hi"),
        Move(request=row, event=Event.ADMIT, by=ActorKind.SYSTEM, reason_code="admit", message="fits"),
    ]
    move_requests(moves=moves, now=timezone.now())
    row.refresh_from_db()
    assert (row.state, row.reason_code, row.message) == (RequestState.ADMITTED, "admit", "fits")
    assert list(row.transitions.values_list("from_state", "to_state")) == [
        ("", RequestState.PENDING),
        (RequestState.PENDING, RequestState.ADMITTED),
    ]


@pytest.mark.django_db
def test_a_claim_lost_to_another_writer_is_skipped_without_a_transition(cast):
    # given: the loop read the request admitted, then a release got in first
    row = request_in(RequestState.ADMITTED, cast)
    CapacityRequest.objects.filter(pk=row.pk).update(state=RequestState.RELEASED)
    move = Move(request=row, event=Event.EXPIRE, by=ActorKind.SYSTEM, reason_code="expired", message="over")
    # when
    written = move_requests(moves=[move], now=timezone.now(), claim=True)
    # then
    assert written == []
    assert stored(row) == ((RequestState.RELEASED, "", ""), 0)
