"""A namespace moved to another tenant splits its open allocations at the moment of the change."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Allocation
from inventory.services import NAMESPACE_MOVED, reattribute_namespace
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def test_open_allocations_close_and_reopen_for_the_new_tenant_at_the_change(cast):
    running = inv.allocation(tenant=cast.vision, namespace="team-vision", name="train", hours_ago=5)
    finished = inv.allocation(
        tenant=cast.vision, namespace="team-vision", name="old", hours_ago=10, open=False
    )
    moved_at = running.started_at + timedelta(hours=3)

    assert (
        reattribute_namespace(cluster_name="", namespace="team-vision", tenant_id=cast.nlp.pk, at=moved_at)
        == 1
    )

    running.refresh_from_db()
    assert (running.tenant_id, running.ended_at, running.end_reason) == (
        cast.vision.pk,
        moved_at,
        NAMESPACE_MOVED,
    )
    reopened = Allocation.objects.get(holder_uid=running.holder_uid, ended_at__isnull=True)
    assert (reopened.tenant_id, reopened.started_at, reopened.ge) == (cast.nlp.pk, moved_at, running.ge)
    # held from 5 hours ago: 3 hours for vision before the move, nlp's from then on
    assert running.ended_at is not None
    assert running.ended_at - running.started_at == timedelta(hours=3)
    finished.refresh_from_db()
    assert (finished.tenant_id, finished.end_reason) == (cast.vision.pk, "")
    # again: already nlp's, nothing moves
    assert (
        reattribute_namespace(cluster_name="", namespace="team-vision", tenant_id=cast.nlp.pk, at=moved_at)
        == 0
    )


def test_a_namespace_left_unowned_goes_to_the_unassigned_bucket(cast):
    running = inv.allocation(tenant=cast.vision, namespace="team-vision", name="train", hours_ago=1)
    now = timezone.now()
    assert (
        reattribute_namespace(cluster_name="other-cluster", namespace="team-vision", tenant_id=None, at=now)
        == 0
    )
    assert (
        reattribute_namespace(
            cluster_name=running.cluster.name, namespace="team-vision", tenant_id=None, at=now
        )
        == 1
    )
    assert Allocation.objects.get(holder_uid=running.holder_uid, ended_at__isnull=True).tenant_id is None


def test_a_namespace_reassigned_through_the_tenant_api_splits_its_allocations_at_that_moment(cast, api):
    # given vision's pod in team-vision, running for 5 hours
    running = inv.allocation(tenant=cast.vision, namespace="team-vision", name="train", hours_ago=5)
    # when a platform-admin gives team-vision to nlp instead (vision lets go, nlp takes it)
    before_change = timezone.now()
    released = api(cast.pat).patch(f"/api/v1/tenants/{cast.vision.pk}/", {"namespaces": []}, format="json")
    taken = api(cast.pat).patch(
        f"/api/v1/tenants/{cast.nlp.pk}/", {"namespaces": [{"namespace": "team-vision"}]}, format="json"
    )

    # then vision held it until the change, and nlp holds it from then on, with nothing in between lost
    assert released.status_code == 200 and taken.status_code == 200, (released.json(), taken.json())
    running.refresh_from_db()
    assert running.ended_at is not None
    assert running.tenant_id == cast.vision.pk and running.ended_at >= before_change
    now_open = Allocation.objects.get(holder_uid=running.holder_uid, ended_at__isnull=True)
    assert now_open.tenant_id == cast.nlp.pk and now_open.started_at >= running.ended_at
    unassigned = Allocation.objects.get(holder_uid=running.holder_uid, tenant__isnull=True)
    assert (unassigned.started_at, unassigned.ended_at) == (running.ended_at, now_open.started_at)
