"""Django's 404 and 500 handlers: problem+json under /api/, a page with navigation elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader

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
