"""Tenancy up and down the tree: the sweep plants foreign objects in an ancestor, a cousin and a child
of another branch, and its viewers include mo, tenant-admin low in the tree (speech, under nlp) and a
plain member higher up (research).

Tree:  acme ─┬─ research ─┬─ vision  (alice: tenant-admin)
             │            └─ nlp ─── speech   (mo: tenant-admin)
             └─ platform ─── infra
       research: rita tenant-admin, mo a plain member.

What each viewer may see: mo sees speech (its subtree) and research (its own membership), nothing else:
not nlp (speech's parent), not acme, not vision (a child of another branch), not infra (a cousin);
but costs roll up, so as research's member it sees the usage and report lines below research.
rita sees research and below, never acme (its parent) nor platform and infra (the other branch).
alice sees vision only: never acme, speech (another branch's child) nor infra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.throttling import SimpleRateThrottle

from gpuplatform.accounts.models import ApiToken
from gpuplatform.audit.models import AuditEvent
from metering.models import ReportLine, UsageHour
from tenants.models import Membership, Tenant
from tenants.services import add_membership, create_tenant
from tests.fixtures.people import make_user
from tests.inventory import factories as inv
from tests.isolation.checker import check_isolation
from tests.isolation.test_isolation import SELF_ROUTES
from tests.metering import factories as met
from tests.policies import factories as pol
from tests.policies_agents import factories as ag
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(cast):
    """The cast's tree grown by speech (under nlp), platform and infra (under acme); mo is tenant-admin
    of speech and a plain member of research; zed (in no sweep) is a member of every new tenant, so
    each has a membership that must stay hidden."""
    pat = cast.pat
    speech = create_tenant(
        actor=pat,
        slug="speech",
        display_name="Speech",
        parent_id=cast.nlp.pk,
        namespaces=[("", "team-speech")],
    )
    platform = create_tenant(actor=pat, slug="platform", display_name="Platform", parent_id=cast.acme.pk)
    infra = create_tenant(
        actor=pat, slug="infra", display_name="Infra", parent_id=platform.pk, namespaces=[("", "team-infra")]
    )
    mo, zed = make_user("mo"), make_user("zed")
    add_membership(actor=pat, tenant_id=speech.pk, username="mo", role="tenant-admin")
    add_membership(actor=pat, tenant_id=cast.research.pk, username="mo", role="member")
    for tenant in (cast.acme, cast.research, cast.nlp, cast.vision, speech, platform, infra):
        add_membership(actor=pat, tenant_id=tenant.pk, username="zed", role="member")
    return {"speech": speech, "platform": platform, "infra": infra, "mo": mo, "zed": zed}


@pytest.fixture(autouse=True)
def _sweeps_are_not_throttled(monkeypatch):
    # A sweep sends every route's every method on every foreign object from one token, past the
    # per-token rate within the minute; throttling has its own tests (tests/security).
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"token": "1000000/minute", "user": "1000000/minute"}
    )


def owned_by(tenant: Tenant, catalogue_owner: Tenant | None = None) -> dict[str, Callable[[Any], Any]]:
    """For every API route, an object that belongs to ``tenant`` (or, for platform objects, that no
    tenant user may see). Flavors and priority classes dedicated to an ancestor serve the subtree below
    it (quotas/scoping.py), so for an ancestor those two are dedicated to ``catalogue_owner`` instead."""
    namespace = f"team-{tenant.slug}"
    catalogue_owner = catalogue_owner or tenant
    return {
        "tenant": lambda cast: tenant,
        "membership": lambda cast: Membership.objects.get(tenant=tenant, user__username="zed"),
        "token": lambda cast: ApiToken.objects.filter(user=cast.bob).first(),
        "audit-event": lambda cast: AuditEvent.objects.filter(tenant_id=tenant.pk).first(),
        "cluster": lambda cast: inv.cluster(),
        "node-pool": lambda cast: inv.pool(f"only-{tenant.slug}", tenant=tenant),
        "node": lambda cast: inv.node(),
        "gpu": lambda cast: inv.gpu(),
        "resource-claim": lambda cast: inv.claim(tenant=tenant, namespace=namespace),
        "allocation": lambda cast: inv.allocation(tenant=tenant, namespace=namespace),
        "fragmentation": lambda cast: inv.pool(f"only-{tenant.slug}", tenant=tenant),
        "workload": lambda cast: inv.workload(tenant=tenant, namespace=namespace),
        "flavor": lambda cast: adm.flavor(tenant=catalogue_owner),
        "priority-class": lambda cast: adm.priority_class(tenant=catalogue_owner),
        "quota": lambda cast: adm.quota(tenant=tenant),
        "budget": lambda cast: adm.budget(tenant=tenant),
        "queue": lambda cast: adm.queue(tenant=tenant),
        "capacity-request": lambda cast: adm.capacity_request(tenant=tenant),
        "workload-check": lambda cast: adm.workload_check(tenant=tenant, namespace=namespace),
        "usage": lambda cast: met.usage(tenant=tenant),
        "rate-card": lambda cast: met.rate_card(tenant=catalogue_owner),
        "billing-period": lambda cast: met.period(),
        "report": lambda cast: met.report_line(tenant=tenant),
        "report-job": lambda cast: met.report_job(),
        "slo": lambda cast: met.slo(),
        "slo-alert": lambda cast: met.slo_alert(),
        "alert-receiver": lambda cast: met.alert_receiver(),
        "alert-delivery": lambda cast: met.alert_delivery(),
        "metrics-source": lambda cast: met.metrics_source(),
        "statement": lambda cast: met.statement(tenant=tenant),
        "credit": lambda cast: met.credit(tenant=tenant),
        "cost-model": lambda cast: met.cost_model(),  # a platform object
        "cost": lambda cast: tenant,
        "exchange-rate": lambda cast: met.exchange_rate(),  # a platform object
        "reports/export": lambda cast: met.exported_tenant(tenant=tenant),
        "sharing-policy": lambda cast: pol.sharing_policy(inv.pool(f"only-{tenant.slug}", tenant=tenant)),
        "policy-revision": lambda cast: pol.revision(inv.pool(f"only-{tenant.slug}", tenant=tenant)),
        "admission-rule": lambda cast: pol.admission_rule(tenant=tenant, pool=inv.pool()),
        "admission-apply": lambda cast: pol.admission_apply(),
        "agent-bootstrap-token": lambda cast: ag.bootstrap_token(),
        "agent": lambda cast: ag.agent(),
        "rollout": lambda cast: ag.rollout(),
        **{route: (lambda cast: ag.agent()) for route in ag.AGENT_PROTOCOL_ROUTES},
    }


# Costs roll up the tree (issue 32): every person of a tenant, a plain member too, sees the usage and
# report lines of the tenants below it (metering/scoping.py); the sweep checks them everywhere else.
COST_ROUTES = ("usage", "report", "reports/export", "cost")


def sweep(
    cast,
    api,
    viewer,
    *,
    ancestors: list[Tenant],
    others: list[Tenant],
    cousin: Tenant,
    costs_seen: tuple[Tenant, ...] = (),
) -> list[str]:
    """Violations of ``viewer`` on objects of its ancestors and of other tenants, route by route;
    for ``costs_seen`` (tenants below one the viewer is a member of) the cost routes sweep the
    cousin's objects instead."""
    violations: list[str] = []
    for tenant, catalogue_owner in [*((a, cousin) for a in ancestors), *((o, o) for o in others)]:
        foreign = owned_by(tenant, catalogue_owner)
        if tenant in costs_seen:  # the cost routes' objects are the cousin's there
            foreign |= {route: make for route, make in owned_by(cousin).items() if route in COST_ROUTES}
        found = check_isolation(
            cast=cast,
            viewers={viewer.username: api(viewer)},
            foreign_objects=foreign,
            self_routes=SELF_ROUTES,
        )
        violations += [f"[{tenant.slug}] {v}" for v in found]
    return violations


def test_an_admin_low_and_member_high_sees_nothing_above_beside_or_across(cast, api, tree):
    ancestors, others = [cast.acme, cast.nlp], [cast.vision, tree["infra"], tree["platform"]]
    below_research = (cast.nlp, cast.vision)
    found = sweep(
        cast, api, tree["mo"], ancestors=ancestors, others=others, cousin=tree["infra"],
        costs_seen=below_research,
    )  # fmt: skip
    assert found == []
    # ...and those costs it does see, as a member of research: vision's usage and report line.
    mo = api(tree["mo"])
    line = ReportLine.objects.create(
        period=met.period(), line_no=999, kind="charge", tenant=cast.vision, tenant_slug="vision",
        tenant_path=cast.vision.path, ge_hours=1, card_hours=1, amount=2, currency="USD",
    )  # fmt: skip
    assert mo.get(f"/api/v1/reports/{line.pk}/").status_code == 200
    held = UsageHour.objects.filter(tenant=cast.vision).first() or met.usage(tenant=cast.vision)
    assert mo.get(f"/api/v1/usage/{held.pk}/").status_code == 200
    # what is dedicated to an ancestor serves the subtree below it: mo sees acme's flavor
    dedicated = adm.flavor(tenant=cast.acme)
    assert api(tree["mo"]).get(f"/api/v1/flavors/{dedicated.pk}/").status_code == 200


def test_a_tenant_admin_sees_neither_its_parent_nor_the_other_branch(cast, api, tree):
    others = [tree["platform"], tree["infra"]]
    assert sweep(cast, api, cast.rita, ancestors=[cast.acme], others=others, cousin=tree["infra"]) == []


def test_a_team_admin_sees_no_ancestor_no_cousin_and_no_child_of_another_branch(cast, api, tree):
    others = [tree["speech"], tree["infra"]]
    assert (
        sweep(
            cast, api, cast.alice, ancestors=[cast.acme, cast.research], others=others, cousin=tree["infra"]
        )
        == []
    )


def test_a_plain_member_above_cannot_change_the_tenant_it_sees_there(cast, api, tree):
    # given: mo sees research (a plain member) but administers only speech, below nlp
    mo = api(tree["mo"])
    research = f"/api/v1/tenants/{cast.research.pk}/"
    assert mo.get(research).status_code == 200
    # when / then: renaming research, adding a member to it or a child under it is refused
    assert mo.patch(research, {"display_name": "taken"}, format="json").status_code == 403
    added = mo.post(
        "/api/v1/memberships/",
        {"tenant": str(cast.research.pk), "user": "charlie", "role": "member"},
        format="json",
    )
    assert added.status_code == 403
    child = mo.post(
        "/api/v1/tenants/",
        {"slug": "rogue", "display_name": "Rogue", "parent_id": str(cast.research.pk)},
        format="json",
    )
    assert child.status_code == 403
    cast.research.refresh_from_db()
    assert cast.research.display_name == "Research"
    assert not Membership.objects.filter(tenant=cast.research, user=cast.charlie).exists()
    assert not Tenant.objects.filter(slug="rogue").exists()
    # and what it administers it may change
    speech = f"/api/v1/tenants/{tree['speech'].pk}/"
    assert mo.patch(speech, {"display_name": "Speech & Audio"}, format="json").status_code == 200
