"""The /kubesim/ admin endpoints, to steer a CLI-run simulator:

GET    /kubesim/faults            the active faults
POST   /kubesim/faults            add one: {"kind": "error", "verbs": ["list"], "resources": ["pods"],
                                  "rate": 1.0, "count": 2, "status": 503, "seconds": 0.2,
                                  "retryAfter": 1, "afterEvents": 10}
DELETE /kubesim/faults[/<id>]     clear all, or one
POST   /kubesim/compact           {"history": true, "continue": true}: trim watch history (watches from an
                                  older resourceVersion get 410) and expire continue tokens
POST   /kubesim/close-watches     end every open watch stream cleanly
GET    /kubesim/stats             resourceVersion and object counts
GET    /kubesim/audit             audit annotations ValidatingAdmissionPolicies recorded (Audit action,
                                  auditAnnotations), oldest first
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kubesim import errors, registry
from kubesim.http_types import Request, Response, json_response

if TYPE_CHECKING:
    from kubesim.rest import Api


def _body(req: Request) -> dict[str, Any]:
    try:
        body = json.loads(req.body or b"{}")
    except ValueError as exc:
        raise errors.bad_request(f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise errors.bad_request("expected a JSON object")
    return body


def handle(api: Api, req: Request, path: str) -> Response:
    parts = [p for p in path.split("/") if p][1:]
    method = req.method
    if parts == ["faults"] and method == "GET":
        return json_response({"faults": [f.to_dict() for f in api.faults.list()]})
    if parts == ["faults"] and method == "POST":
        try:
            fault = api.faults.add_from_json(_body(req))
        except (TypeError, ValueError) as exc:
            raise errors.bad_request(str(exc)) from exc
        return json_response(fault.to_dict(), 201)
    if parts == ["faults"] and method == "DELETE":
        api.faults.clear()
        return json_response({"faults": []})
    if len(parts) == 2 and parts[0] == "faults" and method == "DELETE" and parts[1].isdigit():
        if not api.faults.remove(int(parts[1])):
            raise errors.ApiError(404, "NotFound", f"fault {parts[1]} not found")
        return json_response({"deleted": int(parts[1])})
    if parts == ["compact"] and method == "POST":
        body = _body(req)
        resource = body.get("resource")
        if (
            resource is not None
            and resource not in registry.BY_PLURAL
            and not any(r.plural == resource for r in api.store.custom_resources())
        ):
            raise errors.bad_request(f"unknown resource {resource}")
        rv = api.store.compact(resource) if body.get("history", True) else api.store.resource_version
        expired = api.paginator.expire_all() if body.get("continue", True) else 0
        return json_response({"compactedResourceVersion": str(rv), "expiredContinueTokens": expired})
    if parts == ["close-watches"] and method == "POST":
        return json_response({"closed": api.store.close_watches(_body(req).get("resource"))})
    if parts == ["stats"] and method == "GET":
        resources = [*registry.RESOURCES, *api.store.custom_resources()]
        counts = {r.plural: api.store.count(r.plural) for r in resources}
        return json_response({"resourceVersion": str(api.store.resource_version), "objects": counts})
    if parts == ["audit"] and method == "GET":
        return json_response({"events": list(api.store.admission.audit_events)})
    raise errors.resource_not_found_path(path)
