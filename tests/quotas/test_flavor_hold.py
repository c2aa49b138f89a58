"""The held-capacity counters admission reads instead of summing every holding request: the trigger
keeps them equal to the sum through the services and through writes that bypass them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import BigIntegerField, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from quotas.models import CapacityRequest, FlavorHold
from quotas.runner.inputs import physical_free
from quotas.services.requests import release_request, submit_request
from tests.quotas.conftest import GPU, make_catalog

pytestmark = pytest.mark.django_db


def counter(flavor) -> int:
    return FlavorHold.objects.filter(flavor=flavor, resource=GPU).values_list("held", flat=True).first() or 0


def summed(flavor) -> int:
    total = CapacityRequest.objects.filter(flavor=flavor, state__in=["admitted", "active"]).aggregate(
        n=Sum(Cast(KeyTextTransform(GPU, "amounts"), BigIntegerField()))
    )["n"]
    return int(total or 0)


def test_the_counter_follows_every_way_a_request_holds_or_stops_holding(cast):
    catalog = make_catalog(cast, physical=16, vision=4, nlp=4)
    flavor = catalog.flavor

    # admitted through the service: 3 + 2 held; the third waits (over quota, nlp's 4 lent at most)
    first = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=3).request
    second = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=2).request
    assert (first.state, second.state) == ("admitted", "admitted")
    assert counter(flavor) == 5
    # the physical view: 16 on the node, 5 held
    assert physical_free([flavor]) == {"h100": {GPU: 11}}

    # admitted -> active does not count twice
    CapacityRequest.objects.filter(pk=first.pk).update(state="active")
    assert counter(flavor) == 5

    # released through the service
    release_request(actor=cast.dana, request_id=first.pk)
    assert counter(flavor) == 2

    # a bulk write and an amount change that bypass the services
    CapacityRequest.objects.filter(pk=second.pk).update(amounts={GPU: 4})
    assert counter(flavor) == 4
    CapacityRequest.objects.bulk_create(
        [
            CapacityRequest(
                tenant=cast.nlp,
                queue=catalog.nlp_queue,
                flavor=flavor,
                priority_class=catalog.low,
                amounts={GPU: 1},
                ge=Decimal(1),
                state="active",
            )
            for _ in range(3)
        ]
    )
    assert counter(flavor) == 7

    # deletes, as a test or an operator might
    CapacityRequest.objects.filter(tenant=cast.nlp).delete()
    assert counter(flavor) == 4
    assert counter(flavor) == summed(flavor)
    CapacityRequest.objects.all().delete()
    assert counter(flavor) == summed(flavor) == 0
