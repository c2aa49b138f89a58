"""The inventory API: scoping per role, cluster writes for platform-admins with audit, problem+json."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from inventory.crypto import decrypt_text
from inventory.models import Cluster
from tests.helpers import assert_problem, database_state
from tests.inventory import factories as inv
from tests.kubeconfigs import kubeconfig

pytestmark = pytest.mark.django_db

KUBECONFIG = kubeconfig(server="https://10.0.0.1:6443")


def ids(response):
    return {row["id"] for row in response.json()["results"]}


def test_platform_admin_registers_a_cluster_with_an_encrypted_kubeconfig_and_an_audit_event(cast, api):
    response = api(cast.pat).post(
        "/api/v1/clusters/", {"name": "west", "kubeconfig": KUBECONFIG}, format="json"
    )

    assert response.status_code == 201, response.json()
    cluster = Cluster.objects.get(name="west")
    assert cluster.api_endpoint == "https://10.0.0.1:6443"
    assert "secret-token" not in cluster.kubeconfig_encrypted
    stored = yaml.safe_load(decrypt_text(cluster.kubeconfig_encrypted))
    assert stored["users"] == [{"name": "user", "user": {"token": "secret-token"}}]
    event = AuditEvent.objects.get(action="cluster.created", object_id=str(cluster.pk))
    assert event.after["has_kubeconfig"] is True and "secret-token" not in str(event.after)
    assert "kubeconfig" not in response.json()


def test_cluster_changes_and_removal_are_audited(cast, api):
    cluster_id = (
        api(cast.pat)
        .post("/api/v1/clusters/", {"name": "west", "kubeconfig": KUBECONFIG}, format="json")
        .json()["id"]
    )

    changed = api(cast.pat).patch(
        f"/api/v1/clusters/{cluster_id}/", {"pool_label": "example.com/pool"}, format="json"
    )
    removed = api(cast.pat).delete(f"/api/v1/clusters/{cluster_id}/")

    assert changed.status_code == 200 and changed.json()["pool_label"] == "example.com/pool"
    assert removed.status_code == 204
    actions = list(
        AuditEvent.objects.filter(object_id=cluster_id).order_by("at").values_list("action", flat=True)
    )
    assert actions == ["cluster.created", "cluster.updated", "cluster.deleted"]


def test_finance_sees_clusters_but_cannot_register_one(cast, api):
    inv.cluster()
    before = database_state("inventory.Cluster", "audit.AuditEvent")

    assert len(ids(api(cast.fiona).get("/api/v1/clusters/"))) == 1
    response = api(cast.fiona).post(
        "/api/v1/clusters/", {"name": "x", "kubeconfig": KUBECONFIG}, format="json"
    )

    assert_problem(response, 403, "permission_denied")
    assert database_state("inventory.Cluster", "audit.AuditEvent") == before


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "Not A Slug", "kubeconfig": KUBECONFIG}, 400, "invalid_slug"),
        ({"name": "west"}, 400, "no_credentials"),
        ({"name": "west", "kubeconfig": KUBECONFIG, "colour": "red"}, 400, "unknown_field"),
        ({"name": "east", "kubeconfig": KUBECONFIG}, 409, "cluster_name_taken"),
    ],
)
def test_bad_cluster_input_is_a_problem_and_changes_nothing(cast, api, body, status, code):
    inv.cluster("east")
    before = database_state("inventory.Cluster", "audit.AuditEvent")

    response = api(cast.pat).post("/api/v1/clusters/", body, format="json")

    assert_problem(response, status, code)
    assert database_state("inventory.Cluster", "audit.AuditEvent") == before


def test_a_tenant_sees_its_own_allocations_and_claims_only(cast, api):
    mine = inv.allocation(tenant=cast.vision, namespace="team-vision", name="a")
    theirs = inv.allocation(tenant=cast.nlp, namespace="team-nlp", name="b")
    unassigned = inv.allocation(tenant=None, namespace="sandbox", name="c")
    my_claim = inv.claim(tenant=cast.vision, namespace="team-vision")
    inv.claim(tenant=cast.nlp, namespace="team-nlp")

    assert ids(api(cast.dana).get("/api/v1/allocations/")) == {str(mine.pk)}
    assert ids(api(cast.dana).get("/api/v1/resource-claims/")) == {str(my_claim.pk)}
    assert ids(api(cast.rita).get("/api/v1/allocations/")) == {str(mine.pk), str(theirs.pk)}
    assert ids(api(cast.fiona).get("/api/v1/allocations/")) == {
        str(mine.pk),
        str(theirs.pk),
        str(unassigned.pk),
    }
    assert ids(api(cast.pat).get("/api/v1/allocations/?tenant=unassigned")) == {str(unassigned.pk)}


def test_nodes_and_gpus_are_platform_only(cast, api):
    gpu = inv.gpu()

    assert api(cast.alice).get("/api/v1/nodes/").json()["results"] == []
    assert api(cast.alice).get(f"/api/v1/gpus/{gpu.pk}/").status_code == 404
    assert ids(api(cast.fiona).get("/api/v1/gpus/")) == {str(gpu.pk)}


def test_tenants_see_shared_pools_and_their_dedicated_ones_with_free_capacity(cast, api):
    shared = inv.pool("shared")
    inv.gpu(on=inv.node("n1", in_pool=shared))
    vision_pool = inv.pool("vision-only", tenant=cast.vision)
    inv.pool("nlp-only", tenant=cast.nlp)

    body = api(cast.dana).get("/api/v1/node-pools/").json()

    assert {row["id"] for row in body["results"]} == {str(shared.pk), str(vision_pool.pk)}
    shared_row = next(row for row in body["results"] if row["id"] == str(shared.pk))
    assert shared_row["capacity"] == [
        {
            "model_key": "H100-80GB",
            "physical": {
                "cards": 1,
                "capacity_ge": "1.000000",
                "allocated_ge": "0.000000",
                "unavailable_ge": "0.000000",
                "free_ge": "1.000000",
            },
            "advertised": {
                "units": 1,
                "capacity_ge": "1.000000",
                "allocated_ge": "0.000000",
                "unavailable_ge": "0.000000",
                "free_ge": "1.000000",
                "kinds": [{"kind": "whole_gpu", "units": 1, "ge": "1.000000"}],
            },
            "unavailable": [],
        }
    ]
    assert api(cast.charlie).get("/api/v1/node-pools/").json()["results"] == []


def test_allocations_filter_by_time_range_and_pool(cast, api):
    old = inv.allocation(tenant=cast.vision, namespace="team-vision", name="old", hours_ago=10, open=False)
    recent = inv.allocation(tenant=cast.vision, namespace="team-vision", name="recent", hours_ago=1)
    client = api(cast.pat)

    since = (timezone.now() - timedelta(hours=3)).isoformat()
    assert ids(client.get("/api/v1/allocations/", {"since": since})) == {str(recent.pk)}
    assert ids(client.get("/api/v1/allocations/", {"until": since})) == {str(old.pk)}
    assert ids(client.get("/api/v1/allocations/", {"pool": str(recent.pool_id), "open": "true"})) == {
        str(recent.pk)
    }


@pytest.mark.parametrize(
    "route", ["allocations", "node-pools", "nodes", "gpus", "resource-claims", "clusters"]
)
def test_query_count_does_not_grow_with_page_size(cast, api, route):
    client = api(cast.pat)
    for i in range(3):
        inv.gpu(on=inv.node(f"n{i}", in_pool=inv.pool(f"p{i}", on=inv.cluster(f"c{i}"))))
        inv.allocation(tenant=cast.vision, namespace="team-vision", name=f"a{i}")
        inv.claim(tenant=cast.vision, namespace="team-vision", name=f"c{i}")

    def count(size):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/api/v1/{route}/?page_size={size}").status_code == 200
        return len(queries)

    count(1)  # the first call also stamps the token's last use
    assert count(1) == count(3)


def test_node_pages_follow_cluster_then_name_without_repeating_or_skipping_a_node(cast, api):
    # The node list aggregates its units (GROUP BY), which drops the model's ordering; the pages must
    # still walk cluster a's nodes then cluster b's, each by name.
    client = api(cast.pat)
    for cluster, names in (("b", ["n2", "n1"]), ("a", ["n3", "n1"])):
        pool = inv.pool(f"pool-{cluster}", on=inv.cluster(cluster))
        for name in names:
            inv.node(name, in_pool=pool)
    seen = []
    for page in (1, 2):
        body = client.get(f"/api/v1/nodes/?page_size=2&page={page}").json()
        seen += [(node["cluster"], node["name"]) for node in body["results"]]
    assert seen == [("a", "n1"), ("a", "n3"), ("b", "n1"), ("b", "n2")]
