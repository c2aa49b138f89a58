"""The API's index: a link to every list route, as DefaultRouter's root view gives, for routers that
each app builds on its own. The routes are found in the URLconf by name, so the core needs to import
none of the apps that own them."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import APIRootView


def list_routes(patterns: list[Any], prefix: str = "") -> dict[str, str]:
    """Every router list route below `patterns`: its URL prefix ("tenants") -> its name ("tenant-list").
    A format-suffixed twin (`tenants.json`) has the same name and is left out."""
    found: dict[str, str] = {}
    for pattern in patterns:
        text = prefix + str(pattern.pattern).lstrip("^")
        if isinstance(pattern, URLResolver):
            found.update(list_routes(pattern.url_patterns, text))
        elif (
            isinstance(pattern, URLPattern)
            and pattern.name
            and pattern.name.endswith("-list")
            and text.endswith("/$")
            and "(?P" not in text  # the format-suffixed twin
        ):
            found.setdefault(text.removesuffix("/$"), pattern.name)
    return found


class ApiRootView(APIRootView):
    """Lists the list routes of the namespace it is mounted in (`api`), read from the URLconf when
    asked, so a route an app adds shows here without an edit to the core."""

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        match = request.resolver_match
        assert match is not None
        resolver = get_resolver(getattr(request, "urlconf", None))
        for namespace in match.namespaces:
            _, resolver = resolver.namespace_dict[namespace]
        self.api_root_dict = list_routes(resolver.url_patterns)
        return super().get(request, *args, **kwargs)
