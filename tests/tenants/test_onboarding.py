"""Onboarding a team in one form from its parent's tenant page (issue 27): tenant, namespaces, quota
per flavor with what the parent still has to give, queue, budget and members, each step the existing
service, all in one transaction. Authority flows down: a tenant-admin's grant is carved out of the
parent's quota and refused past it, and a refused step leaves nothing created."""

from __future__ import annotations

import html as html_lib
import re
from decimal import Decimal

import pytest

from gpuplatform.audit.models import AuditEvent
from quotas.models import Budget, Queue, Quota
from tenants.models import Membership, Tenant
from tests.quotas.conftest import GPU, make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(cast):
    """h100 (16 cards); vision and nlp hold 4 each; research, their parent, holds 6 more to hand down."""
    made = make_catalog(cast)
    Quota.objects.create(tenant=cast.research, flavor=made.flavor, resource=GPU, nominal=6)
    return made


def form(**extra: str) -> dict[str, str]:
    data = {
        "slug": "speech",
        "display_name": "Speech",
        "cost_centre": "",
        "namespaces": "",
        "queue_name": "",
        "queue_strategy": "BestEffortFIFO",
        "budget_ge_hours": "",
        "budget_flavor": "",
        **{f"member_{i}_{k}": v for i in range(3) for k, v in (("username", ""), ("role", "member"))},
    }
    data.update(extra)
    return data


def quota_field(html: str, flavor: str) -> str:
    return re.search(rf'<tr data-flavor="{flavor}">.*?name="(quota_\d+)"', html, re.S).group(1)


def test_the_tenant_page_offers_onboarding_to_its_admins_only(cast, client, catalog):
    client.force_login(cast.rita)
    assert f"/onboarding/{cast.research.pk}/" in client.get(f"/tenants/{cast.research.pk}/").content.decode()
    client.force_login(cast.dana)  # a member of vision manages nothing
    assert "/onboarding/" not in client.get(f"/tenants/{cast.vision.pk}/").content.decode()
    response = client.get(f"/onboarding/{cast.vision.pk}/")
    assert response.status_code == 403 and b"onboarding-form" not in response.content


def test_the_form_shows_what_the_parent_still_has_to_give(cast, client, catalog):
    client.force_login(cast.rita)

    html = client.get(f"/onboarding/{cast.research.pk}/").content.decode()

    row = re.search(r'<tr data-flavor="h100">(.*?)</tr>', html, re.S).group(1)
    assert re.search(r'data-testid="parent-has">6<', row)


def test_a_tenant_admin_onboards_a_team_in_one_form(cast, client, catalog):
    client.force_login(cast.rita)
    field = quota_field(client.get(f"/onboarding/{cast.research.pk}/").content.decode(), "h100")

    response = client.post(
        f"/onboarding/{cast.research.pk}/",
        form(
            **{field: "4"},
            queue_name="default",
            budget_ge_hours="100",
            member_0_username="dana",
            member_0_role="tenant-admin",
            member_1_username="victor",
            member_1_role="viewer",
        ),
        follow=True,
    )

    speech = Tenant.objects.get(slug="speech")
    assert speech.parent_id == cast.research.pk
    # 4 carved out of research's 6: research keeps 2, speech holds 4
    assert Quota.objects.get(tenant=speech).nominal == 4
    assert Quota.objects.get(tenant=cast.research).nominal == 2
    assert Queue.objects.get(tenant=speech).name == "default"
    budget = Budget.objects.get(tenant=speech)
    assert (budget.limit_ge_hours, budget.hard, budget.flavor_id) == (Decimal(100), False, None)
    assert dict(Membership.objects.filter(tenant=speech).values_list("user__username", "role")) == {
        "dana": "tenant-admin",
        "victor": "viewer",
    }
    # and the team's own page says so
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/tenants/{speech.pk}/"
    assert "Onboarded Speech under Research: 1 quota(s), queue default, a budget, 2 member(s)." in html


def test_a_tenant_admin_cannot_grant_a_child_more_than_it_was_given(cast, client, catalog):
    # alice administers vision, which holds 4 h100: she cannot give a child 5
    client.force_login(cast.alice)
    field = quota_field(client.get(f"/onboarding/{cast.vision.pk}/").content.decode(), "h100")
    events = AuditEvent.objects.count()

    response = client.post(
        f"/onboarding/{cast.vision.pk}/",
        form(
            slug="vision-cv",
            display_name="CV",
            **{field: "5"},
            queue_name="default",
            member_0_username="dana",
        ),
    )

    assert response.status_code == 400
    html = response.content.decode()
    error = re.search(r'data-testid="error-h100">(.*?)</small>', html, re.S).group(1)
    assert "the parent holds 4 of nvidia.com/gpu on this flavor, and 5 more was asked for" in error
    assert "Nothing was created." in html
    # nothing was: no tenant, no queue, no membership, vision still holds 4, no audit event
    assert not Tenant.objects.filter(slug="vision-cv").exists()
    assert Quota.objects.get(tenant=cast.vision).nominal == 4
    assert not Queue.objects.filter(name="default", tenant__slug="vision-cv").exists()
    assert AuditEvent.objects.count() == events


def test_a_refused_last_step_undoes_the_earlier_ones(cast, client, catalog):
    client.force_login(cast.pat)
    field = quota_field(client.get(f"/onboarding/{cast.research.pk}/").content.decode(), "h100")

    response = client.post(
        f"/onboarding/{cast.research.pk}/",
        form(**{field: "2"}, queue_name="default", member_0_username="nobody"),
    )

    assert response.status_code == 400
    error = re.search(r'data-testid="error-member_0_username">(.*?)</small>', response.content.decode(), re.S)
    assert "No active user named 'nobody'." in html_lib.unescape(error.group(1))
    assert not Tenant.objects.filter(slug="speech").exists()
    assert Quota.objects.get(tenant=cast.research).nominal == 6


def test_a_tenant_admin_assigns_no_namespace_outside_a_delegated_prefix(cast, client, catalog):
    client.force_login(cast.rita)

    response = client.post(f"/onboarding/{cast.research.pk}/", form(namespaces="team-speech"))

    assert response.status_code == 400
    error = re.search(r'data-testid="error-namespaces">(.*?)</small>', response.content.decode(), re.S)
    assert "Only platform-admins assign namespaces here" in error.group(1)
    assert not Tenant.objects.filter(slug="speech").exists()
