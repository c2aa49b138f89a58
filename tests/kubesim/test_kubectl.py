"""kubectl 1.32 against kubesim over TLS, with its default (strict) validation: nothing allowed off.

What kubectl needs from a server (https://kubernetes.io/docs/reference/kubectl/): the bearer token is
sent only over TLS; `apply`, `diff` and `explain` read /openapi/v3 (cli-runtime's queryParamVerifierV3
looks for the PATCH operation's `fieldValidation` parameter, and apply's patcher for its
strategic-merge request body); `--chunk-size` pages with limit/continue; `--server-side` is
server-side apply with conflicts (https://kubernetes.io/docs/reference/using-api/server-side-apply/).
Where kubectl is missing the tests fail: they are the check that kubesim talks to the real client.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

KUBECTL_MINOR = 32


def _kubectl_binary() -> str:
    found = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
    if found is None:
        pytest.fail(
            "kubectl (1.32 or newer) is not installed: these tests need it on PATH or at /usr/bin/kubectl"
        )
    out = subprocess.run(
        [found, "version", "--client", "-o", "json"], capture_output=True, text=True, check=True
    )
    minor = int("".join(ch for ch in json.loads(out.stdout)["clientVersion"]["minor"] if ch.isdigit()))
    if minor < KUBECTL_MINOR:
        pytest.fail(f"kubectl at {found} is 1.{minor}; these tests need 1.{KUBECTL_MINOR} or newer")
    return found


class Kubectl:
    def __init__(self, binary: str, kubeconfig: Path, cache: Path) -> None:
        self.binary = binary
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(cache)}
        self.cache = cache

    def args(self, *args: str) -> list[str]:
        return [self.binary, "--cache-dir", str(self.cache / "cache"), *args]

    def __call__(
        self, *args: str, stdin: str | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.args(*args), input=stdin, capture_output=True, text=True, env=self.env, timeout=60
        )
        if ok and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done


@pytest.fixture
def kubectl(kubesim, tmp_path) -> Kubectl:
    return Kubectl(_kubectl_binary(), kubesim.kubeconfig_path, tmp_path)


CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  labels: {app: web}
data:
  mode: %s
"""


def test_get_pages_with_chunk_size_and_filters_with_selectors(kubesim, kubectl):
    for i in range(5):
        kubesim.store.create(
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"cm-{i}",
                    "namespace": "default",
                    "labels": {"app": "web" if i % 2 else "db"},
                },
            },
        )

    paged = kubectl("get", "configmaps", "--chunk-size=2", "-o", "name", "-v=6")
    selected = kubectl(
        "get", "configmaps", "-l", "app=web", "--field-selector", "metadata.name!=cm-3", "-o", "name"
    )

    assert paged.stdout.split() == [f"configmap/cm-{i}" for i in range(5)]
    assert paged.stderr.count("limit=2") == 3 and paged.stderr.count("continue=") == 2
    assert selected.stdout.split() == ["configmap/cm-1"]


def test_client_side_apply_creates_then_patches_with_the_last_applied_configuration(kubesim, kubectl):
    created = kubectl("apply", "-f", "-", stdin=CONFIG % "fast")
    configured = kubectl("apply", "-f", "-", stdin=CONFIG % "slow")
    unchanged = kubectl("apply", "-f", "-", stdin=CONFIG % "slow")

    live = kubesim.store.get("configmaps", "default", "app-config")
    assert "configmap/app-config created" in created.stdout
    assert "configmap/app-config configured" in configured.stdout
    assert "configmap/app-config unchanged" in unchanged.stdout
    assert live["data"] == {"mode": "slow"}
    assert (
        '"mode":"slow"' in live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )


def test_strict_validation_is_done_by_the_server(kubectl):
    done = kubectl("apply", "-f", "-", stdin=CONFIG % "fast" + "bogus: 1\n", ok=False)

    assert done.returncode == 1
    assert 'strict decoding error: unknown field "bogus"' in done.stderr


def test_server_side_apply_conflicts_until_forced(kubesim, kubectl):
    kubectl("apply", "-f", "-", stdin=CONFIG % "fast")

    conflict = kubectl("apply", "--server-side", "-f", "-", stdin=CONFIG % "slow", ok=False)
    forced = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=CONFIG % "slow")

    assert conflict.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.mode' in (
        conflict.stderr
    )
    assert "serverside-applied" in forced.stdout
    live = kubesim.store.get("configmaps", "default", "app-config")
    assert live["data"] == {"mode": "slow"}
    owners = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in owners


def test_diff_shows_the_change_a_dry_run_would_make_and_changes_nothing(kubesim, kubectl):
    kubectl("apply", "-f", "-", stdin=CONFIG % "fast")
    rv = kubesim.store.get("configmaps", "default", "app-config")["metadata"]["resourceVersion"]

    changed = kubectl("diff", "-f", "-", stdin=CONFIG % "slow", ok=False)
    same = kubectl("diff", "-f", "-", stdin=CONFIG % "fast", ok=False)

    assert changed.returncode == 1, changed.stderr
    assert "-  mode: fast" in changed.stdout and "+  mode: slow" in changed.stdout
    assert same.returncode == 0 and same.stdout == ""
    assert kubesim.store.get("configmaps", "default", "app-config")["metadata"]["resourceVersion"] == rv


def test_explain_reads_the_openapi_v3_schemas(kubectl):
    node = kubectl("explain", "nodes.spec.unschedulable")
    claim = kubectl("explain", "resourceclaims.spec.devices.requests", "--api-version=resource.k8s.io/v1")

    assert "FIELD: unschedulable <boolean>" in node.stdout
    assert "GROUP:      resource.k8s.io" in claim.stdout and "exactly" in claim.stdout


NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1}\n"


def test_label_and_cordon_patch_a_node(kubesim, kubectl):
    kubectl("apply", "-f", "-", stdin=NODE)

    kubectl("label", "node", "gpu-1", "pool=a100")
    kubectl("cordon", "gpu-1")
    cordoned = kubectl("get", "nodes", "--field-selector", "spec.unschedulable=true", "-o", "name")

    node = kubesim.store.get("nodes", None, "gpu-1")
    assert node["metadata"]["labels"]["pool"] == "a100" and node["spec"]["unschedulable"] is True
    assert cordoned.stdout.split() == ["node/gpu-1"]


def test_drain_dry_run_cordons_nothing_for_real(kubesim, kubectl):
    """Draining a node whose pods the selector leaves out: kubectl cordons with dryRun=All and lists
    the node's pods (fieldSelector spec.nodeName)."""
    kubectl("apply", "-f", "-", stdin=NODE)
    kubesim.store.create(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "default", "labels": {"app": "train"}},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "nginx:1.27"}]},
        },
    )

    done = kubectl("drain", "gpu-1", "--dry-run=server", "--ignore-daemonsets", "--pod-selector", "app=none")

    assert "node/gpu-1 cordoned (server dry run)" in done.stdout
    assert "drained (server dry run)" in done.stdout
    assert not kubesim.store.get("nodes", None, "gpu-1").get("spec", {}).get("unschedulable")
    assert kubesim.store.get("pods", "default", "p1") is not None


def test_get_watch_prints_objects_as_they_come(kubesim, kubectl):
    watcher = subprocess.Popen(
        kubectl.args("get", "configmaps", "-w", "-o", "name"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env,
    )
    try:
        # Until the watch is open, a create would show up only in the initial list: wait for it.
        deadline = time.monotonic() + 20
        while not kubesim.store.watcher_count("configmaps") and time.monotonic() < deadline:
            time.sleep(0.05)
        kubesim.store.create(
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "watched", "namespace": "default"},
            },
        )
        assert watcher.stdout is not None
        ready, _, _ = select.select([watcher.stdout], [], [], 20)
        line = watcher.stdout.readline() if ready else ""
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)

    assert line.strip() == "configmap/watched"


def _running_pod(kubesim, name: str, node: str) -> None:
    kubesim.store.create(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "train"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx:1.27"}]},
        },
    )
    kubesim.store.patch_merge(
        "pods",
        "default",
        name,
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        subresource="status",
    )


PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: train, namespace: default}
spec:
  minAvailable: %d
  selector: {matchLabels: {app: train}}
"""


def _drain_setup(kubesim, kubectl, min_available: int):
    from kubesim.controllers import start_controllers

    kubectl("apply", "-f", "-", stdin=NODE)
    for name, node in (("a", "gpu-1"), ("b", "gpu-1"), ("c", "gpu-2")):
        _running_pod(kubesim, name, node)
    controllers = start_controllers(kubesim.store, enabled={"disruption"})
    kubectl("apply", "-f", "-", stdin=PDB % min_available)
    kubectl("wait", "pdb/train", "--for=jsonpath={.status.observedGeneration}=1", "--timeout=20s")
    return controllers


def test_drain_evicts_the_nodes_pods_through_the_eviction_api(kubesim, kubectl):
    controllers = _drain_setup(kubesim, kubectl, 1)  # 3 healthy, 1 needed: 2 disruptions allowed
    try:
        done = kubectl("drain", "gpu-1", "--force", "--ignore-daemonsets", "--timeout=30s")
    finally:
        controllers.stop()

    assert "node/gpu-1 cordoned" in done.stdout and "node/gpu-1 drained" in done.stdout
    assert "pod/a evicted" in done.stdout and "pod/b evicted" in done.stdout
    assert [p["metadata"]["name"] for p in kubesim.store.list("pods", "default")] == ["c"]
    assert kubesim.store.get("nodes", None, "gpu-1")["spec"]["unschedulable"] is True


def test_drain_stops_at_the_disruption_budget(kubesim, kubectl):
    controllers = _drain_setup(kubesim, kubectl, 2)  # 3 healthy, 2 needed: 1 disruption allowed
    try:
        done = kubectl("drain", "gpu-1", "--force", "--ignore-daemonsets", "--timeout=7s", ok=False)
    finally:
        controllers.stop()

    left = [p["metadata"]["name"] for p in kubesim.store.list("pods", "default")]
    assert done.returncode != 0
    assert "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget." in (
        done.stderr
    )
    assert len(left) == 2 and "c" in left  # one of a, b was evicted; the other is held by the budget


ADMISSION = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-gpus}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: >-
      object.spec.containers.all(c, !has(c.resources.limits) ||
      !('nvidia.com/gpu' in c.resources.limits) || int(c.resources.limits['nvidia.com/gpu']) <= 2)
    message: at most 2 GPUs per container
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-gpus}
spec:
  policyName: max-gpus
  validationActions: [Deny]
"""

GPU_POD = """
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  containers:
  - name: main
    image: cuda:12
    resources:
      limits: {nvidia.com/gpu: "%d"}
"""


def test_apply_of_a_pod_breaking_a_validating_admission_policy_is_refused(kubesim, kubectl):
    kubectl("apply", "-f", "-", stdin=ADMISSION)

    kubectl("apply", "-f", "-", stdin=GPU_POD % ("small", 2))
    refused = kubectl("apply", "-f", "-", stdin=GPU_POD % ("big", 4), ok=False)

    # kubectl prints a 422 as "is invalid: <field>: <message>"; the cause has no field, as on a cluster.
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        "The pods \"big\" is invalid: : ValidatingAdmissionPolicy 'max-gpus' with binding 'max-gpus' "
        "denied request: at most 2 GPUs per container"
    )
    assert [p["metadata"]["name"] for p in kubesim.store.list("pods", "default")] == ["small"]
