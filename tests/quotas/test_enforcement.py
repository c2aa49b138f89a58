"""Flavors sharing a resource name on one cluster (issue 11, defect 4): the namespace ResourceQuota
counts a resource name, not a pool, so it holds their sum. Until each pool has a name of its own, the
flavor says the cluster cannot enforce it separately, and the quota page warns."""

from __future__ import annotations

import pytest

from quotas.models import Flavor, Quota
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"


@pytest.fixture
def t4_on_the_same_cluster(cast, catalog):
    pool = inv.pool("t4-pool", on=catalog.pool.cluster)
    t4 = Flavor.objects.create(name="t4-shared", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1/4"}])
    Quota.objects.create(tenant=cast.vision, flavor=t4, resource=GPU, nominal=24)
    return t4


def flavors(client):
    return {f["name"]: f["enforcement"] for f in client.get("/api/v1/flavors/").json()["results"]}


def test_a_flavor_alone_on_its_resource_name_is_enforced_separately(cast, api, catalog):
    assert flavors(api(cast.alice))["h100"] == {"separately": True, "reason": "", "shared_with": []}


def test_two_flavors_sharing_a_resource_name_say_the_cluster_cannot_enforce_them_apart(
    cast, api, t4_on_the_same_cluster
):
    seen = flavors(api(cast.alice))
    assert seen["h100"]["separately"] is False and seen["h100"]["shared_with"] == ["t4-shared"]
    assert seen["t4-shared"]["shared_with"] == ["h100"]
    assert "nvidia.com/gpu" in seen["h100"]["reason"] and "ResourceQuota" in seen["h100"]["reason"]
    one = api(cast.alice).get(f"/api/v1/flavors/{t4_on_the_same_cluster.pk}/").json()
    assert one["enforcement"]["separately"] is False


def test_the_quota_page_warns_about_quotas_the_cluster_cannot_enforce(cast, client, t4_on_the_same_cluster):
    client.force_login(cast.alice)
    html = client.get("/queues/quotas/").content.decode()
    assert "cannot enforce these flavors" in html and "not enforced separately" in html
