"""The catalogue in the web UI (issue 11, item 6): forms over the catalogue services, by role, with
the services' messages on the form, the same audit events, and nothing changed on bad input."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuplatform.audit.models import AuditEvent
from quotas.models import Budget, Flavor, Queue, Quota

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"
FLAVOR = {
    "name": "a100",
    "display_name": "A100 80GB",
    "kind": "device-plugin",
    "gpu_model": "A100-80GB",
    "resources": "nvidia.com/gpu = 1",
}


def test_a_platform_admin_creates_a_flavor_and_sees_it_listed_and_audited(cast, client):
    client.force_login(cast.pat)
    response = client.post("/catalogue/flavors/new/", FLAVOR)
    assert response.status_code == 302
    flavor = Flavor.objects.get(name="a100")
    assert flavor.resources == [{"name": GPU, "ge_per_unit": "1"}]
    assert AuditEvent.objects.filter(action="flavor.created", object_id=str(flavor.pk)).count() == 1
    page = client.get("/catalogue/flavors/").content.decode()
    assert "A100 80GB" in page and "nvidia.com/gpu = 1 GE" in page


def test_a_bad_flavor_shows_its_messages_and_creates_nothing(cast, client):
    client.force_login(cast.pat)
    body = {**FLAVOR, "name": "A100 Big", "resources": "nvidia.com/gpu = one"}
    page = client.post("/catalogue/flavors/new/", body).content.decode()
    assert 'data-testid="error-name"' in page and 'data-testid="error-resources"' in page
    assert "Line 1: A positive fraction such as 1, 1/7 or 3/8." in page
    # the service's own rule (a DRA flavor names its DeviceClass) lands on its field too
    page = client.post("/catalogue/flavors/new/", {**FLAVOR, "kind": "dra"}).content.decode()
    assert "A DRA flavor names its DeviceClass." in page
    assert not Flavor.objects.filter(name__in=["a100", "A100 Big"]).exists()
    assert not AuditEvent.objects.filter(action="flavor.created").exists()


def test_a_tenant_admin_grants_below_out_of_its_own_quota(cast, client, catalog):
    # given: research holds 10 h100 GPUs (set by pat); vision already holds 4 of its own (catalog)
    Quota.objects.create(tenant=cast.research, flavor=catalog.flavor, resource=GPU, nominal=10)
    catalog.vision_quota.delete()
    client.force_login(cast.rita)
    # when: rita gives vision 4 through the form (resource left empty: the flavor's only one)
    response = client.post("/catalogue/quotas/new/", {"tenant": "vision", "flavor": "h100", "nominal": 4})
    # then: vision holds 4 and research 10 - 4 = 6, both audited
    assert response.status_code == 302
    assert Quota.objects.get(tenant=cast.vision).nominal == 4
    assert Quota.objects.get(tenant=cast.research).nominal == 6
    assert AuditEvent.objects.filter(action="quota.created", tenant_id=cast.vision.pk).count() == 1
    # asking for 7 more than research holds now (6) is the service's refusal, on the nominal field
    quota = Quota.objects.get(tenant=cast.vision)
    page = client.post(f"/catalogue/quotas/{quota.pk}/edit/", {"nominal": 11}).content.decode()
    assert "the parent holds 6 of nvidia.com/gpu on this flavor, and 7 more was asked for" in page
    assert Quota.objects.get(tenant=cast.vision).nominal == 4
    assert Quota.objects.get(tenant=cast.research).nominal == 6


def test_a_quota_on_a_resource_the_flavor_lacks_is_refused_on_its_field(cast, client, catalog):
    client.force_login(cast.pat)
    body = {"tenant": "research", "flavor": "h100", "resource": "nvidia.com/mig-1g.10gb", "nominal": 2}
    page = client.post("/catalogue/quotas/new/", body).content.decode()
    assert 'data-testid="error-resource"' in page
    assert "Flavor &#x27;h100&#x27; has no resource &#x27;nvidia.com/mig-1g.10gb&#x27;." in page
    assert not Quota.objects.filter(tenant=cast.research).exists()


def test_a_tenant_admin_is_offered_no_more_than_it_was_given(cast, client, catalog):
    client.force_login(cast.alice)
    # alice administers vision and nothing below it: no quota or budget to set, no new button
    page = client.get("/catalogue/quotas/").content.decode()
    assert 'data-testid="new"' not in page
    page = client.get("/catalogue/quotas/new/").content.decode()
    assert '<option value="vision"' not in page
    page = client.post(
        "/catalogue/quotas/new/", {"tenant": "vision", "flavor": "h100", "nominal": 40}
    ).content
    assert b"Select a valid choice" in page
    # her own tenant's quota is visible, not hers to change: the service says so, nothing changes
    mine = catalog.vision_quota
    assert 'data-testid="read-only"' in client.get(f"/catalogue/quotas/{mine.pk}/edit/").content.decode()
    page = client.post(f"/catalogue/quotas/{mine.pk}/edit/", {"nominal": 40}).content.decode()
    assert "set by a tenant-admin above this tenant or a platform-admin" in page
    assert Quota.objects.get(pk=mine.pk).nominal == 4
    # flavors are platform objects
    assert b"Only platform-admins manage flavors" in client.post("/catalogue/flavors/new/", FLAVOR).content


def test_another_tenants_rows_are_a_404_on_every_form(cast, client, catalog):
    client.force_login(cast.alice)
    theirs = catalog.nlp_quota
    assert client.get(f"/catalogue/quotas/{theirs.pk}/edit/").status_code == 404
    assert client.post(f"/catalogue/quotas/{theirs.pk}/edit/", {"nominal": 0}).status_code == 404
    assert client.post(f"/catalogue/quotas/{theirs.pk}/delete/").status_code == 404
    assert client.post(f"/catalogue/queues/{catalog.nlp_queue.pk}/delete/").status_code == 404
    assert Quota.objects.get(pk=theirs.pk).nominal == 4
    assert Queue.objects.filter(pk=catalog.nlp_queue.pk).exists()
    page = client.get("/catalogue/quotas/").content.decode()
    assert "vision" in page and "nlp" not in page


def test_a_tenant_admin_keeps_its_queues_and_leaves_their_weight_to_those_above(cast, client, catalog):
    client.force_login(cast.alice)
    body = {"tenant": "vision", "name": "batch", "strategy": "StrictFIFO", "weight": "1"}
    assert client.post("/catalogue/queues/new/", body).status_code == 302
    page = client.post("/catalogue/queues/new/", {**body, "name": "heavy", "weight": "2"}).content.decode()
    rule = "A queue&#x27;s weight and what it may preempt of relatives are set by an admin above its tenant"
    assert rule in page
    assert set(Queue.objects.filter(tenant=cast.vision).values_list("name", flat=True)) == {
        "default",
        "batch",
    }
    # a duplicate name is the service's conflict, shown above the form
    page = client.post("/catalogue/queues/new/", body).content.decode()
    assert 'data-testid="form-error"' in page and "Queue already exists." in page


def test_a_budget_is_set_edited_and_deleted_through_the_forms(cast, client, catalog):
    client.force_login(cast.pat)
    body = {"tenant": "vision", "flavor": "", "limit_ge_hours": "720.5", "hard": "on"}
    assert client.post("/catalogue/budgets/new/", body).status_code == 302
    budget = Budget.objects.get(tenant=cast.vision)
    assert budget.flavor is None and budget.limit_ge_hours == Decimal("720.500") and budget.hard
    page = client.get("/catalogue/budgets/").content.decode()
    assert "every flavor" in page and '<td class="num">720.5</td>' in page
    page = client.post(f"/catalogue/budgets/{budget.pk}/edit/", {"limit_ge_hours": "-1"}).content.decode()
    assert "Ensure this value is greater than or equal to 0." in page
    client.post(f"/catalogue/budgets/{budget.pk}/edit/", {"limit_ge_hours": "100", "flavor": "h100"})
    budget.refresh_from_db()
    assert budget.limit_ge_hours == Decimal(100) and budget.flavor == catalog.flavor and not budget.hard
    assert client.post(f"/catalogue/budgets/{budget.pk}/delete/").status_code == 302
    assert not Budget.objects.filter(pk=budget.pk).exists()
    actions = list(AuditEvent.objects.filter(object_id=str(budget.pk)).values_list("action", flat=True))
    assert sorted(actions) == ["budget.created", "budget.deleted", "budget.updated"]


def test_a_flavor_still_in_use_is_not_deleted(cast, client, catalog):
    client.force_login(cast.pat)
    response = client.post(f"/catalogue/flavors/{catalog.flavor.pk}/delete/", follow=True)
    assert "Still in use by requests or quotas." in response.content.decode()
    assert Flavor.objects.filter(pk=catalog.flavor.pk).exists()


def test_lists_are_paginated(cast, client):
    client.force_login(cast.pat)
    for n in range(30):
        Flavor.objects.create(name=f"f-{n:02d}", resources=[{"name": GPU, "ge_per_unit": "1"}])
    page = client.get("/catalogue/flavors/").content.decode()
    assert "Page 1 of 2" in page and "f-24" in page and "f-25" not in page
    assert "f-29" in client.get("/catalogue/flavors/?page=2").content.decode()
