"""How the service reaches a registered cluster: its stored kubeconfig, vetted again on every use.

Vetting again (not only at registration) matters twice: rows stored before vetting existed are
refused rather than trusted, and an API server's name is resolved afresh, so a name that has come to
point at a loopback or metadata address is refused then.
"""

from __future__ import annotations

from django.conf import settings
from kubernetes import client as k8s

from inventory import kube
from inventory.crypto import decrypt_text
from inventory.kubeconfig import EndpointPolicy, KubeconfigRefused, VettedKubeconfig, vet_kubeconfig
from inventory.models import Cluster

__all__ = ["client_for", "endpoint_policy", "vet_uploaded"]


def endpoint_policy() -> EndpointPolicy:
    return EndpointPolicy(allow_loopback=settings.CLUSTER_ALLOW_LOOPBACK)


def vet_uploaded(text: str) -> VettedKubeconfig:
    """Vet an upload under the configured policy; KubeconfigRefused says why not."""
    return vet_kubeconfig(text, endpoint_policy())


def client_for(cluster: Cluster) -> k8s.ApiClient:
    """A client for the cluster; KubeError (retried, shown in the cluster's health) when its stored
    kubeconfig no longer passes vetting."""
    if cluster.in_cluster:
        return kube.api_client(in_cluster=True)
    try:
        vetted = vet_uploaded(decrypt_text(cluster.kubeconfig_encrypted))
    except KubeconfigRefused as refused:
        raise kube.KubeError(
            f"the stored kubeconfig is refused ({refused.code}): {refused.message}"
        ) from None
    return kube.api_client(vetted=vetted)
