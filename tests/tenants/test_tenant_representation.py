"""The tenant list renders tenants by hand for speed; it must render exactly what the declared
fields would, for every kind of tenant a caller meets."""

from __future__ import annotations

import json

import pytest
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from gpuplatform.api.serializers import StrictModelSerializer
from tenants.api.serializers import TenantSerializer
from tenants.api.views import TenantViewSet
from tenants.scoping import visibility_of
from tenants.services import create_tenant

pytestmark = pytest.mark.django_db


def rendered_both_ways(user, tenants):
    view = TenantViewSet()
    view.request = Request(APIRequestFactory().get("/"))
    view.request.user = user
    view.format_kwarg = None
    annotated = {t.pk: t for t in view.get_queryset().filter(pk__in=[t.pk for t in tenants])}
    context = {"visibility": visibility_of(user)}
    for tenant in tenants:
        serializer = TenantSerializer(context=context)
        by_hand = serializer.to_representation(annotated[tenant.pk])
        declared = StrictModelSerializer.to_representation(serializer, annotated[tenant.pk])
        yield json.loads(json.dumps(by_hand)), json.loads(json.dumps(declared))


def test_by_hand_equals_the_declared_fields(cast):
    with_namespaces = create_tenant(
        actor=cast.pat,
        slug="vision-east",
        display_name="Vision East",
        parent_id=cast.vision.pk,
        cost_centre="CC-42",
        namespaces=[("east", "vision-east"), ("", "vision-east-default")],
    )
    # a root, a child whose parent dana cannot see (parent: null), one with namespaces and members
    for user, tenants in [(cast.pat, [cast.acme, cast.vision, with_namespaces]), (cast.dana, [cast.vision])]:
        for by_hand, declared in rendered_both_ways(user, tenants):
            assert by_hand == declared
    dana_view, _ = next(rendered_both_ways(cast.dana, [cast.vision]))
    assert dana_view["parent"] is None and dana_view["member_count"] == 3  # alice, dana, victor
    east, _ = next(rendered_both_ways(cast.pat, [with_namespaces]))
    assert east["namespaces"] == [
        {"cluster": "", "namespace": "vision-east-default"},
        {"cluster": "east", "namespace": "vision-east"},
    ]
