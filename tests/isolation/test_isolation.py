"""Tenancy is sacred: every API route, enumerated from the URL configuration, hides tenant B's
objects from a user of tenant A (404 on detail, absent from lists)."""

from __future__ import annotations

import sys
import types

import pytest
from django.urls import include, path
from rest_framework import mixins, viewsets
from rest_framework.routers import DefaultRouter

from gpuplatform.accounts.models import ApiToken
from gpuplatform.audit.models import AuditEvent
from gpuplatform.urls import urlpatterns as real_urlpatterns
from tenants.api.serializers import TenantSerializer
from tenants.models import Membership, Tenant
from tests.inventory import factories as inv
from tests.isolation.checker import check_isolation
from tests.isolation.routes import api_routes
from tests.metering import factories as met
from tests.policies import factories as pol
from tests.policies_agents import factories as ag
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

# What alice (tenant-admin of vision) and charlie (no tenant) must never see, per route basename.
FOREIGN_OBJECTS = {
    "tenant": lambda cast: cast.nlp,
    "membership": lambda cast: Membership.objects.get(tenant=cast.nlp, user=cast.bob),
    "token": lambda cast: ApiToken.objects.filter(user=cast.bob).first(),
    "audit-event": lambda cast: AuditEvent.objects.filter(tenant_id=cast.nlp.pk).first(),
    # Inventory: clusters, nodes and GPUs are platform objects; pools dedicated to another tenant,
    # and another tenant's claims and allocations, are invisible.
    "cluster": lambda cast: inv.cluster(),
    "node-pool": lambda cast: inv.pool("nlp-only", tenant=cast.nlp),
    "node": lambda cast: inv.node(),
    "gpu": lambda cast: inv.gpu(),
    "resource-claim": lambda cast: inv.claim(tenant=cast.nlp, namespace="team-nlp"),
    "allocation": lambda cast: inv.allocation(tenant=cast.nlp, namespace="team-nlp"),
    "fragmentation": lambda cast: inv.pool("nlp-only", tenant=cast.nlp),
    "workload": lambda cast: inv.workload(tenant=cast.nlp, namespace="team-nlp"),
    # Admission: nlp's quotas, budgets, queues and requests; flavors and classes dedicated to nlp.
    "flavor": lambda cast: adm.flavor(tenant=cast.nlp),
    "priority-class": lambda cast: adm.priority_class(tenant=cast.nlp),
    "quota": lambda cast: adm.quota(tenant=cast.nlp),
    "budget": lambda cast: adm.budget(tenant=cast.nlp),
    "queue": lambda cast: adm.queue(tenant=cast.nlp),
    "capacity-request": lambda cast: adm.capacity_request(tenant=cast.nlp),
    "workload-check": lambda cast: adm.workload_check(tenant=cast.nlp, namespace="team-nlp"),
    # Metering: nlp's usage and report lines, the rate card of a flavor dedicated to nlp; billing
    # periods carry every tenant's totals and are platform objects.
    "usage": lambda cast: met.usage(tenant=cast.nlp),
    "rate-card": lambda cast: met.rate_card(tenant=cast.nlp),
    "billing-period": lambda cast: met.period(),
    "report": lambda cast: met.report_line(tenant=cast.nlp),
    "report-job": lambda cast: met.report_job(),
    "slo": lambda cast: met.slo(),
    "slo-alert": lambda cast: met.slo_alert(),
    "alert-receiver": lambda cast: met.alert_receiver(),
    "alert-delivery": lambda cast: met.alert_delivery(),
    "metrics-source": lambda cast: met.metrics_source(),  # a platform object
    "reports/export": lambda cast: met.exported_tenant(tenant=cast.nlp),
    "statement": lambda cast: met.statement(tenant=cast.nlp),
    "credit": lambda cast: met.credit(tenant=cast.nlp),
    "cost-model": lambda cast: met.cost_model(),  # a platform object
    "cost": lambda cast: cast.nlp,
    "exchange-rate": lambda cast: (
        met.exchange_rate()
    ),  # a platform object  # nlp's month-to-date and forecast: its id is the route's
    # Policies: sharing policies and revisions are platform objects; admission rules belong to their
    # tenant (nlp's rule on a pool everyone shares).
    "sharing-policy": lambda cast: pol.sharing_policy(inv.pool("nlp-only", tenant=cast.nlp)),
    "policy-revision": lambda cast: pol.revision(inv.pool("nlp-only", tenant=cast.nlp)),
    "admission-rule": lambda cast: pol.admission_rule(tenant=cast.nlp, pool=inv.pool()),
    # Applies name every tenant's policies on a cluster: platform objects.
    "admission-apply": lambda cast: pol.admission_apply(),
    # Node agents and rollouts are platform objects. The agent protocol's own routes answer a user
    # 401 (they take an agent credential, which names its node: there is no other node to ask for).
    "agent-bootstrap-token": lambda cast: ag.bootstrap_token(),
    "agent": lambda cast: ag.agent(),
    "rollout": lambda cast: ag.rollout(),
    **{route: (lambda cast: ag.agent()) for route in ag.AGENT_PROTOCOL_ROUTES},
}
# Routes about the caller, checked by their own tests (test_me_shows_only_yourself).
SELF_ROUTES = {"me"}


def viewers(cast, api):
    return {"alice": api(cast.alice), "charlie": api(cast.charlie), "dana": api(cast.dana)}


def test_every_api_route_is_covered():
    basenames = {route.basename for route in api_routes()}
    assert basenames - set(FOREIGN_OBJECTS) - SELF_ROUTES == set()
    assert {"tenant", "membership", "token", "audit-event", "me"} <= basenames


def test_no_route_shows_or_changes_another_tenants_objects(cast, api):
    violations = check_isolation(
        cast=cast, viewers=viewers(cast, api), foreign_objects=FOREIGN_OBJECTS, self_routes=SELF_ROUTES
    )
    assert violations == []


def test_rita_does_not_see_the_other_organisation(cast, api):
    foreign = {**FOREIGN_OBJECTS, "tenant": lambda c: c.globex_ml}
    violations = check_isolation(
        cast=cast, viewers={"rita": api(cast.rita)}, foreign_objects=foreign, self_routes=SELF_ROUTES
    )
    assert [v for v in violations if "tenants/" in v] == []


def test_me_shows_only_yourself(cast, api):
    body = api(cast.alice).get("/api/v1/me/").json()
    assert body["username"] == "alice"
    assert [m["tenant_slug"] for m in body["memberships"]] == ["vision"]
    assert "nlp" not in str(body)


# --- The suite catches a route added without scoping ------------------------------------------


class LeakyTenantViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """What a careless endpoint looks like: a plain DRF viewset over every tenant."""

    queryset = Tenant.objects.all()
    serializer_class = TenantSerializer


def _urlconf_with_leaky_route() -> str:
    router = DefaultRouter()
    router.register("leaky-tenants", LeakyTenantViewSet, basename="leaky-tenant")
    module = types.ModuleType("tests.isolation.leaky_urls")
    module.urlpatterns = [path("api/v1/", include(router.urls)), *real_urlpatterns]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module.__name__


def test_an_unscoped_route_fails_the_suite(cast, api, settings):
    urlconf = _urlconf_with_leaky_route()
    settings.ROOT_URLCONF = urlconf
    # A route nobody registered an isolation fixture for is a violation by itself...
    violations = check_isolation(
        cast=cast,
        viewers=viewers(cast, api),
        foreign_objects=FOREIGN_OBJECTS,
        self_routes=SELF_ROUTES,
        urlconf=urlconf,
    )
    assert any("no isolation fixture for basename 'leaky-tenant'" in v for v in violations)
    # ...and once it has one, the leak itself is caught on list and detail.
    violations = check_isolation(
        cast=cast,
        viewers={"alice": api(cast.alice)},
        foreign_objects={**FOREIGN_OBJECTS, "leaky-tenant": lambda c: c.nlp},
        self_routes=SELF_ROUTES,
        urlconf=urlconf,
    )
    assert "alice: GET api/v1/leaky-tenants/ lists foreign object " + str(cast.nlp.pk) in violations
    assert any(
        v.startswith("alice: GET api/v1/leaky-tenants/<pk>/ on a foreign object answered 200")
        for v in violations
    )
