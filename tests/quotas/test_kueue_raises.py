"""Capacity requests on a kueue cluster are temporary quota raises (issue 28, item 6), end to end on
kubesim with Kueue v0.19.2's CRDs: the engine admits a request as always; once that commits, the
cluster's Kueue apply (queued beside the materialisation, one per cluster per transaction) adds its
amounts to the tenant's ClusterQueue nominal quota; a release or the request's expiry takes them back.
Nothing is written per request, and no ResourceQuota at all, on such a cluster.

Numbers (hand-worked): vision holds 4 H100s nominal. Alice's request of 2 admitted: 4 + 2 = 6;
released: 4. A request of 3 for an hour admitted: 7; an hour later the loop expires it: 4."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery import current_app
from django.db import connection, transaction
from django.utils import timezone

from inventory.models import KueueApplyState
from quotas.dispatch import materialise_after_commit
from quotas.kueue_apply.triggers import _Batch
from quotas.models import CapacityRequest
from quotas.runner.loop import run_admission_loop
from tests.quotas.test_kueue_apply import kueue, sim_cluster, switch  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

GPU = "nvidia.com/gpu"


@pytest.fixture
def eager():
    """Tasks run in this process as they are sent (after commit), as a worker would run them."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


def h100_nominal(kueue: Any, queue: str = "vision") -> str:  # noqa: F811
    spec = kueue.get("clusterqueues", queue)["spec"]
    (entry,) = [f for g in spec["resourceGroups"] for f in g["flavors"] if f["name"] == "h100"]
    (gpu,) = [r for r in entry["resources"] if r["name"] == GPU]
    return str(gpu["nominalQuota"])


def ask(api: Any, user: Any, amount: int, **extra: Any) -> dict[str, Any]:
    body = {"tenant": "vision", "flavor": "h100", "priority_class": "batch", "amount": amount, **extra}
    response = api(user).post("/api/v1/capacity-requests/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_an_admitted_request_raises_the_cluster_queue_and_its_release_takes_it_back(
    cast,
    api,
    eager,
    kueue,  # noqa: F811
    sim_cluster,  # noqa: F811
):
    # given the cluster enforces through Kueue (the switch's apply runs after its commit)
    switch(cast, sim_cluster, "kueue")
    assert h100_nominal(kueue) == "4" and h100_nominal(kueue, "nlp") == "4"
    # when alice asks for 2 H100s and the engine admits them
    created = ask(api, cast.alice, 2)
    # then vision's ClusterQueue holds 4 + 2 = 6, nlp's is untouched
    assert h100_nominal(kueue) == "6" and h100_nominal(kueue, "nlp") == "4"
    row = CapacityRequest.objects.get(pk=created["id"])
    assert row.state == "active"
    assert [o["written"] for o in row.cluster_objects] == [False]
    # and no ResourceQuota was written anywhere on the cluster
    assert kueue.sim.store.list("resourcequotas") == []
    state = KueueApplyState.objects.get(cluster=sim_cluster)
    assert any("raised by 2" in note and "(4 -> 6)" in note for note in state.notes)
    # and a raise of ours is not reported as someone's hand edit
    assert state.drift == []
    # when alice releases it
    released = api(cast.alice).post(f"/api/v1/capacity-requests/{created['id']}/release/")
    assert released.status_code == 200
    # then the raise is taken back: 4
    assert h100_nominal(kueue) == "4"
    assert kueue.sim.store.list("resourcequotas") == []


def test_an_expired_request_is_taken_back_from_the_cluster_queue(
    cast,
    api,
    eager,
    kueue,  # noqa: F811
    sim_cluster,  # noqa: F811
):
    switch(cast, sim_cluster, "kueue")
    created = ask(api, cast.alice, 3, duration_seconds=3600)
    assert h100_nominal(kueue) == "7"  # 4 + 3
    # when the admission loop runs after the hour is over
    result = run_admission_loop(now=timezone.now() + timedelta(hours=1, minutes=1))
    # then the request expired and the nominal is back at 4
    assert result["expired"] == 1
    assert CapacityRequest.objects.get(pk=created["id"]).state == "expired"
    assert h100_nominal(kueue) == "4"


def test_requests_moved_in_one_transaction_queue_one_apply_of_their_cluster(cast, api, sim_cluster):  # noqa: F811
    switch(cast, sim_cluster, "kueue")
    first, second = ask(api, cast.alice, 1), ask(api, cast.alice, 1)
    with transaction.atomic():
        materialise_after_commit([first["id"]])
        materialise_after_commit([second["id"]])
        batches = [entry[1] for entry in connection.run_on_commit if isinstance(entry[1], _Batch)]
        # one batch for the transaction, with both requests; their cluster is read at commit
        assert len(batches) == 1 and batches[0].request_ids == {first["id"], second["id"]}


def test_a_switch_to_kueue_is_seen_by_the_very_next_admission(
    cast,
    api,
    eager,
    kueue,  # noqa: F811
    sim_cluster,  # noqa: F811
):
    # given the cluster still enforces through ResourceQuotas, and an admission there raised nothing
    ask(api, cast.alice, 1)
    assert not KueueApplyState.objects.filter(cluster=sim_cluster).exists()
    # when it is switched to Kueue (its own apply: 4 + the 1 already held) and alice asks for 2 more
    switch(cast, sim_cluster, "kueue")
    assert h100_nominal(kueue) == "5"
    ask(api, cast.alice, 2)
    # then that very admission raises vision's ClusterQueue: nothing of "no kueue cluster" was kept
    assert h100_nominal(kueue) == "7"


def test_without_a_kueue_cluster_a_commit_reads_only_the_kueue_clusters(
    cast,
    api,
    sim_cluster,  # noqa: F811
    django_assert_num_queries,
):
    # given a fleet with no kueue cluster and a request admitted on it
    created = ask(api, cast.alice, 1)
    # when its move's batch runs at commit, it reads which clusters are in kueue mode: none, so the
    # join of the moved requests to their clusters is not run and nothing is queued
    batch = _Batch()
    batch.request_ids.add(created["id"])
    with django_assert_num_queries(1) as captured:
        batch()
    (sql,) = [q["sql"] for q in captured.captured_queries]
    assert "inventory_cluster" in sql and "quotas_capacityrequest" not in sql
