"""The scoping door reads a user's memberships once per request, and forgets them when they change."""

from __future__ import annotations

import pytest

from tenants.models import Tenant
from tenants.scoping import memberships_read_once, visibility_of
from tenants.services import add_membership, remove_membership

pytestmark = pytest.mark.django_db


def test_one_membership_read_per_request_and_none_remembered_outside(cast, django_assert_num_queries):
    with memberships_read_once(), django_assert_num_queries(2):  # the memberships, then the tenants
        visibility_of(cast.dana)
        visibility_of(cast.dana)
        list(Tenant.objects.visible_to(cast.dana).values_list("slug", flat=True))
    # outside a request every question reads again
    with django_assert_num_queries(2):
        visibility_of(cast.dana)
        visibility_of(cast.dana)


def test_a_membership_change_inside_the_request_is_seen_at_once(cast):
    with memberships_read_once():
        assert set(Tenant.objects.visible_to(cast.dana).values_list("slug", flat=True)) == {"vision"}
        added = add_membership(actor=cast.bob, tenant_id=cast.nlp.pk, username="dana", role="viewer")
        assert set(Tenant.objects.visible_to(cast.dana).values_list("slug", flat=True)) == {"vision", "nlp"}
        remove_membership(actor=cast.bob, membership_id=added.pk)
        assert set(Tenant.objects.visible_to(cast.dana).values_list("slug", flat=True)) == {"vision"}
