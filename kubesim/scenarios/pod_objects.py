"""Pod objects in each lifecycle state, as the API server returns them after the kubelet reported.

A 5,000-node scenario holds 150,000 pods, so the builder shares the sub-structures that are equal
between pods (container specs, tolerations, selectors, condition lists, container statuses) instead of
building a copy for each. Consumers must treat scenario objects as read-only: the kubesim store
serializes each object on load and never mutates the nested values it did not create.
"""

from __future__ import annotations

from typing import Any

from kubesim.scenarios.ids import Timestamps

RUN_SECONDS = "kubesim.gpuplatform.io/run-seconds"
# How long the pod's containers take to stop after SIGTERM (default 0: at once), capped by the grace period.
TERMINATION_SECONDS = "kubesim.gpuplatform.io/termination-seconds"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

IMAGES = {
    "train": "nvcr.io/nvidia/pytorch:24.05-py3",
    "finetune": "nvcr.io/nvidia/nemo:24.07",
    "infer": "vllm/vllm-openai:v0.6.3",
    "triton": "nvcr.io/nvidia/tritonserver:24.05-py3",
    "notebook": "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11",
    "eval": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
    # gpu-operator and HAMi daemons
    "gpu-feature-discovery": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "nvidia-device-plugin-daemonset": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "nvidia-container-toolkit-daemonset": "nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubuntu20.04",
    "nvidia-dcgm-exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
    "nvidia-operator-validator": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2",
    "nvidia-dra-driver-gpu-kubelet-plugin": "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
    "hami-device-plugin": "projecthami/hami:v2.6.0",
}
SYSTEM_KINDS = frozenset(k for k in IMAGES if k.startswith(("gpu-", "nvidia-", "hami-")))


class PodFactory:
    """Builds pods; caches every shareable piece by value."""

    def __init__(self, ts: Timestamps) -> None:
        self.ts = ts
        self._containers: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        self._selectors: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self._labels: dict[tuple[str, str], dict[str, str]] = {}
        self._annotations: dict[int, dict[str, str]] = {}
        self._conditions: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        self._statuses: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        # Per factory, not module constants: the store's defaulting appends to tolerations in place.
        self.gpu_tolerations: list[dict[str, Any]] = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
        self.job_finalizers = [JOB_TRACKING_FINALIZER]

    def containers(
        self, kind: str, resources: tuple[tuple[str, str], ...], cpu: str, memory: str, claims: bool = False
    ) -> list[dict[str, Any]]:
        key = (kind, resources, cpu, memory, claims)
        cached = self._containers.get(key)
        if cached is None and kind in SYSTEM_KINDS:
            cached = [{"name": kind, "image": IMAGES[kind], "resources": {}}]
            self._containers[key] = cached
        if cached is None:
            requests = {"cpu": cpu, "memory": memory}
            limits = {"memory": memory}
            for name, value in resources:
                # Extended resources cannot be overcommitted: requests must equal limits.
                requests[name] = value
                limits[name] = value
            container: dict[str, Any] = {
                "name": "main",
                "image": IMAGES[kind],
                "resources": {"requests": requests, "limits": limits},
            }
            if claims:
                container["resources"]["claims"] = [{"name": "gpu"}]
            cached = [container]
            self._containers[key] = cached
        return cached

    def selector(self, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
        cached = self._selectors.get(pairs)
        if cached is None:
            cached = dict(pairs)
            self._selectors[pairs] = cached
        return cached

    def labels(self, kind: str, namespace: str) -> dict[str, str]:
        key = (kind, namespace)
        cached = self._labels.get(key)
        if cached is None:
            if kind in SYSTEM_KINDS:
                cached = {"app": kind, "app.kubernetes.io/part-of": namespace}
            else:
                cached = {"app.kubernetes.io/name": kind, "app.kubernetes.io/part-of": namespace}
            self._labels[key] = cached
        return cached

    def run_seconds(self, seconds: int) -> dict[str, str]:
        cached = self._annotations.get(seconds)
        if cached is None:
            cached = {RUN_SECONDS: str(seconds)}
            self._annotations[seconds] = cached
        return cached

    def conditions(self, state: str, since: int, message: str = "") -> list[dict[str, Any]]:
        key = (state, since, message)
        cached = self._conditions.get(key)
        if cached is not None:
            return cached
        at = self.ts.ago(since)

        def cond(
            kind: str, status: str, reason: str | None = None, text: str | None = None
        ) -> dict[str, Any]:
            entry: dict[str, Any] = {
                "type": kind,
                "status": status,
                "lastProbeTime": None,
                "lastTransitionTime": at,
            }
            if reason:
                entry["reason"] = reason
            if text:
                entry["message"] = text
            return entry

        if state == "Running":
            cached = [
                cond("PodReadyToStartContainers", "True"),
                cond("Initialized", "True"),
                cond("Ready", "True"),
                cond("ContainersReady", "True"),
                cond("PodScheduled", "True"),
            ]
        elif state == "Starting":
            not_ready = "containers with unready status: [main]"
            cached = [
                cond("PodReadyToStartContainers", "False"),
                cond("Initialized", "True"),
                cond("Ready", "False", "ContainersNotReady", not_ready),
                cond("ContainersReady", "False", "ContainersNotReady", not_ready),
                cond("PodScheduled", "True"),
            ]
        elif state in ("Succeeded", "Failed"):
            cached = [
                cond("PodReadyToStartContainers", "False"),
                cond("Initialized", "True"),
                cond("Ready", "False", "PodCompleted"),
                cond("ContainersReady", "False", "PodCompleted"),
                cond("PodScheduled", "True"),
            ]
        elif state == "Unschedulable":
            cached = [cond("PodScheduled", "False", "Unschedulable", message)]
        else:
            cached = []
        self._conditions[key] = cached
        return cached

    def container_statuses(self, state: str, kind: str, started: int, finished: int) -> list[dict[str, Any]]:
        key = (state, kind, started, finished)
        cached = self._statuses.get(key)
        if cached is not None:
            return cached
        name = kind if kind in SYSTEM_KINDS else "main"
        base: dict[str, Any] = {"name": name, "image": IMAGES[kind], "imageID": "", "restartCount": 0}
        if state == "Running":
            base.update(ready=True, started=True, state={"running": {"startedAt": self.ts.ago(started)}})
        elif state == "Starting":
            base.update(ready=False, started=False, state={"waiting": {"reason": "ContainerCreating"}})
        else:
            code, reason = (0, "Completed") if state == "Succeeded" else (1, "Error")
            base.update(
                ready=False,
                started=False,
                state={
                    "terminated": {
                        "exitCode": code,
                        "reason": reason,
                        "startedAt": self.ts.ago(started),
                        "finishedAt": self.ts.ago(finished),
                    }
                },
            )
        cached = [base]
        self._statuses[key] = cached
        return cached

    def pod(
        self,
        *,
        name: str,
        namespace: str,
        uid: str,
        kind: str,
        state: str,  # Running | Starting | Succeeded | Failed | Pending | Unschedulable
        containers: list[dict[str, Any]],
        age: int,
        node: str | None = None,
        node_ip: str | None = None,
        pod_ip: str | None = None,
        node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, Any]] | None = None,
        scheduler: str | None = None,
        annotations: dict[str, str] | None = None,
        resource_claims: list[dict[str, Any]] | None = None,
        claim_statuses: list[dict[str, Any]] | None = None,
        deleting_since: int | None = None,
        message: str = "",
    ) -> dict[str, Any]:
        age -= age % 60  # minute granularity, so timestamps and condition lists are shared
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "labels": self.labels(kind, namespace),
            "creationTimestamp": self.ts.ago(age),
        }
        if annotations:
            metadata["annotations"] = annotations
        if deleting_since is not None:
            metadata["deletionTimestamp"] = self.ts.ago(deleting_since)
            metadata["deletionGracePeriodSeconds"] = 30
            metadata["finalizers"] = self.job_finalizers
        spec: dict[str, Any] = {
            "containers": containers,
            "restartPolicy": "Always" if kind in SYSTEM_KINDS else "Never",
        }
        if node:
            spec["nodeName"] = node
        if node_selector:
            spec["nodeSelector"] = node_selector
        if tolerations:
            spec["tolerations"] = tolerations
        if scheduler:
            spec["schedulerName"] = scheduler
        if resource_claims:
            spec["resourceClaims"] = resource_claims
        phase = {"Starting": "Pending", "Unschedulable": "Pending"}.get(state, state)
        status: dict[str, Any] = {
            "phase": phase,
            "qosClass": "BestEffort" if kind in SYSTEM_KINDS else "Burstable",
        }
        conditions = self.conditions(state, max(age - 60, 0), message)
        if conditions:
            status["conditions"] = conditions
        if node:
            started = max(age - 60, 0)
            finished = max(started - 600, 0) if state in ("Succeeded", "Failed") else 0
            status["hostIP"] = node_ip
            status["podIP"] = pod_ip
            status["startTime"] = self.ts.ago(started)
            status["containerStatuses"] = self.container_statuses(state, kind, started, finished)
        if claim_statuses:
            status["resourceClaimStatuses"] = claim_statuses
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
