"""API errors, rendered as the `Status` objects a real kube-apiserver sends.

Message texts follow k8s.io/apimachinery/pkg/api/errors so that clients which match on them (and our
tests that compare with recorded server answers) see the same strings.
"""

from __future__ import annotations

from typing import Any

from kubesim.registry import ResourceInfo


class ApiError(Exception):
    """An error answered as a `Status` (kind Status, apiVersion v1, status Failure)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        causes: list[dict[str, Any]] | None = None,
        *,
        name: str | None = None,
        group: str | None = None,
        kind: str | None = None,
        uid: str | None = None,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.causes = causes or []
        self.name = name
        self.group = group
        self.kind = kind
        self.uid = uid
        self.retry_after = retry_after
        self.headers = headers or {}

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            status["reason"] = self.reason
        details: dict[str, Any] = {}
        # apimachinery omits empty detail fields (omitempty), so only present ones are written,
        # in the Go struct's order: name, group, kind, uid, causes, retryAfterSeconds.
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            status["details"] = details
        status["code"] = self.status
        return status

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.reason!r}, {self.message!r})"


def _qualified(info: ResourceInfo) -> str:
    # "pods" for the core group, "deviceclasses.resource.k8s.io" elsewhere (schema.GroupResource.String()).
    return f"{info.plural}.{info.group}" if info.group else info.plural


def _qualified_kind(info: ResourceInfo) -> str:
    return f"{info.kind}.{info.group}" if info.group else info.kind


def not_found(info: ResourceInfo, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(info)} "{name}" not found',
        name=name,
        group=info.group or None,
        kind=info.plural,
    )


def namespace_not_found(namespace: str) -> ApiError:
    return ApiError(404, "NotFound", f'namespaces "{namespace}" not found', name=namespace, kind="namespaces")


def already_exists(info: ResourceInfo, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(info)} "{name}" already exists',
        name=name,
        group=info.group or None,
        kind=info.plural,
    )


def conflict(info: ResourceInfo, name: str, detail: str, *, subresource: str | None = None) -> ApiError:
    resource = _qualified(info) + (f"/{subresource}" if subresource else "")
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": {detail}',
        name=name,
        group=info.group or None,
        kind=info.plural + (f"/{subresource}" if subresource else ""),
    )


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def stale(info: ResourceInfo, name: str) -> ApiError:
    return conflict(info, name, STALE_OBJECT)


def field_cause(reason: str, field: str, message: str) -> dict[str, Any]:
    return {"reason": reason, "message": message, "field": field}


def invalid(info: ResourceInfo, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 Invalid: `Kind.group "name" is invalid: field: message` (several joined in brackets)."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{_qualified_kind(info)} "{name}" is invalid: {joined}',
        causes,
        name=name,
        group=info.group or None,
        kind=info.kind,
    )


def bad_request(message: str, causes: list[dict[str, Any]] | None = None) -> ApiError:
    return ApiError(400, "BadRequest", message, causes)


def gone(message: str) -> ApiError:
    # Expired is what both "too old resource version" (watch) and an expired continue token answer.
    return ApiError(410, "Expired", message)


def too_old_resource_version(requested: int, oldest: int) -> ApiError:
    return gone(f"too old resource version: {requested} ({oldest})")


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list."
)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
        f"application/strategic-merge-patch+json (got {content_type})",
    )


def unsupported_body_type(content_type: str) -> ApiError:
    # The real server lists protobuf too; kubesim decodes JSON and YAML only.
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json, application/yaml (got {content_type})",
    )


def not_acceptable() -> ApiError:
    return ApiError(
        406, "NotAcceptable", "the server was unable to respond with a content type that the client supports"
    )


def internal_error(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", [{"message": message}])


def service_unavailable(message: str = "the server is currently unable to handle the request") -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def too_many_requests(retry_after: int) -> ApiError:
    return ApiError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        retry_after=retry_after,
        headers={"Retry-After": str(retry_after)},
    )


def forbidden_field(info: ResourceInfo, name: str, field: str, message: str) -> ApiError:
    return invalid(info, name, [field_cause("FieldValueForbidden", field, f"Forbidden: {message}")])


def resource_not_found_path(path: str) -> ApiError:
    # An unknown URL is a bare 404 with reason NotFound and message "the server could not find the
    # requested resource" (what kubectl prints as "the server doesn't have a resource type").
    return ApiError(404, "NotFound", "the server could not find the requested resource")
