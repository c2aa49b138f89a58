"""The service's URLs plus one API view that fails, to see what a caller gets from an unhandled error."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from gpuplatform import urls


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("kaboom: internal detail")


urlpatterns = [path("api/v1/boom/", boom), *urls.urlpatterns]
handler404 = urls.handler404
handler500 = urls.handler500
