"""Issue 30: a flavor whose pool has a tainted or cordoned GPU says so wherever its free capacity is shown
(the catalogue's flavor list and flavor page, the request form's outlook, a pending request waiting for
the pool's devices), in the pool page's words, read once a page."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from quotas.models import CapacityRequest, Flavor, Quota
from quotas.models.requests import RequestState
from tests.inventory import factories as inv
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

H100 = "NVIDIA-H100-80GB-HBM3"
GPU = "nvidia.com/gpu"
XID = inv.XID_TAINT
CORDON = inv.HAMI_CORDON
WORDS = f"2 of 24 H100-80GB not offered: 1 GPU {CORDON}, 1 GPU {XID}"


@pytest.fixture
def h100(cast):
    """Three nodes of 8 H100s, one unit a card (24 cards, 24 units): gpu 3 of h100-0 tainted by a
    fatal XID, gpu 5 of h100-2 cordoned by HAMi, nothing held. Flavor `h100` on the pool, vision holds
    a quota of 8 of it; flavor `elsewhere` on an untouched pool."""
    pool = inv.h100_cards(nodes=3, blocked={(0, 3): XID, (2, 5): CORDON})
    flavor = adm.whole_gpu_flavor(name="h100", pool=pool, gpu_model=H100)
    a100 = "NVIDIA-A100-80GB"
    adm.whole_gpu_flavor(name="elsewhere", pool=inv.pool(a100), gpu_model=a100)
    Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=GPU, nominal=8)
    return flavor


def _page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_flavor_list_and_the_flavor_page_say_which_gpus_are_not_offered_and_why(cast, h100):
    page = _page(cast.pat, "/catalogue/flavors/")
    assert WORDS in page
    assert page.count("not offered:") == 1  # the untouched pool's flavor says nothing of the kind
    assert WORDS in _page(cast.pat, f"/catalogue/flavors/{h100.pk}/edit/")
    # a member sees the flavor (read only) and why its capacity is short
    assert WORDS in _page(cast.dana, f"/catalogue/flavors/{h100.pk}/edit/")


def test_the_request_forms_outlook_shows_the_smaller_free_capacity_and_why(cast, h100):
    page = _page(cast.alice, "/queues/requests/new/?tenant=vision&amount=1")
    # 24 cards, 2 not offered: 22 of 22 units free (the tainted and cordoned units are not offered)
    assert "22 of 22" in page
    assert WORDS in page


def test_a_request_waiting_for_the_pools_devices_says_which_are_not_offered(cast, h100):
    waiting = CapacityRequest.objects.create(
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=h100,
        priority_class=adm.priority_class(),
        amounts={GPU: 23},
        ge=Decimal(23),
        state=RequestState.PENDING,
        reason_code="no_physical_fit",
        message="23 nvidia.com/gpu do not fit the pool's free devices.",
    )
    quota_wait = CapacityRequest.objects.create(
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=h100,
        priority_class=adm.priority_class(),
        amounts={GPU: 9},
        ge=Decimal(9),
        state=RequestState.PENDING,
        reason_code="waiting_for_quota",
        message="Waiting for quota.",
    )
    queue_page = _page(cast.alice, "/queues/")
    assert queue_page.count(WORDS) == 1  # the physical wait says it; the quota wait does not
    assert WORDS in _page(cast.alice, f"/queues/requests/{waiting.pk}/")
    assert WORDS not in _page(cast.alice, f"/queues/requests/{quota_wait.pk}/")


def test_the_flavor_list_reads_why_once_whatever_the_flavors(cast, h100):
    client = Client()
    client.force_login(cast.pat)
    with CaptureQueriesContext(connection) as few:
        client.get("/catalogue/flavors/")
    for n in range(10):
        Flavor.objects.create(
            name=f"h100-{n}", pool=h100.pool, gpu_model=H100, resources=[{"name": GPU, "ge_per_unit": "1"}]
        )
    with CaptureQueriesContext(connection) as many:
        page = client.get("/catalogue/flavors/").content.decode()
    assert page.count(WORDS) == 11
    assert len(many) == len(few)
