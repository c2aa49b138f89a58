"""The router each app's `api/urls.py` builds its routes with, and the one index of them all."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path
from rest_framework.routers import DefaultRouter
from rest_framework.urlpatterns import format_suffix_patterns

from gpuplatform.api.root import ApiRootView


class ApiRouter(DefaultRouter):
    """DefaultRouter's routes and format suffixes, without an index of its own: each app has a router,
    and one index (`api_root_urls`) lists them all."""

    include_root_view = False
    trailing_slash = "/"


def api_root_urls() -> list[URLPattern | URLResolver]:
    """The browsable index at the API's root, `api-root`, with DefaultRouter's format suffixes."""
    return format_suffix_patterns([path("", ApiRootView.as_view(), name="api-root")])
