"""The web UI's list pages cost the same number of queries whatever the rows (no N+1), as
tests/core/test_query_counts.py holds the API's lists: each page is measured with a few rows and with
many more, for a platform-admin and for a tenant-admin. A page declared here and missing from the
URL configuration fails, and so does a UI page in neither this table nor NOT_LISTS."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from quotas.models import CapacityRequest, PriorityClass, Quota
from tenants.services import create_tenant
from tests.inventory import factories as inv
from tests.isolation.routes import ui_routes
from tests.metering import factories as met
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"

# Pages that list rows: name -> a function(cast) giving the URL.
LIST_PAGES = {
    "overview": lambda cast: "/",
    "catalogue-list/flavors": lambda cast: "/catalogue/flavors/",
    "catalogue-list/priority-classes": lambda cast: "/catalogue/priority-classes/",
    "catalogue-list/quotas": lambda cast: "/catalogue/quotas/",
    "catalogue-list/budgets": lambda cast: "/catalogue/budgets/",
    "catalogue-list/queues": lambda cast: "/catalogue/queues/",
    "tenant-detail": lambda cast: f"/tenants/{cast.research.pk}/",
    "inventory-node": lambda cast: f"/inventory/nodes/{inv.node().pk}/",
    # The dashboards: research's requests (admitted by grow), budget and usage; the measured node's
    # pool, whose cards grow each round (the heatmap reads them in one query).
    "tenant-dashboard": lambda cast: f"/tenants/{cast.research.pk}/dashboard/",
    "pool-dashboard": lambda cast: f"/inventory/pools/{inv.node().pool_id}/dashboard/",
}
# UI pages this table does not measure yet, each with its reason (a page added later lands here or
# in LIST_PAGES; the test below fails on one in neither).
NOT_LISTS = {
    "tenant-tree": "measured by the tenant tests (tree of every visible tenant in one query)",
    "tenant-create": "a form",
    "team-onboard": "a form: one query for the flavors it offers, one for the parent's quotas",
    "tenant-edit": "a form",
    "tenant-delete": "POST only",
    "membership-add": "POST only",
    "membership-edit": "POST only",
    "membership-remove": "POST only",
    "token-list": "the caller's own tokens",
    "token-revoke": "POST only",
    "audit-log": "paginated audit rows, one query a page, one per kind of object named",
    "inventory": "clusters and pools",
    "inventory-cluster-enforcement": "POST only",
    "inventory-pool": "one pool",
    "inventory-fragmentation": "per pool by design (see KNOWN_PER_ROW)",
    "inventory-allocations": "paginated, select_related",
    "queues": "queue page (its own tests)",
    "queues-quotas": "quota bars (its own tests)",
    "queues-oversubscription": "platform table",
    "queues-request-new": "a form",
    "queues-request": "one request",
    "queues-decide": "POST only",
    "queues-request-cancel": "POST only",
    "queues-request-release": "POST only",
    "queues-workload": "one Kueue workload's admission check",
    "queues-workload-decide": "POST only",
    "catalogue": "a redirect",
    "catalogue-create": "a form",
    "catalogue-edit": "a form",
    "catalogue-delete": "POST only",
    "metering-usage": "per-day sums on the database, one query per chart",
    "metering-rate-cards": "paginated, select_related",
    "metering-periods": "paginated periods, one query a page",
    "metering-period": "one period: its lines paginated",
    "metering-period-close": "POST only",
    "metering-period-start-closing": "POST only",
    "metering-job-create": "POST only",
    "metering-period-exchange-rate": "POST only",
    "metering-job-progress": "one job",
    "metering-job-download": "a file",
    "metering-statements": "paginated statements (select_related period), the newest twenty credits",
    "metering-statement": "one statement: its period's lines of one tenant or cost centre",
    "metering-statement-pdf": "a file",
    "metering-credit-new": "a form",
    "metering-cost-model": "a form and the newest 25 cost models (select_related rate card)",
    "metrics": "not a page (tests/core/test_metrics.py)",
    "policies": "one row per pool with its policy (select_related); the detected modes in two queries",
    "policies-pool": "one pool's form",
    "policies-revisions": "one pool's revisions",
    "policies-diff": "two revisions",
    "policies-admission": "paginated rules with their M2M prefetched; the newest ten applies",
    "policy-rollouts": "paginated rollouts",
    "policy-rollout": "one rollout: its nodes",
    "policy-rollout-control": "POST only",
    "policy-rollout-start": "POST only",
    "slo-list": "one samples query per SLO on the page (25 at most): where each stands",
    "slo-detail": "one SLO",
    "slo-create": "a form",
    "slo-edit": "a form",
    "slo-delete": "POST only",
    "slo-receivers": "paginated receivers, their SLOs prefetched (one query a page)",
    "slo-receiver-create": "a form",
    "slo-receiver-edit": "a form",
    "slo-receiver-delete": "POST only",
    "metering-rate-card-edit": "a form",
    "metering-rate-card-end": "a form",
}


def grow(cast, start: int, stop: int) -> None:
    """Rows for every page: teams under research with a quota, budget, queue and request each;
    flavors, classes, pools with nodes; research's own quotas, requests and holdings; a billing
    period's usage and report lines."""
    node = inv.node()
    for n in range(start, stop):
        team = create_tenant(
            actor=cast.pat, slug=f"team-{n}", display_name=f"Team {n}", parent_id=cast.research.pk
        )
        flavor = adm.flavor(name=f"flavor-{n}")
        adm.quota(tenant=team)
        adm.budget(tenant=team)
        adm.capacity_request(tenant=team)
        PriorityClass.objects.create(name=f"class-{n}", value=n)
        Quota.objects.create(tenant=cast.research, flavor=flavor, resource=GPU, nominal=1)
        adm.capacity_request(tenant=cast.research)
        inv.allocation(tenant=cast.research, namespace="team-research", name=f"pod-{n}")
        inv.gpu(on=inv.node(f"node-{n}", in_pool=inv.pool(f"pool-{n}")))
        # the measured node gains a card and a unit each round
        gpu = node.gpus.create(index=n + 1, product=node.product, model_key="H100-80GB")
        node.units.create(
            cluster=node.cluster,
            gpu=gpu,
            key=f"node/{node.name}/gpu/{n + 1}",
            kind="whole_gpu",
            resource_name=GPU,
            ge_each=Decimal(1),
            model_key="H100-80GB",
        )
    met.usage(tenant=cast.research)
    met.report_line(tenant=cast.research)
    adm.budget(tenant=cast.research)
    # research's requests admitted half an hour ago: the tenant dashboard's holds and waits read them
    half_hour_ago = timezone.now() - timedelta(minutes=30)
    CapacityRequest.objects.filter(tenant=cast.research, admitted_at__isnull=True).update(
        state="admitted", admitted_at=half_hour_ago
    )


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured)


def test_every_ui_page_is_measured_or_says_why_not():
    names = {route.name for route in ui_routes()}
    measured = {key.split("/")[0] for key in LIST_PAGES}
    assert names - measured - set(NOT_LISTS) == set()
    assert (measured | set(NOT_LISTS)) - names == set()


@pytest.mark.parametrize("viewer", ["pat", "rita"])
def test_list_pages_cost_the_same_queries_for_few_and_many_rows(cast, client, viewer):
    grow(cast, 0, 2)
    client.force_login(getattr(cast, viewer))
    few = {
        name: queries(client, url(cast))
        for name, url in LIST_PAGES.items()
        if viewer == "pat" or name != "inventory-node"
    }
    grow(cast, 2, 14)
    many = {name: queries(client, url(cast)) for name, url in LIST_PAGES.items() if name in few}
    assert {name: (few[name], many[name]) for name in few if few[name] != many[name]} == {}
