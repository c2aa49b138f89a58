"""Tenancy on the web UI's pages, as tests/isolation/test_isolation.py holds it on the API: every named
page is declared here, or the suite fails naming it. A page about one object answers 404 to alice
(tenant-admin of vision) and charlie (no tenant) for another tenant's object, on GET and POST, and
leaves it unchanged; a page listing things never shows another tenant's marker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse

from gpuplatform.accounts.models import ApiToken
from metering.models import Credit, Statement
from tenants.models import Membership
from tests.inventory import factories as inv
from tests.isolation.routes import ui_routes
from tests.metering import factories as met
from tests.policies import factories as pol
from tests.policies_agents import factories as ag
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

Kwargs = Callable[[Any], dict[str, Any]]
CATALOGUE_FOREIGN: dict[str, Callable[[Any], Any]] = {
    "flavors": lambda cast: adm.flavor(tenant=cast.nlp),
    "priority-classes": lambda cast: adm.priority_class(tenant=cast.nlp),
    "quotas": lambda cast: adm.quota(tenant=cast.nlp),
    "budgets": lambda cast: adm.budget(tenant=cast.nlp),
    "queues": lambda cast: adm.queue(tenant=cast.nlp),
}


def decision(verdict: str) -> Kwargs:
    return lambda cast: {"request_id": adm.capacity_request(tenant=cast.nlp).pk, "verdict": verdict}


def workload_decision(verdict: str) -> Kwargs:
    return lambda cast: {
        "check_id": adm.workload_check(tenant=cast.nlp, namespace="team-nlp").pk,
        "verdict": verdict,
    }


def catalogue_row(kind: str, make: Callable[[Any], Any]) -> Kwargs:
    return lambda cast: {"kind": kind, "pk": make(cast).pk}


def rollout_control(control: str) -> Kwargs:
    return lambda cast: {"rollout_id": ag.rollout().pk, "control": control}


def _job_file(fmt: str) -> Kwargs:
    return lambda cast: {"job_id": met.report_job().pk, "fmt": fmt}


# Pages about one object: route name -> the path arguments naming another tenant's object(s).
FOREIGN_PAGES: dict[str, list[Kwargs]] = {
    "tenant-detail": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "tenant-edit": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "tenant-delete": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "tenant-dashboard": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "membership-add": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "team-onboard": [lambda cast: {"tenant_id": cast.nlp.pk}],
    "membership-edit": [
        lambda cast: {"membership_id": Membership.objects.get(tenant=cast.nlp, user=cast.bob).pk}
    ],
    "membership-remove": [
        lambda cast: {"membership_id": Membership.objects.get(tenant=cast.nlp, user=cast.bob).pk}
    ],
    "token-revoke": [lambda cast: {"token_id": ApiToken.objects.filter(user=cast.bob).first().pk}],
    # A platform object: its one action (the enforcement backend) is no one else's to take.
    "inventory-cluster-enforcement": [lambda cast: {"cluster_id": inv.cluster().pk}],
    "inventory-pool": [lambda cast: {"pool_id": inv.pool("nlp-only", tenant=cast.nlp).pk}],
    "pool-dashboard": [lambda cast: {"pool_id": inv.pool("nlp-only", tenant=cast.nlp).pk}],
    "inventory-node": [lambda cast: {"node_id": inv.node().pk}],
    "queues-request": [lambda cast: {"request_id": adm.capacity_request(tenant=cast.nlp).pk}],
    "queues-decide": [decision(verdict) for verdict in ("approve", "reject")],
    "queues-request-cancel": [lambda cast: {"request_id": adm.capacity_request(tenant=cast.nlp).pk}],
    "queues-request-release": [lambda cast: {"request_id": adm.capacity_request(tenant=cast.nlp).pk}],
    "queues-workload": [
        lambda cast: {"check_id": adm.workload_check(tenant=cast.nlp, namespace="team-nlp").pk}
    ],
    "queues-workload-decide": [workload_decision(verdict) for verdict in ("approve", "reject")],
    "catalogue-edit": [catalogue_row(kind, make) for kind, make in CATALOGUE_FOREIGN.items()],
    "catalogue-delete": [catalogue_row(kind, make) for kind, make in CATALOGUE_FOREIGN.items()],
    # Metering's periods and report jobs carry every tenant's totals: platform objects, a 404 to tenants.
    "metering-period": [lambda cast: {"period_id": met.period().pk}],
    "metering-period-close": [lambda cast: {"period_id": met.period().pk}],
    "metering-period-start-closing": [lambda cast: {"period_id": met.period().pk}],
    "metering-job-create": [lambda cast: {"period_id": met.period().pk}],
    "metering-period-exchange-rate": [lambda cast: {"period_id": met.period().pk}],
    "metering-job-progress": [lambda cast: {"job_id": met.report_job().pk}],
    "metering-job-download": [_job_file(fmt) for fmt in ("csv", "xlsx", "focus")],
    # A statement is its tenant's: another tenant's, as page or PDF, is a 404.
    "metering-statement": [lambda cast: {"statement_id": met.statement(tenant=cast.nlp).pk}],
    "metering-statement-pdf": [lambda cast: {"statement_id": met.statement(tenant=cast.nlp).pk}],
    # Policies: a pool dedicated to nlp, its revisions; rollouts and SLOs are platform objects.
    "policies-pool": [lambda cast: {"pool_id": inv.pool("nlp-only", tenant=cast.nlp).pk}],
    "policies-revisions": [lambda cast: {"pool_id": inv.pool("nlp-only", tenant=cast.nlp).pk}],
    "policies-diff": [lambda cast: {"revision_id": pol.revision(inv.pool("nlp-only", tenant=cast.nlp)).pk}],
    "policy-rollout": [lambda cast: {"rollout_id": ag.rollout().pk}],
    "policy-rollout-control": [rollout_control(c) for c in ("pause", "resume", "abort", "rollback")],
    "policy-rollout-start": [lambda cast: {"pool_id": inv.pool("nlp-only", tenant=cast.nlp).pk}],
    "slo-detail": [lambda cast: {"slo_id": met.slo().pk}],
    "slo-edit": [lambda cast: {"slo_id": met.slo().pk}],
    "slo-delete": [lambda cast: {"slo_id": met.slo().pk}],
    "slo-receiver-edit": [lambda cast: {"receiver_id": met.alert_receiver().pk}],
    "slo-receiver-delete": [lambda cast: {"receiver_id": met.alert_receiver().pk}],
    # Prices are finance's and platform-admins': the card of a flavor dedicated to nlp.
    "metering-rate-card-edit": [lambda cast: {"card_id": met.rate_card(tenant=cast.nlp).pk}],
    "metering-rate-card-end": [lambda cast: {"card_id": met.rate_card(tenant=cast.nlp).pk}],
}
# Endpoints that are not pages and answer anyone but a platform-admin (or a token) with a refusal.
REFUSING: dict[str, int] = {"metrics": 401}

# Pages listing things: route name -> (path arguments, what must not show: another tenant's marks).
NLP_MARKS = ["team-nlp", "nlp-only", "urgent-nlp", "only-nlp"]
LIST_PAGES: dict[str, list[dict[str, Any]]] = {
    "overview": [{}],
    "tenant-tree": [{}],
    "tenant-create": [{}],
    "token-list": [{}],
    "audit-log": [{}],
    "inventory": [{}],
    "inventory-fragmentation": [{}],
    "inventory-allocations": [{}],
    "queues": [{}],
    "queues-quotas": [{}],
    "queues-oversubscription": [{}],
    "queues-request-new": [{}],
    "catalogue": [{}],
    "catalogue-list": [{"kind": kind} for kind in CATALOGUE_FOREIGN],
    "catalogue-create": [{"kind": kind} for kind in CATALOGUE_FOREIGN],
    "metering-usage": [{}],
    "metering-rate-cards": [{}],
    "metering-periods": [{}],
    "metering-statements": [{}],
    "metering-credit-new": [{}],
    "metering-cost-model": [{}],
    "policies": [{}],
    "policies-admission": [{}],
    "policy-rollouts": [{}],
    "slo-list": [{}],
    "slo-create": [{}],
    "slo-receivers": [{}],
    "slo-receiver-create": [{}],
}


def plant(cast) -> None:
    """nlp's objects of every kind, marked so a leak shows by name."""
    for make in CATALOGUE_FOREIGN.values():
        make(cast)
    adm.capacity_request(tenant=cast.nlp)
    inv.pool("nlp-only", tenant=cast.nlp)
    inv.allocation(tenant=cast.nlp, namespace="team-nlp", name="nlp-pod")
    Statement.objects.filter(pk=met.statement(tenant=cast.nlp).pk).update(tenant_name="only-nlp statement")
    Credit.objects.filter(pk=met.credit(tenant=cast.nlp).pk).update(reason="only-nlp goodwill")


def test_every_ui_page_is_declared():
    names = {route.name for route in ui_routes()}
    undeclared = names - set(FOREIGN_PAGES) - set(LIST_PAGES) - set(REFUSING)
    assert undeclared == set(), f"declare these pages in {__name__}: {sorted(undeclared)}"
    with_params = {route.name for route in ui_routes() if route.params} - {
        "catalogue-list",
        "catalogue-create",
    }
    assert with_params <= set(FOREIGN_PAGES)


@pytest.mark.parametrize("viewer", ["alice", "charlie", "dana"])
def test_endpoints_for_the_platform_refuse_everyone_else(cast, client, viewer):
    client.force_login(getattr(cast, viewer))
    for name, status in REFUSING.items():
        response = client.get(reverse(name))
        assert response.status_code == status, name
        assert b"nlp" not in response.content


def _snapshot(obj: Any) -> Any:
    return type(obj)._default_manager.filter(pk=obj.pk).values().first()


@pytest.mark.parametrize("viewer", ["alice", "charlie"])
def test_no_page_shows_or_changes_another_tenants_object(cast, client, viewer):
    plant(cast)
    client.force_login(getattr(cast, viewer))
    violations = []
    for name, argument_sets in FOREIGN_PAGES.items():
        for arguments in argument_sets:
            kwargs = arguments(cast)
            url = reverse(name, kwargs=kwargs)
            for method in ("get", "post"):
                status = getattr(client, method)(url, {"nominal": 0, "name": "hijacked"}).status_code
                if status not in (404, 405):
                    violations.append(f"{viewer}: {method.upper()} {url} answered {status}")
    assert violations == []
    # nothing planted changed: the catalogue rows are still nlp's as made
    assert adm.quota(tenant=cast.nlp).nominal == 4
    assert adm.queue(tenant=cast.nlp).name == "default"
    assert met.slo().name == "gpus" and met.alert_receiver().name == "oncall"
    assert met.rate_card(tenant=cast.nlp).effective_to is None


@pytest.mark.parametrize("viewer", ["alice", "charlie", "dana"])
def test_no_list_page_shows_another_tenants_marks(cast, client, viewer):
    plant(cast)
    client.force_login(getattr(cast, viewer))
    violations = []
    for name, argument_sets in LIST_PAGES.items():
        for kwargs in argument_sets:
            url = reverse(name, kwargs=kwargs)
            response = client.get(url, follow=True)
            html = response.content.decode()
            if response.status_code not in (200, 404):
                violations.append(f"{viewer}: GET {url} answered {response.status_code}")
            violations.extend(f"{viewer}: GET {url} shows {mark}" for mark in NLP_MARKS if mark in html)
    assert violations == []


def test_the_marks_are_real_a_platform_admin_sees_each_somewhere(cast, client):
    plant(cast)
    client.force_login(cast.pat)
    pages = "".join(
        client.get(reverse(name, kwargs=kwargs), follow=True).content.decode()
        for name, argument_sets in LIST_PAGES.items()
        for kwargs in argument_sets
    )
    assert [mark for mark in NLP_MARKS if mark not in pages] == []
