"""kubectl 1.32 against CRDs served by kubesim: Kueue's released CRD files installed with
`apply --server-side`, its objects applied, listed, conflicting and forced, as against a cluster."""

from __future__ import annotations

import json

import pytest

from tests.kubesim.crd_helpers import KUEUE_CRDS
from tests.kubesim.test_kubectl import Kubectl, _kubectl_binary

QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: vision
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: %d
"""


@pytest.fixture
def kubectl(kubesim, tmp_path) -> Kubectl:
    return Kubectl(_kubectl_binary(), kubesim.kubeconfig_path, tmp_path)


def test_kueue_crds_install_with_server_side_apply_and_serve_their_kinds(kubectl):
    installed = kubectl("apply", "--server-side", "-f", str(KUEUE_CRDS))
    kubectl("apply", "--server-side", "--field-manager=gpuplatform", "-f", "-", stdin=QUEUE % 8)

    listed = json.loads(kubectl("get", "clusterqueues", "-o", "json").stdout)
    established = kubectl(
        "wait", "--for=condition=Established", "crd/workloads.kueue.x-k8s.io", "--timeout=5s"
    )

    assert (
        "customresourcedefinition.apiextensions.k8s.io/clusterqueues.kueue.x-k8s.io serverside-applied"
        in (installed.stdout)
    )
    assert [q["metadata"]["name"] for q in listed["items"]] == ["vision"]
    assert listed["items"][0]["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert "condition met" in established.stdout


def test_a_hand_edit_conflicts_with_the_next_apply_until_forced(kubectl):
    kubectl("apply", "--server-side", "-f", str(KUEUE_CRDS))
    kubectl("apply", "--server-side", "--field-manager=gpuplatform", "-f", "-", stdin=QUEUE % 8)
    kubectl(
        "patch",
        "clusterqueue",
        "vision",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota","value":2}]',
    )

    refused = kubectl(
        "apply", "--server-side", "--field-manager=gpuplatform", "-f", "-", stdin=QUEUE % 8, ok=False
    )
    forced = kubectl(
        "apply",
        "--server-side",
        "--field-manager=gpuplatform",
        "--force-conflicts",
        "-f",
        "-",
        stdin=QUEUE % 8,
    )

    assert refused.returncode != 0
    assert 'conflict with "kubectl-patch"' in refused.stderr
    assert ".spec.resourceGroups" in refused.stderr
    assert "serverside-applied" in forced.stdout
    queue = json.loads(kubectl("get", "clusterqueue", "vision", "-o", "json").stdout)
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 8


def test_kubectl_shows_the_cel_rule_a_bad_object_breaks(kubectl):
    kubectl("apply", "--server-side", "-f", str(KUEUE_CRDS))
    bad = (QUEUE % 8).replace(
        'coveredResources: ["nvidia.com/gpu"]', 'coveredResources: ["nvidia.com/gpu", "cpu"]'
    )

    refused = kubectl("apply", "--server-side", "-f", "-", stdin=bad, ok=False)

    assert refused.returncode != 0
    assert 'The ClusterQueue "vision" is invalid' in refused.stderr
