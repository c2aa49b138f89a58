"""The ``gpu-operator`` applier: the bundle's ConfigMaps, then its own node's labels
(``nvidia.com/mig.config``, ``nvidia.com/device-plugin.config``), by server-side apply with the
official client (field manager ``gpuplatform-agent``); then it waits for mig-manager to report
``nvidia.com/mig.config.state`` = success. ConfigMaps go first so a label never names a config the
operator cannot find yet. Only the agent's own node is ever written."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from nodeagent.appliers import ApplyFailed

FIELD_MANAGER = "gpuplatform-agent"
APPLY_PATCH = "application/apply-patch+yaml"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
ALLOWED_LABEL_PREFIXES = ("nvidia.com/",)


def kube_client(kubeconfig: Path | None) -> k8s.ApiClient:
    configuration = k8s.Configuration()
    if kubeconfig is None:
        k8s_config.load_incluster_config(client_configuration=configuration)
    else:
        k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return k8s.ApiClient(configuration)


def _labels(node: Any) -> dict[str, str]:
    return dict((node.metadata.labels if node.metadata else None) or {})


class GpuOperatorApplier:
    name = "gpu-operator"

    def __init__(
        self, *, node: str, api: k8s.ApiClient, state_timeout: float, poll_seconds: float = 0.5
    ) -> None:
        self.node = node
        self.core = k8s.CoreV1Api(api)
        self.state_timeout = state_timeout
        self.poll_seconds = poll_seconds

    def apply(self, payload: dict[str, Any]) -> None:
        bundle = payload.get("bundle") or {}
        labels = {str(k): str(v) for k, v in (bundle.get("labels") or {}).items()}
        refused = [k for k in labels if not k.startswith(ALLOWED_LABEL_PREFIXES)]
        if refused:
            raise ApplyFailed("label_refused", f"labels outside nvidia.com/ are not the agent's: {refused}")
        try:
            for item in bundle.get("configmaps") or []:
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": item["name"], "namespace": item["namespace"]},
                    "data": {str(k): str(v) for k, v in (item.get("data") or {}).items()},
                }
                self.core.patch_namespaced_config_map(
                    item["name"],
                    item["namespace"],
                    body,
                    field_manager=FIELD_MANAGER,
                    force=True,
                    _content_type=APPLY_PATCH,
                )
            if labels:
                node_labels = dict(labels)
                current = _labels(self.core.read_node(self.node))
                if MIG_CONFIG in labels and current.get(MIG_CONFIG) != labels[MIG_CONFIG]:
                    # A new geometry is marked pending in the same write: the "success" left from the
                    # previous one must not be mistaken for this one's; mig-manager moves it on.
                    node_labels[MIG_CONFIG_STATE] = "pending"
                elif MIG_CONFIG_STATE in current:
                    node_labels[MIG_CONFIG_STATE] = current[MIG_CONFIG_STATE]
                body = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": self.node, "labels": node_labels},
                }
                self.core.patch_node(
                    self.node, body, field_manager=FIELD_MANAGER, force=True, _content_type=APPLY_PATCH
                )
        except ApiException as exc:
            raise ApplyFailed("kube_refused", f"the API server answered {exc.status}: {exc.reason}") from exc
        except Exception as exc:  # urllib3 connection errors: the cluster is unreachable
            raise ApplyFailed("kube_unreachable", f"the API server is unreachable: {exc}") from exc
        if MIG_CONFIG in labels:
            self._wait_for_mig(labels[MIG_CONFIG])

    def _wait_for_mig(self, wanted: str) -> None:
        deadline = time.monotonic() + self.state_timeout
        state = None
        while time.monotonic() < deadline:
            try:
                node = self.core.read_node(self.node)
            except Exception:  # a blip while mig-manager works: keep waiting until the deadline
                time.sleep(self.poll_seconds)
                continue
            labels = _labels(node)
            state = labels.get(MIG_CONFIG_STATE)
            if labels.get(MIG_CONFIG) == wanted and state == "success":
                return
            if labels.get(MIG_CONFIG) == wanted and state == "failed":
                raise ApplyFailed("mig_config_failed", f"mig-manager failed to apply {wanted!r}")
            time.sleep(self.poll_seconds)
        raise ApplyFailed(
            "mig_config_timeout", f"{MIG_CONFIG_STATE} still {state!r} after {self.state_timeout}s"
        )
