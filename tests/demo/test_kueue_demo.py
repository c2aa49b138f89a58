"""The demo's Kueue cluster (issue 28, item 9): `demo-kueue` on kubesim with Kueue v0.19.2's CRDs and
its stand-in, enforced through Kueue; gpuplatform applies its objects there; the tenants' four Jobs
get Workloads that the sync brings into the inventory, each attributed to its tenant.

Numbers: quotas of 8 (vision), 8 (nlp) and 4 (recsys) H100s nominal. Vision's Jobs ask 2 and 6
(8 of 8), nlp's 4, recsys's 2: every Workload fits its ClusterQueue, so Kueue reserves quota for all
four and they wait on gpuplatform's admission check. Once the check's controller decides them
(``decide_admission_checks``, the hook): detector-train (2 GE x 4 h = 8 GE-h) and finetune-sweep
(4 GE x 2 h = 8 GE-h) are admitted; embedding-rebuild (2 GE x the default 24 h = 48 GE-h against
recsys's 10) is held over budget; large-eval (6 H100s, above the flavor's threshold of 4) waits for an
approval."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from demo.kueue import (
    FLAVOR,
    JOBS,
    KUEUE_NODES,
    KUEUE_SCENARIO,
    decide_admission_checks,
    seed_kueue_catalogue,
    seed_kueue_cluster,
    submit_demo_jobs,
)
from demo.seed import seed_demo_organisation
from inventory.models import KueueApplyState, Workload
from inventory.sync.service import sync_cluster
from kubesim.controllers import start_controllers
from quotas.kueue_apply.service import apply_kueue
from quotas.models import PriorityClass

pytestmark = pytest.mark.django_db(transaction=True)

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


@pytest.fixture
def demo_kueue(kubesim_factory, tmp_path):
    sim = kubesim_factory(scenario=KUEUE_SCENARIO, nodes=KUEUE_NODES, seed=1, kueue=True)
    controllers = start_controllers(sim.store, enabled={"kueue"}, background=False)
    api = sim.api_client()
    seed_demo_organisation(token_file=tmp_path / "tokens.json")
    PriorityClass.objects.create(name="batch", value=100)  # the demo's catalogue has it (demo/capacity.py)
    cluster = seed_kueue_cluster(kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    assert seed_kueue_catalogue(cluster=cluster)
    apply_kueue(cluster_id=str(cluster.pk))
    yield api, controllers, cluster
    controllers.stop()
    api.close()


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions", [])}


def test_the_kueue_demo_applies_the_quota_tree_and_its_jobs_become_attributed_workloads(demo_kueue):
    api, controllers, cluster = demo_kueue
    custom: Any = k8s.CustomObjectsApi(api)
    # gpuplatform applied the three teams' ClusterQueues on the one H100 flavor, nominal as seeded
    queues = {
        o["metadata"]["name"]: o
        for o in custom.list_cluster_custom_object(GROUP, VERSION, "clusterqueues")["items"]
    }
    assert sorted(queues) == ["nlp", "recsys", "vision"]
    nominal = {
        name: str(q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])
        for name, q in queues.items()
    }
    assert nominal == {"vision": "8", "nlp": "8", "recsys": "4"}
    assert queues["vision"]["spec"]["resourceGroups"][0]["flavors"][0]["name"] == FLAVOR
    state = KueueApplyState.objects.get(cluster=cluster)
    assert state.problems == [] and state.error == ""

    # when the tenants submit their Jobs (twice: a second start of the demo submits nothing new)
    assert submit_demo_jobs(api_client=api) == [f"{j.namespace}/{j.name}" for j in JOBS]
    submit_demo_jobs(api_client=api)
    assert controllers.settle(timeout=20)
    sync_cluster(cluster_id=str(cluster.pk))

    # then each Job has one Workload, synced with its tenant and its pod set's request
    rows = {w.name.split("-", 1)[1].rsplit("-", 1)[0]: w for w in Workload.objects.filter(cluster=cluster)}
    assert sorted(rows) == sorted(j.name for j in JOBS)
    assert {name: w.tenant.slug for name, w in rows.items()} == {
        "detector-train": "vision",
        "finetune-sweep": "nlp",
        "embedding-rebuild": "recsys",
        "large-eval": "vision",
    }
    assert rows["large-eval"].pod_sets[0]["requests"]["nvidia.com/gpu"] in ("6", 6)
    assert rows["embedding-rebuild"].max_execution_seconds is None
    assert rows["detector-train"].max_execution_seconds == 4 * 3600

    if not decide_admission_checks(cluster_id=str(cluster.pk)):
        # Before gpuplatform's admission-check controller is merged (issue 28 item 5): all four fit
        # their ClusterQueues (vision 2 + 6 of 8, nlp 4 of 8, recsys 2 of 4) and wait on the check.
        assert {w.state for w in rows.values()} == {"quota_reserved"}
        assert all("waiting for gpuplatform" in w.explanation for w in rows.values())
        assert all(
            [(c["name"], c["state"]) for c in w.admission_checks] == [("gpuplatform-budget", "Pending")]
            for w in rows.values()
        )
        return
    # With it: two admitted, the one over recsys's budget held, the large one awaiting approval.
    assert controllers.settle(timeout=20)
    sync_cluster(cluster_id=str(cluster.pk))
    decided = {w.name.split("-", 1)[1].rsplit("-", 1)[0]: w for w in Workload.objects.filter(cluster=cluster)}
    admitted = sorted(name for name, w in decided.items() if w.state == "admitted")
    assert admitted == ["detector-train", "finetune-sweep"]
    assert decided["embedding-rebuild"].state != "admitted"
    assert "budget" in decided["embedding-rebuild"].explanation.lower()
    assert decided["large-eval"].state != "admitted"
    assert "approval" in decided["large-eval"].explanation.lower()
