"""Enumerate every API route from the URL configuration, so new endpoints are covered without edits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

API_PREFIX = "api/v1/"
_FORMAT_SUFFIX = re.compile(r"\\\.\(\?P<format>|<drf_format_suffix")


@dataclass(frozen=True)
class Route:
    template: str  # e.g. "api/v1/tenants/<pk>/"
    basename: str
    methods: frozenset[str] = field(default_factory=frozenset)
    is_detail: bool = False

    def url(self, pk: object = None) -> str:
        return "/" + self.template.replace("<pk>", str(pk))


def _pattern_text(pattern: Any) -> str:
    text = str(pattern.pattern)
    # Router regexes: ^tenants/(?P<pk>[^/.]+)/$ -> tenants/<pk>/
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", text)
    return text.lstrip("^").rstrip("$").replace("\\", "")


def _walk(patterns: list[Any], prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for pattern in patterns:
        text = prefix + _pattern_text(pattern)
        if isinstance(pattern, URLResolver):
            found.extend(_walk(pattern.url_patterns, text))
        elif isinstance(pattern, URLPattern) and not _FORMAT_SUFFIX.search(str(pattern.pattern)):
            found.append((text, pattern.callback))
    return found


def api_routes(urlconf: str | None = None) -> list[Route]:
    routes = []
    for template, callback in _walk(get_resolver(urlconf).url_patterns):
        if not template.startswith(API_PREFIX) or template == API_PREFIX:
            continue  # the browsable root only lists links
        actions = getattr(callback, "actions", None)
        if actions:
            basename = callback.initkwargs.get("basename") or template
            methods = frozenset(method.upper() for method in actions)
        else:
            view_class = getattr(callback, "view_class", None)
            basename = template.removeprefix(API_PREFIX).strip("/")
            methods = frozenset(
                method.upper()
                for method in ("get", "post", "put", "patch", "delete")
                if hasattr(view_class, method)
            )
        is_detail = "<pk>" in template or "<id>" in template
        routes.append(
            Route(
                template=template.replace("<id>", "<pk>"),
                basename=basename,
                methods=methods,
                is_detail=is_detail,
            )
        )
    return routes


# --- The web UI's routes ------------------------------------------------------------------------

# Served by others (Django's admin, auth, the API schema and docs) or not a page (health probes).
NOT_UI_PREFIXES = ("api/", "admin/", "oidc/", "healthz", "readyz", "login/", "logout/")


@dataclass(frozen=True)
class UiRoute:
    name: str
    template: str  # e.g. "tenants/<uuid:tenant_id>/"
    params: tuple[str, ...]


def _walk_named(patterns: list[Any], prefix: str = "", namespace: str = "") -> list[tuple[str, str]]:
    """(route, qualified name) of every named pattern, through every include(): the root includes each
    app's urls.py, so the pages are one level down or more."""
    found: list[tuple[str, str]] = []
    for pattern in patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            inner = namespace + (f"{pattern.namespace}:" if pattern.namespace else "")
            found.extend(_walk_named(pattern.url_patterns, text, inner))
        elif isinstance(pattern, URLPattern) and pattern.name is not None:
            found.append((text, namespace + pattern.name))
    return found


def ui_routes(urlconf: str | None = None) -> list[UiRoute]:
    """Every named page of the web UI, with the names of its path parameters."""
    routes = []
    for template, name in _walk_named(get_resolver(urlconf).url_patterns):
        if template.startswith(NOT_UI_PREFIXES):
            continue
        params = tuple(re.findall(r"<(?:\w+:)?(\w+)>", template))
        routes.append(UiRoute(name=name, template=template, params=params))
    return routes
