"""A cluster before Kubernetes 1.37 serves no resource.k8s.io/v1 DeviceTaintRules: its list answers
404. The sync reads that as "no rules" (the slices' own taints still count) and does not watch them."""

from __future__ import annotations

import threading

import kubernetes.client as k8s
import pytest

from inventory.models import DeviceTaintRule, ShareableUnit, SyncState
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db


def test_a_server_without_device_taint_rules_has_none_and_they_are_not_watched(kubesim_factory, register):
    sim = kubesim_factory(scenario="dra", nodes=6, seed=2, unserved=["devicetaintrules"])
    client = sim.api_client()
    with pytest.raises(k8s.ApiException) as missing:
        k8s.ResourceV1Api(client).list_device_taint_rule()
    assert missing.value.status == 404
    served = k8s.ApisApi(client).get_api_versions()  # the group is still served, without the kind
    assert "resource.k8s.io" in [g.name for g in served.groups]
    kinds = k8s.ResourceV1Api(client).get_api_resources().resources
    assert "resourceslices" in [r.name for r in kinds] and "devicetaintrules" not in [r.name for r in kinds]

    cluster = register(sim)
    syncer = ClusterSync(cluster, page_size=50)
    syncer.full_sync()
    assert not DeviceTaintRule.objects.filter(cluster=cluster).exists()
    assert ShareableUnit.objects.filter(cluster=cluster, kind="dra_device", counted=True).exists()
    state = SyncState.objects.get(cluster=cluster, kind="devicetaintrules")
    assert state.last_error == "" and state.last_list_at is not None

    try:
        for kind in syncer.kinds:
            syncer._start_reader(kind)
        watching = {
            t.name for t in threading.enumerate() if t.name.startswith(f"inventory-watch-{cluster.name}-")
        }
        assert f"inventory-watch-{cluster.name}-resourceslices" in watching
        assert f"inventory-watch-{cluster.name}-devicetaintrules" not in watching
    finally:
        syncer.stop_event.set()
        sim.store.close_watches()
