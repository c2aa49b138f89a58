"""Every API list costs the same number of queries whatever the page size (no N+1), for a platform-admin
and for a tenant-admin: every list route is measured with more rows than a small page holds, or the
test fails saying which route had too few (a route a viewer may not see at all is listed as such)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gpuplatform.accounts.tokens import issue_api_token
from metering.models import ExchangeRate, RateCard, ReportJob, ReportLine, UsageHour
from metering.services.periods import ensure_period
from quotas.models import PriorityClass
from tenants.services import add_membership, create_tenant
from tests.fixtures.people import make_user
from tests.inventory import factories as inv
from tests.isolation.routes import api_routes
from tests.metering import factories as met
from tests.policies import factories as pol
from tests.policies_agents import factories as ag
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db


# 25 ISO 4217 codes, one exchange rate each in the crowd's period.
CURRENCIES = [
    "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "NZD",
    "SGD", "HKD", "KRW", "INR", "BRL", "MXN", "ZAR", "TRY", "ILS", "THB", "MYR", "PHP",
]  # fmt: skip


@pytest.fixture
def crowd(cast):
    """Enough rows that a page of 2 and a page of 25 differ on every list."""
    for n in range(25):
        team = create_tenant(
            actor=cast.pat,
            slug=f"team-{n}",
            display_name=f"Team {n}",
            parent_id=cast.research.pk,
            namespaces=[("", f"ns-{n}")],
        )
        person = make_user(f"person-{n}")
        add_membership(actor=cast.pat, tenant_id=team.pk, username=person.username, role="member")
        issue_api_token(actor=cast.pat, name=f"token-{n}", scopes=["read"])
        # Admission rows on every list: a quota, budget, queue and request per team, flavors, classes.
        adm.capacity_request(tenant=team)
        adm.quota(tenant=team)
        adm.budget(tenant=team)
        adm.flavor(name=f"flavor-{n}")
        PriorityClass.objects.create(name=f"class-{n}", value=n)
        issue_api_token(actor=cast.rita, name=f"rita-{n}", scopes=["read"])
        # Inventory on every list: a cluster, a pool on it dedicated to the team with a node and a GPU
        # in it, and the team's claim, allocation and Kueue Workload.
        pool = inv.pool(f"pool-{n}", tenant=team, on=inv.cluster(f"cluster-{n}"))
        inv.gpu(on=inv.node(f"node-{n}", in_pool=pool))
        inv.claim(tenant=team, namespace=f"ns-{n}")
        inv.allocation(tenant=team, namespace=f"ns-{n}")
        inv.workload(tenant=team, namespace=f"ns-{n}", name=f"job-{n}")
        adm.workload_check(tenant=team, namespace=f"ns-{n}", name=f"job-{n}")
        # Policies on every list: the pool's sharing policy and a revision, the team's admission rule.
        pol.sharing_policy(pool)
        pol.revision(pool)
        pol.admission_rule(tenant=team, pool=pool)
        pol.admission_apply(inv.cluster(f"cluster-{n}"))
        # Metering on every list: the team's usage hour, a rate card, a report line, a period a month.
        seed_metering(team, n)
        # Agents and rollouts on every list: a bootstrap token, an agent, a rollout with its node.
        ag.bootstrap_token(f"rack-{n}")
        ag.agent(f"agent-node-{n}")
        ag.rollout(f"rollout-pool-{n}")
    return cast


def seed_metering(team, n: int) -> None:
    period = ensure_period(at=met.HOUR)
    UsageHour.objects.create(
        cluster=inv.cluster(f"cluster-{n}"),
        share_key=f"share-{n}",
        meter="allocated_ge_hours",
        hour=met.HOUR,
        period=period,
        tenant=team,
        quantity=Decimal(1),
        card_hours=Decimal(1),
        attribution="allocation",
        source="ledger",
    )
    RateCard.objects.create(
        gpu_model=f"model-{n}", currency="USD", price_per_ge_hour=Decimal("2.5"), effective_from=met.HOUR
    )
    ReportLine.objects.create(
        period=period,
        line_no=n + 1,
        kind="charge",
        tenant=team,
        tenant_slug=team.slug,
        tenant_path=team.path,
        ge_hours=Decimal(1),
        card_hours=Decimal(1),
        amount=Decimal("2.50"),
        currency="USD",
    )
    ensure_period(at=datetime(2023 + n // 12, n % 12 + 1, 5, tzinfo=UTC))
    ReportJob.objects.create(period=period)
    met.alert_delivery(f"slo-{n}")  # an SLO, its alert, a receiver and a delivery
    met.metrics_source(f"cluster-{n}")
    met.statement(tenant=team, number=f"2025-03-{n:04d}")
    met.credit(tenant=team, reason=f"goodwill {n}")
    met.cost_model(f"model-{n}")
    ExchangeRate.objects.create(period=period, currency=CURRENCIES[n], rate=Decimal("1.5"), source="test")


def queries_for(client, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured), len(response.json()["results"])


# Platform objects a tenant-admin never lists (tests/isolation): for rita these must be empty.
PLATFORM_ONLY = {
    "cluster",
    "node",
    "gpu",
    "audit-event",
    "billing-period",
    "report-job",
    "slo",
    "slo-alert",
    "alert-receiver",
    "alert-delivery",
    "metrics-source",
    "sharing-policy",
    "policy-revision",
    "admission-apply",
    "agent-bootstrap-token",
    "agent",
    "rollout",
    "cost-model",
    "exchange-rate",
}
# Streamed files, not pages of JSON: read in chunks by one cursor (tests/metering/test_exports.py).
NOT_PAGES = {"reports/export"}
# Known per-row costs, each with its reason; the test fails once one is fixed, to drop it from here.
KNOWN_PER_ROW: dict[str, str] = {}


@pytest.mark.parametrize("viewer", ["pat", "rita"])
def test_list_query_count_is_constant_in_page_size(crowd, api, viewer):
    client = api(getattr(crowd, viewer))
    client.get("/api/v1/me/")  # the token's first use records last_used_at: one write, not per page
    measured, problems = [], []
    for route in api_routes():
        if route.is_detail or "GET" not in route.methods or route.basename in {"me", *NOT_PAGES}:
            continue
        small, small_rows = queries_for(client, route.url() + "?page_size=2")
        large, large_rows = queries_for(client, route.url() + "?page_size=25")
        if viewer == "rita" and route.basename in PLATFORM_ONLY:
            assert large_rows == 0, f"{route.template}: rita lists {large_rows} platform objects"
            continue
        if large_rows <= small_rows:
            problems.append(f"{route.template}: {large_rows} rows for {viewer}, need more than 2 to tell")
        elif (small != large) != (route.basename in KNOWN_PER_ROW):
            problems.append(f"{route.template}: {small} queries for 2 rows, {large} for {large_rows}")
        measured.append(route.basename)
    assert problems == [], KNOWN_PER_ROW
    assert {"node-pool", "resource-claim", "allocation", "fragmentation", "quota"} <= set(measured)
    assert (set(measured) >= PLATFORM_ONLY) is (viewer == "pat")


def _cost_queries(client, tenant) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(f"/api/v1/costs/{tenant.pk}/").status_code == 200
    return len(captured)


def test_a_tenants_costs_cost_the_same_queries_whatever_its_teams_and_requests(cast, api):
    """The detail-only route /api/v1/costs/<tenant>/: its children, lines and admitted requests are
    read in grouped queries, not one per row."""
    rita = api(cast.rita)
    rita.get("/api/v1/me/")
    few = _cost_queries(rita, cast.research)
    for n in range(6):
        team = create_tenant(
            actor=cast.pat, slug=f"cost-team-{n}", display_name=f"T{n}", parent_id=cast.research.pk
        )
        admitted = adm.capacity_request(tenant=team)
        admitted.state, admitted.admitted_at = "active", datetime.now(UTC)
        admitted.save(update_fields=["state", "admitted_at"])
        met.usage(tenant=team)
    assert _cost_queries(rita, cast.research) == few
