"""POST pods/<name>/eviction: the Eviction API with PodDisruptionBudgets, as the API server answers it.

Follows pkg/registry/core/pod/storage/eviction.go (Kubernetes 1.32+):
- the body is a policy/v1 (or v1beta1) Eviction whose metadata.name must be the pod's (else 400);
  its deleteOptions (dryRun, preconditions, gracePeriodSeconds, propagationPolicy) govern the deletion,
  and ?dryRun on the request must agree with them;
- a missing pod is 404; a pod that is Pending, Succeeded, Failed or already being deleted is deleted
  without looking at budgets (it is not running, so evicting it disrupts nothing);
- more than one PDB selecting the pod is 500; none: the pod is deleted;
- one: an unready pod is deleted without spending the budget when the PDB says
  `unhealthyPodEvictionPolicy: AlwaysAllow`, or when the budget is healthy (currentHealthy >=
  desiredHealthy > 0, the IfHealthyBudget default); otherwise the budget must allow a disruption.
  A status older than the spec (observedGeneration < generation) or no disruptions allowed is 429
  TooManyRequests with a `DisruptionBudget` cause; allowed: disruptionsAllowed is decremented and the
  pod recorded in status.disruptedPods (so the disruption controller does not count it healthy while it
  goes), then the pod is deleted.
Success answers a Status with code 201, as every create handler does for a Status result.
All of it happens under the store lock, so two evictions never spend the same disruption.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml

from kubesim import errors, protobuf, registry
from kubesim.disruption import is_pod_ready, pdb_selects, update_allowed_condition
from kubesim.errors import ApiError
from kubesim.http_types import Request, Response, json_response
from kubesim.strategy import WriteOptions

if TYPE_CHECKING:
    from kubesim.store import Store

# The eviction handler refuses to grow status.disruptedPods past this (MaxDisruptedPodSize).
MAX_DISRUPTED_PODS = 2000
BUDGET_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")


def _body(req: Request) -> dict[str, Any]:
    ctype = req.content_type
    try:
        if ctype == protobuf.MEDIA_TYPE:
            body: Any = protobuf.eviction(req.body or b"")
        elif ctype == "application/yaml":
            body = yaml.safe_load(req.body or b"")
        elif not req.body or ctype == "application/json":
            body = json.loads(req.body or b"null")
        else:
            raise errors.unsupported_body_type(ctype)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc
    if not isinstance(body, dict):
        raise errors.bad_request(
            'Eviction in version "v1" cannot be handled as a Eviction: the body must be an object'
        )
    if body.get("kind") not in (None, "Eviction") or body.get("apiVersion") not in (None, *EVICTION_VERSIONS):
        raise errors.bad_request(
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected "
            "API version (policy/v1)"
        )
    return body


def _delete_options(req: Request, eviction: dict[str, Any]) -> dict[str, Any]:
    """The eviction's deleteOptions with the request's ?dryRun merged in (propagateDryRun)."""
    options = dict(eviction.get("deleteOptions") or {})
    query_dry = req.query.get("dryRun")
    body_dry = options.get("dryRun")
    for value in ([query_dry] if query_dry else []) + list(body_dry or []):
        if value != "All":
            raise errors.bad_request(f'Invalid dry run value "{value}": the only allowed value is "All"')
    if query_dry and body_dry and [query_dry] != list(body_dry):
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: {[query_dry]} and {list(body_dry)}"
        )
    if query_dry:
        options["dryRun"] = [query_dry]
    policy = options.get("propagationPolicy")
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.bad_request(
            f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"'
        )
    return options


def _can_ignore_pdb(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase", "Pending")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _pdb_forbidden(name: str, reason: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{name}" is forbidden: {reason}',
        name=name,
        group="policy",
        kind="poddisruptionbudget",
    )


def _too_many_requests(cause: str) -> ApiError:
    # NewTooManyRequests(message, 0): retryAfterSeconds 0 is omitted, so no Retry-After header either.
    causes = [{"reason": "DisruptionBudget", "message": cause}]
    return ApiError(429, "TooManyRequests", BUDGET_MESSAGE, causes)


def _check_and_decrement(store: Store, pdb: dict[str, Any], pod_name: str, dry_run: bool) -> None:
    meta, status = pdb["metadata"], dict(pdb.get("status") or {})
    name = meta["name"]
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 1):
        raise _too_many_requests(f"The disruption budget {name} is still being processed by the server.")
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _pdb_forbidden(name, "pdb disruptions allowed is negative")
    disrupted = dict(status.get("disruptedPods") or {})
    if len(disrupted) > MAX_DISRUPTED_PODS:
        raise _pdb_forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if allowed == 0:
        raise _too_many_requests(
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
            f"and has {int(status.get('currentHealthy') or 0)} currently"
        )
    status["disruptionsAllowed"] = allowed - 1
    if status["disruptionsAllowed"] == 0:
        status["conditions"] = update_allowed_condition(status, store.now())
    if dry_run:
        return
    disrupted[pod_name] = store.now()
    status["disruptedPods"] = disrupted
    updated = json.loads(json.dumps(pdb))
    updated["status"] = status
    store.update_entry(
        "poddisruptionbudgets",
        meta["namespace"],
        name,
        updated,
        WriteOptions(field_manager="kube-apiserver", api_version="policy/v1"),
        subresource="status",
    )


def matching_pdbs(store: Store, pod: dict[str, Any]) -> list[dict[str, Any]]:
    namespace = pod["metadata"]["namespace"]
    return [pdb for pdb in store.list_readonly("poddisruptionbudgets", namespace) if pdb_selects(pdb, pod)]


def evict(store: Store, req: Request, namespace: str, name: str) -> Response:
    eviction = _body(req)
    evicted_name = (eviction.get("metadata") or {}).get("name", "")
    if evicted_name != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    evict_pod(store, namespace, name, _delete_options(req, eviction))
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
    )


def evict_pod(store: Store, namespace: str, name: str, options: dict[str, Any] | None = None) -> None:
    """The eviction itself, also for Python callers: raises the ApiError the endpoint would answer."""
    options = options or {}
    dry_run = options.get("dryRun") == ["All"]
    pods = registry.by_plural("pods")
    with store.lock:
        entry = store.get_entry("pods", namespace, name)
        if entry is None:
            raise errors.not_found(pods, name)
        pod = entry.obj
        if not _can_ignore_pdb(pod):
            pdbs = matching_pdbs(store, pod)
            if len(pdbs) > 1:
                raise ApiError(
                    500,
                    "",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                    "does not support.",
                )
            if pdbs and not _bypasses_budget(pdbs[0], pod):
                _check_and_decrement(store, pdbs[0], name, dry_run)
        store.delete_entry(
            "pods",
            namespace,
            name,
            propagation=options.get("propagationPolicy"),
            preconditions=options.get("preconditions"),
            dry_run=dry_run,
            grace_period=options.get("gracePeriodSeconds"),
        )


def _bypasses_budget(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    """An unready pod counts for nothing healthy, so evicting it may leave the budget untouched."""
    if is_pod_ready(pod):
        return False
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return int(status.get("currentHealthy") or 0) >= desired > 0
