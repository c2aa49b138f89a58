"""Issue 30 in Chromium at 1400 and 375 px: a flavor whose pool has a tainted and a cordoned GPU says
why on the flavor list, the flavor page, the request form's outlook and a request waiting for the
pool's devices; a claim waiting for its binding condition says so on the allocations page. Each page
fits its window."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Page, expect

from inventory.models import Allocation, ResourceClaim
from quotas.models import CapacityRequest, Flavor, Quota
from quotas.models.requests import RequestState
from tests.inventory import factories as inv
from tests.quotas import factories as adm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

H100 = "NVIDIA-H100-80GB-HBM3"
GPU = "nvidia.com/gpu"
WORDS = "2 of 16 H100-80GB not offered"
WAITING = "waiting to bind: the device is not ready until dra.example.com/fabric-attached is True"


def _fits(page: Page) -> None:
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll <= inner


def _fleet(cast) -> Flavor:
    pool = inv.h100_cards(nodes=2, blocked={(0, 3): inv.XID_TAINT, (1, 5): inv.HAMI_CORDON})
    flavor = Flavor.objects.create(
        name="h100", pool=pool, gpu_model=H100, resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    Quota.objects.create(tenant=cast.vision, flavor=flavor, resource=GPU, nominal=8)
    CapacityRequest.objects.create(
        tenant=cast.vision,
        queue=adm.queue(tenant=cast.vision),
        flavor=flavor,
        priority_class=adm.priority_class(),
        amounts={GPU: 15},
        ge=Decimal(15),
        state=RequestState.PENDING,
        reason_code="no_physical_fit",
        message="15 nvidia.com/gpu do not fit the pool's free devices.",
    )
    claim = ResourceClaim.objects.create(
        cluster=pool.cluster,
        namespace="team-vision",
        name="trainer-gpu",
        uid="claim-1",
        state="allocated",
        results=[
            {
                "request": "gpu",
                "driver": "gpu.nvidia.com",
                "pool": "h100-0",
                "device": "gpu-0",
                "binding": WAITING,
            }
        ],
    )
    Allocation.objects.create(
        cluster=pool.cluster,
        tenant=cast.vision,
        namespace="team-vision",
        holder_kind="claim",
        holder_name="trainer-gpu",
        holder_uid="claim-1",
        unit_key="dra/gpu.nvidia.com/h100-0/gpu-0",
        resource_name="gpu.nvidia.com",
        ge=Decimal(1),
        started_at=timezone.now(),
        claim=claim,
    )
    return flavor


def test_why_capacity_is_not_offered_and_why_a_claim_is_not_bound(page: Page, login, cast, shot):
    flavor = _fleet(cast)
    base = login(page, "pat")
    for width, height in ((1400, 900), (375, 812)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(base + reverse("catalogue-list", args=["flavors"]))
        expect(page.get_by_test_id("not-offered").first).to_contain_text(WORDS)
        _fits(page)
        shot(page, f"flavors-{width}")
        page.goto(base + reverse("catalogue-edit", args=["flavors", flavor.pk]))
        expect(page.get_by_test_id("not-offered")).to_contain_text("1 GPU tainted by gpu.nvidia.com/xid=79")
        _fits(page)
        page.goto(base + reverse("queues-request-new") + "?tenant=vision&amount=1")
        expect(page.get_by_test_id("outlook").get_by_test_id("not-offered")).to_contain_text(WORDS)
        _fits(page)
        shot(page, f"request-form-{width}")
        page.goto(base + reverse("queues"))
        expect(page.get_by_test_id("not-offered")).to_contain_text("1 GPU cordoned by HAMi")
        _fits(page)
        shot(page, f"queue-{width}")
        page.goto(base + reverse("inventory-allocations"))
        expect(page.get_by_test_id("binding")).to_contain_text(WAITING)
        _fits(page)
        shot(page, f"allocations-{width}")
