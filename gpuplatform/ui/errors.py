"""Django's 400, 404 and 500 handlers: problem+json under /api/, a page with navigation elsewhere."""

from __future__ import annotations

from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader
from django.views import defaults

from gpuplatform.api.problems import plain_problem_response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return plain_problem_response(
            status_code=404,
            code="not_found",
            title="Not found",
            detail="No API endpoint or object at this path.",
            instance=request.path,
        )
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return plain_problem_response(
            status_code=500,
            code="server_error",
            title="Server error",
            detail="The server failed to answer; the error is logged with this request id.",
            instance=request.path,
        )
    # No request context: the failure may be in what the context processors read.
    return HttpResponse(loader.get_template("500.html").render({}), status=500)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400 (a refused Host, a body over DATA_UPLOAD_MAX_MEMORY_SIZE, other suspicious
    requests): problem+json under /api/ like every other API error."""
    if not _is_api(request):
        return defaults.bad_request(request, exception or SuspiciousOperation())
    if isinstance(exception, RequestDataTooBig | TooManyFieldsSent | TooManyFilesSent):
        return plain_problem_response(
            status_code=413,
            code="request_too_large",
            title="Request too large",
            detail="The request body is larger than this server accepts.",
            instance=request.path,
        )
    if isinstance(exception, DisallowedHost):
        return plain_problem_response(
            status_code=400,
            code="bad_host",
            title="Bad request",
            detail="The Host header names no host this server answers for.",
        )  # no instance: the path is fine, the host is not
    return plain_problem_response(
        status_code=400, code="bad_request", title="Bad request", detail="The request is malformed.",
        instance=request.path,
    )  # fmt: skip
