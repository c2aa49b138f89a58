"""The cohort catalogue is reused while unchanged, and never once a change is visible."""

from __future__ import annotations

from decimal import Decimal

import pytest

from quotas.models import Budget, PriorityClass, Queue, Quota
from quotas.runner.catalogue import catalogue_of
from quotas.services.requests import submit_request
from tenants.models import Tenant
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


def quotas_of(catalogue):
    return {(q.tenant, q.resource): q.nominal for q in catalogue.quotas}


def test_a_second_read_costs_only_the_stamp(cast, django_assert_num_queries):
    catalog = make_catalog(cast)
    first = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    with django_assert_num_queries(1):
        again = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    assert again is first
    assert quotas_of(first) == {("vision", "nvidia.com/gpu"): 4, ("nlp", "nvidia.com/gpu"): 4}


@pytest.mark.parametrize(
    "change",
    [
        lambda c, cat: Quota.objects.filter(pk=cat.vision_quota.pk).update(nominal=9),
        lambda c, cat: Queue.objects.create(tenant=c.nlp, name="urgent"),
        lambda c, cat: Tenant.objects.filter(pk=c.vision.pk).update(display_name="Vision!"),
        lambda c, cat: PriorityClass.objects.filter(pk=cat.low.pk).update(value=5),
        lambda c, cat: Budget.objects.create(tenant=c.vision, limit_ge_hours=Decimal(10)),
    ],
    ids=["quota", "queue", "tenant", "priority-class", "budget"],
)
def test_any_change_to_the_catalogue_is_read_afresh(cast, change):
    catalog = make_catalog(cast)
    before = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    change(cast, catalog)
    after = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    assert after is not before


def test_a_raised_quota_admits_at_once(cast):
    catalog = make_catalog(cast, physical=16, vision=2, nlp=0)
    # vision holds its 2; a third waits, the catalogue now cached
    for _ in range(2):
        submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)
    waiting = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert waiting.state == "pending"
    # the quota is raised by 1: the next request is decided on the new quota
    Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=4)
    after = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert after.state == "admitted"
