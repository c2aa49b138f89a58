"""The isolation check: a user of tenant A must not see or touch tenant B's objects on any route.

For each API route: on a detail route every method answers 404 for B's object (or 405 where the
route has no such method) and leaves it unchanged; on a list route no page mentions B's object.
Routes without an entry in FOREIGN_OBJECTS (object routes) or SELF_ROUTES (routes about the caller)
are violations too, so a new endpoint cannot skip the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db import models
from rest_framework.test import APIClient

from tests.isolation.routes import Route, api_routes

# basename -> a function(cast) returning an object that alice (tenant-admin of vision) and charlie
# (no tenant) must not see: it belongs to nlp or globex, or to bob.
ForeignFactory = Callable[[Any], models.Model]

BODY = {"display_name": "hijacked", "role": "viewer", "name": "hijacked", "slug": "hijacked"}


def _snapshot(obj: models.Model) -> dict[str, Any] | None:
    return type(obj)._default_manager.filter(pk=obj.pk).values().first()


def _mentions(payload: Any, needle: str) -> bool:
    return needle in json.dumps(payload, default=str)


def _all_pages(client: APIClient, url: str) -> list[Any]:
    pages: list[Any] = []
    next_url: str | None = url + "?page_size=500"
    seen = 0
    while next_url and seen < 50:
        response = client.get(next_url)
        if response.status_code != 200:
            pages.append({"status": response.status_code})
            break
        if getattr(response, "streaming", False):  # a streamed export: its text is the page
            pages.append(b"".join(response.streaming_content).decode())  # type: ignore[attr-defined]
            break
        body = response.json()
        pages.append(body)
        next_url = body.get("next") if isinstance(body, dict) else None
        seen += 1
    return pages


def check_isolation(
    *,
    cast: Any,
    viewers: dict[str, APIClient],
    foreign_objects: dict[str, ForeignFactory],
    self_routes: set[str],
    urlconf: str | None = None,
) -> list[str]:
    violations: list[str] = []
    routes = api_routes(urlconf)
    for route in routes:
        if route.basename in self_routes:
            continue
        factory = foreign_objects.get(route.basename)
        if factory is None:
            violations.append(f"{route.template}: no isolation fixture for basename {route.basename!r}")
            continue
        obj = factory(cast)
        needle = str(obj.pk)
        for viewer_name, client in viewers.items():
            violations.extend(_check_route(route, obj, needle, viewer_name, client))
    return violations


def _check_route(route: Route, obj: models.Model, needle: str, viewer: str, client: APIClient) -> list[str]:
    problems: list[str] = []
    if not route.is_detail:
        if "GET" in route.methods:
            for page in _all_pages(client, route.url()):
                if _mentions(page, needle):
                    problems.append(f"{viewer}: GET {route.template} lists foreign object {needle}")
                if isinstance(page, dict) and page.get("status", 200) >= 500:
                    problems.append(f"{viewer}: GET {route.template} failed with {page['status']}")
        return problems
    before = _snapshot(obj)
    for method in ("GET", "PUT", "PATCH", "DELETE", "POST"):
        if method == "POST" and method not in route.methods:
            continue
        call = getattr(client, method.lower())
        response = (
            call(route.url(obj.pk), BODY, format="json") if method != "GET" else call(route.url(obj.pk))
        )
        allowed = method in route.methods
        expected = {404} if allowed else {404, 405}
        if response.status_code not in expected:
            problems.append(
                f"{viewer}: {method} {route.template} on a foreign object answered {response.status_code}, "
                f"expected {sorted(expected)}"
            )
    if _snapshot(obj) != before:
        problems.append(f"{viewer}: {route.template} changed a foreign object")
    return problems
