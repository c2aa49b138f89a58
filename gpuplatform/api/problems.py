"""Errors as RFC 9457 problem details (application/problem+json) with a stable ``code``."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import IntegrityError
from django.http import Http404, HttpResponse
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler

from gpuplatform.api.denials import record_denial
from gpuplatform.errors import DomainError
from gpuplatform.observability.request_id import current_request_id

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://gpuplatform.dev/problems/"

# DRF's own codes mapped to ours, so clients can switch on one vocabulary.
_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "validation_failed",
}


_GENERIC_FIELD_CODES = {
    "invalid",
    "required",
    "null",
    "blank",
    "max_length",
    "min_length",
    "invalid_choice",
    "max_value",
    "min_value",
    "not_a_list",
    "empty",
    "does_not_exist",
    "incorrect_type",
    "unique",
    "date",
    "datetime",
    "max_digits",
    "max_decimal_places",
    "max_whole_digits",
    "max_string_length",
}


def _field_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """Flatten DRF's nested error detail into [{field, message, code}]."""
    errors: list[dict[str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int) or str(key).isdigit():  # ListField / many=True errors keyed by index
                path = f"{prefix}[{key}]"
            elif key in ("non_field_errors", ""):
                path = prefix
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            errors.extend(_field_errors(value, path))
    elif isinstance(detail, list):
        for index, item in enumerate(detail):
            if isinstance(item, dict | list) and not isinstance(item, exceptions.ErrorDetail):
                errors.extend(_field_errors(item, f"{prefix}[{index}]"))
            else:
                errors.extend(_field_errors(item, prefix))
    else:
        errors.append({"field": prefix, "message": str(detail), "code": getattr(detail, "code", "invalid")})
    return errors


def problem_body(
    *, status_code: int, code: str, title: str, detail: str, instance: str = ""
) -> dict[str, Any]:
    """The RFC 9457 members every problem carries, with our stable ``code`` and the request id."""
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE_BASE + code,
        "title": title,
        "status": status_code,
        "detail": detail,
        "code": code,
        "request_id": current_request_id(),
    }
    if instance:
        body["instance"] = instance
    return body


def problem_response(
    *,
    status_code: int,
    code: str,
    title: str,
    detail: str,
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
    instance: str = "",
    members: dict[str, Any] | None = None,
) -> Response:
    body = problem_body(status_code=status_code, code=code, title=title, detail=detail, instance=instance)
    if errors:
        body["errors"] = errors
    # Extension members (RFC 9457 §3.2), e.g. the parameters a list accepts.
    body.update(members or {})
    return Response(body, status=status_code, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = _problem_for(exc, context)
    request = context.get("request")
    if response is not None and response.status_code in (401, 403) and isinstance(request, Request):
        record_denial(request, status_code=response.status_code, code=str(response.data.get("code", "")))
    return response


def _problem_for(exc: Exception, context: dict[str, Any]) -> Response | None:
    request = context.get("request")
    instance = request.path if request is not None else ""
    if isinstance(exc, DomainError):
        # A service may name every problem it found at once (``errors``), else the one field.
        errors = getattr(exc, "errors", None) or (
            [{"field": exc.field, "message": exc.message, "code": exc.code}] if exc.field else None
        )
        return problem_response(
            status_code=exc.status,
            code=exc.code,
            title=exc.title,
            detail=exc.message,
            errors=errors,
            instance=instance,
            members=getattr(exc, "members", None),
        )
    if isinstance(exc, IntegrityError):
        # A database constraint caught what the service checks missed (a race): a conflict, not a 500.
        return problem_response(
            status_code=409,
            code="conflict",
            title="Conflict",
            detail="The change conflicts with the current state; reload and retry.",
            instance=instance,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    code = next((value for klass, value in _CODES.items() if isinstance(exc, klass)), None)
    detail = exc.detail
    custom_code = getattr(exc, "problem_code", None)
    if (
        isinstance(detail, exceptions.ErrorDetail)
        and detail.code
        and detail.code
        not in {
            "invalid",
            "error",
            "parse_error",
            "not_found",
            "permission_denied",
            "throttled",
            "authentication_failed",
            "not_authenticated",
            "method_not_allowed",
            "unsupported_media_type",
        }
    ):
        custom_code = custom_code or str(detail.code)
    code = custom_code or code or "error"
    headers = {
        key: value for key, value in response.headers.items() if key in {"Retry-After", "WWW-Authenticate"}
    }
    if isinstance(exc, exceptions.ValidationError):
        errors = _field_errors(detail)
        # One domain-specific code across all errors (unknown_field, invalid_slug…) is the problem's code;
        # DRF's generic codes (required, max_length…) stay per field under "validation_failed".
        distinct = {error["code"] for error in errors}
        if not custom_code and len(distinct) == 1 and not distinct & _GENERIC_FIELD_CODES:
            code = distinct.pop()
        message = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        return problem_response(
            status_code=status.HTTP_400_BAD_REQUEST,
            code=code,
            title="Validation failed",
            detail=message or "The request is invalid.",
            errors=errors,
            instance=instance,
        )
    title = {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        406: "Not acceptable",
        415: "Unsupported media type",
        429: "Too many requests",
    }.get(response.status_code, "Error")
    return problem_response(
        status_code=response.status_code,
        code=code,
        title=title,
        detail=str(detail) if not isinstance(detail, dict | list) else title,
        headers=headers,
        instance=instance,
    )


def plain_problem_response(
    *,
    status_code: int,
    code: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    instance: str = "",
) -> HttpResponse:
    """A problem+json answer outside DRF (middleware, Django's 404 and 500 handlers)."""
    body = problem_body(status_code=status_code, code=code, title=title, detail=detail, instance=instance)
    response = HttpResponse(json.dumps(body), status=status_code, content_type=PROBLEM_CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response
