"""A cohort's live requests are read on PostgreSQL by one constant SQL text (issue 31), not the ORM
query: the text must give the ORM's rows, column for column (``LIVE_FIELDS``) and in its order, or
the snapshot would decide on shifted columns. This fails when a field is added to one and not the
other, or the order changes."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from quotas.models import CapacityRequest
from quotas.runner.inputs import _LIVE_STATES, JSON_AS_TEXT, LIVE_FIELDS, _live_rows
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db


def test_the_constant_text_reads_what_the_orm_query_reads(cast):
    other = adm.flavor(name="spare-h100")
    now = timezone.now()
    for n, (tenant, state, fallback) in enumerate(
        [
            (cast.vision, "pending", [str(other.pk)]),
            (cast.vision, "admitted", []),
            (cast.nlp, "active", []),
            (cast.nlp, "released", []),  # not live: neither reads it
            (cast.globex, "pending", []),  # another tenant than the cohort's two: neither reads it
        ]
    ):
        request = adm.capacity_request(tenant=tenant)
        CapacityRequest.objects.filter(pk=request.pk).update(
            state=state,
            fallback_flavors=fallback,
            amounts={"nvidia.com/gpu": n + 1},
            ge=Decimal(n + 1),
            created_at=now - timedelta(minutes=n % 3),  # two share a time: then the id orders them
            created_order=n,
            message=f"m{n}",
        )
    tenants = [cast.vision.pk, cast.nlp.pk]
    flavors = [adm.flavor().pk, other.pk]

    through_orm = list(
        CapacityRequest.objects.filter(tenant_id__in=tenants, flavor_id__in=flavors, state__in=_LIVE_STATES)
        .annotate(**JSON_AS_TEXT)
        .values_list(*LIVE_FIELDS)
    )
    through_text = [tuple(row) for row in _live_rows(tenant_ids=tenants, flavor_ids=flavors)]

    assert len(through_orm) == 3
    assert through_text == through_orm
