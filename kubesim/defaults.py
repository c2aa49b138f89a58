"""Defaulting the real server applies on write (the SetDefaults_* functions and a few admission
plugins), for the kinds where clients read defaulted fields back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesim import schema
from kubesim.custom import definitions as crd_definitions
from kubesim.custom import structural
from kubesim.registry import ResourceInfo


def apply(info: ResourceInfo, obj: dict[str, Any], *, admission: bool = False) -> None:
    """Defaults for `obj`; admission=True also runs the mutating admission plugins (creates only)."""
    if info.schemas is not None:
        structural.default(obj, schema.for_kind(info))
        return
    fn = _DEFAULTERS.get(info.plural)
    if fn is not None:
        fn(obj)
    if admission and info.plural == "pods":
        _default_toleration_seconds(obj)


def _container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in c:
        image = c.get("image", "")
        tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
        latest = image.endswith(":latest") or not tagged
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        port.setdefault("protocol", "TCP")
    resources = c["resources"]
    # Limits without requests: requests default to the limits (SetDefaults_Pod).
    if resources.get("limits"):
        requests = resources.setdefault("requests", {})
        for name, qty in resources["limits"].items():
            requests.setdefault(name, qty)


def qos_class(spec: dict[str, Any]) -> str:
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim.get(name)) != lim.get(name):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)
    status = obj.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))


def _default_toleration_seconds(obj: dict[str, Any]) -> None:
    # The DefaultTolerationSeconds admission plugin, which runs on create only.
    tolerations = obj["spec"].setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations if isinstance(t, dict)):
            tolerations.append(
                {"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )


def _namespace(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    # Since 1.21 every namespace carries this immutable label.
    meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def _exact_request(req: dict[str, Any]) -> None:
    req.setdefault("allocationMode", "ExactCount")
    if req["allocationMode"] == "ExactCount":
        req.setdefault("count", 1)


def _claim_spec(spec: dict[str, Any]) -> None:
    for request in (spec.get("devices") or {}).get("requests") or []:
        if isinstance(request, dict) and isinstance(request.get("exactly"), dict):
            _exact_request(request["exactly"])
        for sub in (request.get("firstAvailable") or []) if isinstance(request, dict) else []:
            if isinstance(sub, dict):
                _exact_request(sub)


def _resourceclaim(obj: dict[str, Any]) -> None:
    _claim_spec(obj.get("spec") or {})


def _resourceclaimtemplate(obj: dict[str, Any]) -> None:
    _claim_spec(((obj.get("spec") or {}).get("spec")) or {})


def _vap(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("failurePolicy", "Fail")
    constraints = spec.setdefault("matchConstraints", {})
    constraints.setdefault("matchPolicy", "Equivalent")
    constraints.setdefault("namespaceSelector", {})
    constraints.setdefault("objectSelector", {})


def _vapb(obj: dict[str, Any]) -> None:
    resources = obj.setdefault("spec", {}).get("matchResources")
    if isinstance(resources, dict):
        resources.setdefault("matchPolicy", "Equivalent")
        resources.setdefault("namespaceSelector", {})
        resources.setdefault("objectSelector", {})


def _pdb(obj: dict[str, Any]) -> None:
    # PodDisruptionBudgetStatus's counts are plain int32 fields (no omitempty): even a budget nobody
    # computed yet shows them as 0.
    status = obj.setdefault("status", {})
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        status.setdefault(key, 0)


def _event(obj: dict[str, Any]) -> None:
    obj.setdefault("involvedObject", {})


def _job(obj: dict[str, Any]) -> None:
    # SetDefaults_Job (batch/v1/defaults.go); the controller-uid selector the strategy generates is not
    # (kubesim's Jobs carry the selector their writer gave, if any).
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    pod_spec = (spec.get("template") or {}).get("spec")
    if isinstance(pod_spec, dict):
        pod_spec.setdefault("terminationGracePeriodSeconds", 30)
        pod_spec.setdefault("dnsPolicy", "ClusterFirst")
        pod_spec.setdefault("securityContext", {})
        pod_spec.setdefault("schedulerName", "default-scheduler")
        for key in ("containers", "initContainers"):
            for c in pod_spec.get(key) or []:
                if isinstance(c, dict):
                    _container(c)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _taint_time(taint: Any, now: str) -> None:
    # DeviceTaint.timeAdded: "Added automatically during create or update if not set."
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        taint["timeAdded"] = now


def _resourceslice(obj: dict[str, Any]) -> None:
    now = _now()
    for device in (obj.get("spec") or {}).get("devices") or []:
        for taint in (device.get("taints") or []) if isinstance(device, dict) else []:
            _taint_time(taint, now)


def _devicetaintrule(obj: dict[str, Any]) -> None:
    _taint_time((obj.get("spec") or {}).get("taint"), _now())


_DEFAULTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "resourceslices": _resourceslice,
    "devicetaintrules": _devicetaintrule,
    "pods": _pod,
    "namespaces": _namespace,
    "resourceclaims": _resourceclaim,
    "resourceclaimtemplates": _resourceclaimtemplate,
    "validatingadmissionpolicies": _vap,
    "validatingadmissionpolicybindings": _vapb,
    "events": _event,
    "poddisruptionbudgets": _pdb,
    "customresourcedefinitions": crd_definitions.default_crd,
    "jobs": _job,
}
