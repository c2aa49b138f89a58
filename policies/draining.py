"""The cluster side of a planned MIG change: which GPU pods hold a node, cordon, evict, uncordon,
and the node's labels for verification. Through the official client (inventory.cluster_access) and
the Eviction API (policy/v1), so PodDisruptionBudgets are honoured by the API server, not by us.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from inventory import kube
from inventory.cluster_access import client_for
from inventory.models import Cluster

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
STRATEGIC_MERGE = "application/strategic-merge-patch+json"


class ClusterUnreachable(Exception):
    pass


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _uses_gpu(pod: Any) -> bool:
    spec = pod.spec
    if spec.resource_claims:
        return True
    for container in spec.containers or []:
        resources = container.resources
        for section in (resources.requests or {}, resources.limits or {}) if resources else ():
            if any(name.startswith("nvidia.com/") for name in section):
                return True
    return False


def _call(fn: Any, *args: Any, api_errors: bool = False, **kwargs: Any) -> Any:
    """Call the client; any failure is ClusterUnreachable, except API answers when ``api_errors``."""
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        if api_errors:
            raise
        raise ClusterUnreachable(f"API server answered {exc.status}: {exc.reason}") from exc
    except (kube.KubeError, OSError, ValueError) as exc:
        raise ClusterUnreachable(str(exc)) from exc
    except Exception as exc:  # urllib3's MaxRetryError and friends
        raise ClusterUnreachable(str(exc)) from exc


def gpu_pods(cluster: Cluster, node_name: str) -> list[PodRef]:
    """Unfinished pods on the node that hold GPUs (extended resources or DRA claims), terminating
    ones included."""
    with client_for(cluster) as api:
        pods = _call(
            k8s.CoreV1Api(api).list_pod_for_all_namespaces, field_selector=f"spec.nodeName={node_name}"
        )
    return sorted(
        (
            PodRef(pod.metadata.namespace, pod.metadata.name)
            for pod in pods.items
            # A terminating pod still holds its GPUs until the kubelet has stopped it: it counts.
            if (pod.status.phase if pod.status else None) not in TERMINAL_PHASES and _uses_gpu(pod)
        ),
        key=str,
    )


def set_cordon(cluster: Cluster, node_name: str, *, cordoned: bool) -> None:
    with client_for(cluster) as api:
        _call(
            k8s.CoreV1Api(api).patch_node,
            node_name,
            {"spec": {"unschedulable": cordoned or None}},
            _content_type=STRATEGIC_MERGE,
        )


def evict(cluster: Cluster, pod: PodRef) -> str:
    """Ask the API server to evict ``pod``: "evicted", "gone", or "refused" (a PodDisruptionBudget
    allows no disruption now: 429)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    }
    with client_for(cluster) as api:
        try:
            _call(
                k8s.CoreV1Api(api).create_namespaced_pod_eviction,
                pod.name,
                pod.namespace,
                body,
                api_errors=True,
            )
        except ApiException as exc:
            if exc.status == 429:
                return "refused"
            if exc.status == 404:
                return "gone"
            raise ClusterUnreachable(f"eviction of {pod} answered {exc.status}: {exc.reason}") from exc
    return "evicted"


def node_labels(cluster: Cluster, node_name: str) -> dict[str, str]:
    with client_for(cluster) as api:
        node = _call(k8s.CoreV1Api(api).read_node, node_name)
    return dict(node.metadata.labels or {})
