"""Each cluster names its enforcement backend (DESIGN §5.3): a platform-admin switches it through the
API or the cluster page, audited; materialisation asks the cluster's backend, so a cluster in
`kueue` mode gets no ResourceQuota or ResourceClaim for an admitted request."""

from __future__ import annotations

import kubernetes
import pytest

from gpuplatform.audit.models import AuditEvent
from inventory.models import Cluster, NodePool
from inventory.services import create_cluster, update_cluster
from inventory.sync.service import sync_cluster
from quotas.enforcement import BACKENDS, backend_for
from quotas.materialise import QUOTA_NAME
from quotas.models import CapacityRequest, Flavor, PriorityClass, Queue, Quota
from quotas.tasks import materialise_request_task
from tests.helpers import assert_problem, database_state
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"


def test_a_new_cluster_enforces_through_resource_quotas(cast):
    cluster = inv.cluster()
    assert cluster.enforcement_backend == "resourcequota"
    assert backend_for(cluster).writes_resource_quotas() is True
    assert set(BACKENDS) == {"resourcequota", "kueue"}


def test_a_platform_admin_switches_a_cluster_to_kueue_through_the_api_audited(cast, api):
    cluster = inv.cluster()
    response = api(cast.pat).patch(
        f"/api/v1/clusters/{cluster.pk}/", {"enforcement_backend": "kueue"}, format="json"
    )
    assert response.status_code == 200 and response.json()["enforcement_backend"] == "kueue"
    event = AuditEvent.objects.get(action="cluster.updated", object_id=str(cluster.pk))
    assert (event.before["enforcement_backend"], event.after["enforcement_backend"]) == (
        "resourcequota",
        "kueue",
    )
    assert api(cast.pat).get(f"/api/v1/clusters/{cluster.pk}/").json()["enforcement_backend"] == "kueue"


def test_an_unknown_backend_is_refused_and_nothing_changes(cast, api):
    cluster = inv.cluster()
    before = database_state("inventory.Cluster", "audit.AuditEvent")
    response = api(cast.pat).patch(
        f"/api/v1/clusters/{cluster.pk}/", {"enforcement_backend": "volcano"}, format="json"
    )
    assert_problem(response, 400, "validation_failed")
    assert database_state("inventory.Cluster", "audit.AuditEvent") == before


def test_no_one_but_a_platform_admin_switches_the_backend(cast, api):
    cluster = inv.cluster()
    before = database_state("inventory.Cluster", "audit.AuditEvent")
    assert (
        api(cast.alice)
        .patch(f"/api/v1/clusters/{cluster.pk}/", {"enforcement_backend": "kueue"}, format="json")
        .status_code
        == 404
    )
    assert_problem(
        api(cast.fiona).patch(
            f"/api/v1/clusters/{cluster.pk}/", {"enforcement_backend": "kueue"}, format="json"
        ),
        403,
        "permission_denied",
    )
    assert database_state("inventory.Cluster", "audit.AuditEvent") == before


def test_the_cluster_page_shows_the_backend_and_a_platform_admin_switches_it_there(cast, client):
    cluster = inv.cluster()
    client.force_login(cast.pat)
    page = client.get("/inventory/").content.decode()
    assert "ResourceQuota per tenant namespace" in page and "Switch" in page

    response = client.post(
        f"/inventory/clusters/{cluster.pk}/enforcement/", {"enforcement_backend": "kueue"}, follow=True
    )

    html = response.content.decode()
    assert f"Cluster {cluster.name} now enforces through Kueue" in html
    assert Cluster.objects.get(pk=cluster.pk).enforcement_backend == "kueue"
    assert AuditEvent.objects.filter(
        action="cluster.updated", object_id=str(cluster.pk), actor=cast.pat
    ).exists()


def test_a_bad_backend_on_the_page_is_a_message_and_changes_nothing(cast, client):
    cluster = inv.cluster()
    client.force_login(cast.pat)
    before = database_state("inventory.Cluster", "audit.AuditEvent")
    response = client.post(
        f"/inventory/clusters/{cluster.pk}/enforcement/", {"enforcement_backend": "volcano"}, follow=True
    )
    assert "Unknown enforcement backend" in response.content.decode()
    assert database_state("inventory.Cluster", "audit.AuditEvent") == before


def test_a_tenant_admin_sees_no_switch_and_cannot_post_one(cast, client):
    cluster = inv.cluster()
    client.force_login(cast.alice)
    assert "Switch" not in client.get("/inventory/").content.decode()
    response = client.post(f"/inventory/clusters/{cluster.pk}/enforcement/", {"enforcement_backend": "kueue"})
    assert response.status_code == 404
    assert Cluster.objects.get(pk=cluster.pk).enforcement_backend == "resourcequota"


@pytest.fixture
def fleet(cast, kubesim_factory):
    """kubesim's mixed scenario synced as cluster "sim"; vision holds 4 H100s and 2 DRA GPUs."""
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = create_cluster(actor=cast.pat, name="sim", kubeconfig=sim.kubeconfig_path.read_text())
    sync_cluster(cluster_id=str(cluster.pk))
    pool = NodePool.objects.get(cluster=cluster, name="NVIDIA-H100-80GB-HBM3")
    h100 = Flavor.objects.create(name="h100", pool=pool, resources=[{"name": GPU, "ge_per_unit": "1"}])
    dra = Flavor.objects.create(
        name="h100-dra",
        kind="dra",
        pool=pool,
        device_class="gpu.nvidia.com",
        resources=[{"name": "gpu.nvidia.com", "ge_per_unit": "1"}],
    )
    PriorityClass.objects.create(name="batch", value=100)
    Queue.objects.create(tenant=cast.vision, name="default")
    Quota.objects.create(tenant=cast.vision, flavor=h100, resource=GPU, nominal=4)
    Quota.objects.create(tenant=cast.vision, flavor=dra, resource="gpu.nvidia.com", nominal=2)
    return (
        cluster,
        kubernetes.client.CoreV1Api(sim.api_client()),
        kubernetes.client.ResourceV1Api(sim.api_client()),
    )


def admit(api, cast, **body):
    response = api(cast.alice).post(
        "/api/v1/capacity-requests/",
        {"tenant": "vision", "flavor": "h100", "priority_class": "batch", "amount": 2, **body},
        format="json",
    )
    assert response.status_code == 201 and response.json()["state"] == "admitted", response.json()
    return CapacityRequest.objects.get(pk=response.json()["id"])


def test_a_kueue_cluster_gets_no_resource_quota_or_claim_for_an_admitted_request(cast, api, fleet):
    cluster, core, resource = fleet
    update_cluster(actor=cast.pat, cluster_id=cluster.pk, enforcement_backend="kueue")
    gpus, claim = admit(api, cast), admit(api, cast, flavor="h100-dra", amount=1)

    materialise_request_task(str(gpus.pk))
    materialise_request_task(str(claim.pk))

    assert core.list_namespaced_resource_quota("team-vision").items == []
    ours = "app.kubernetes.io/managed-by=gpuplatform"
    assert resource.list_namespaced_resource_claim("team-vision", label_selector=ours).items == []
    gpus.refresh_from_db()
    assert gpus.state == "active"  # the lifecycle is the backend's business, not the request's
    assert gpus.cluster_objects[0]["kind"] == "ClusterQueue" and gpus.cluster_objects[0]["written"] is False
    assert (
        "enforces through Kueue; the request raises ClusterQueue vision's nominal quota"
        in (gpus.cluster_objects[0]["summary"])
    )


def test_the_same_request_on_a_resourcequota_cluster_writes_the_quota(cast, api, fleet):
    _, core, _ = fleet
    gpus = admit(api, cast)
    materialise_request_task(str(gpus.pk))
    assert core.read_namespaced_resource_quota(QUOTA_NAME, "team-vision").spec.hard == {
        f"requests.{GPU}": "2"
    }


def test_a_released_dra_request_takes_its_claim_back_once(cast, api, fleet):
    _, _, resource = fleet
    claim = admit(api, cast, flavor="h100-dra", amount=1)
    materialise_request_task(str(claim.pk))
    ours = "app.kubernetes.io/managed-by=gpuplatform"
    [made] = resource.list_namespaced_resource_claim("team-vision", label_selector=ours).items
    assert made.spec.devices.requests[0].exactly.device_class_name == "gpu.nvidia.com"

    response = api(cast.alice).post(f"/api/v1/capacity-requests/{claim.pk}/release/")
    assert response.status_code == 200 and response.json()["state"] == "released"
    materialise_request_task(str(claim.pk))
    materialise_request_task(str(claim.pk))  # a retried task finds the claim gone and is content

    assert resource.list_namespaced_resource_claim("team-vision", label_selector=ours).items == []
