"""Each app owns its routes: the root URLconf includes every domain app's `urls.py` and `api/urls.py` by
dotted path and imports none of them, each route is served by a view of the app whose routes include
it, every URL prefix has one owner, and a path no route matches is a plain 404."""

from __future__ import annotations

import ast
import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils.module_loading import import_string

REPO = Path(__file__).resolve().parents[2]
DOMAIN_APPS = ("tenants", "inventory", "quotas", "policies", "metering")
API = "api/v1/"

# Who serves each first segment of a path: a page prefix, or an API prefix under api/v1/.
PAGE_OWNERS = {
    "": "gpuplatform",  # the overview
    **dict.fromkeys(("healthz", "readyz", "metrics"), "gpuplatform"),
    "tokens": "gpuplatform",
    "audit": "gpuplatform",
    "login": "tenants",  # sign-in, with or without SSO (tenants/sso)
    "tenants": "tenants",
    "memberships": "tenants",
    "inventory": "inventory",
    "queues": "quotas",
    "catalogue": "quotas",
    "onboarding": "quotas",
    "policies": "policies",
    "metering": "metering",
    "slos": "metering",
}
API_OWNERS = {
    "": "gpuplatform",  # the index
    "me": "gpuplatform",
    "tokens": "gpuplatform",
    "audit-events": "gpuplatform",
    **dict.fromkeys(("tenants", "memberships"), "tenants"),
    **dict.fromkeys(
        (
            "clusters",
            "node-pools",
            "nodes",
            "gpus",
            "resource-claims",
            "allocations",
            "fragmentation",
            "workloads",
        ),
        "inventory",
    ),
    **dict.fromkeys(
        (
            "flavors",
            "quotas",
            "budgets",
            "priority-classes",
            "queues",
            "capacity-requests",
            "workload-checks",
        ),
        "quotas",
    ),
    **dict.fromkeys(
        (
            "sharing-policies",
            "policy-revisions",
            "admission-rules",
            "admission-applies",
            "agent-bootstrap-tokens",
            "agents",
            "rollouts",
        ),
        "policies",
    ),
    **dict.fromkeys(
        (
            "usage",
            "rate-cards",
            "billing-periods",
            "reports",
            "report-jobs",
            "metrics-sources",
            "slos",
            "slo-alerts",
            "alert-receivers",
            "alert-deliveries",
            "statements",
            "credits",
            "cost-models",
            "costs",
            "exchange-rates",
        ),
        "metering",
    ),
}
# The root's routes served by Django or libraries: probes and metrics are the core's own modules.
NOT_OURS = ("admin/", "oidc/", "logout/", "api/schema/", "api/docs/", "api/redoc/")


def _module(callback: Any) -> str:
    view = getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback
    return view.__module__


def _routes(patterns: list[Any], prefix: str = "", urlconf: str = "gpuplatform.urls") -> list[tuple]:
    """(full route, the URLconf module that declares it, the view's module) for every pattern."""
    found = []
    for pattern in patterns:
        text = prefix + str(pattern.pattern).lstrip("^")
        if isinstance(pattern, URLResolver):
            # include("quotas.urls") holds the module; include(router.urls) a list, declared here.
            inner = getattr(pattern.urlconf_name, "__name__", urlconf)
            found.extend(_routes(pattern.url_patterns, text, inner))
        elif isinstance(pattern, URLPattern):
            found.append((text, urlconf, _module(pattern.callback)))
    return found


def _first_segment(route: str) -> str:
    return re.split(r"[/\\.<(]", route, maxsplit=1)[0]


def _source_tree(path: str) -> ast.Module:
    return ast.parse((REPO / path).read_text())


@pytest.mark.parametrize("path", ["gpuplatform/urls.py", "gpuplatform/asgi.py"])
def test_the_core_composition_imports_no_domain_app(path):
    imported = set()
    for node in ast.walk(_source_tree(path)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])

    assert imported & {*DOMAIN_APPS, "demo"} == set()


def test_the_root_includes_each_apps_pages_and_api_by_dotted_path():
    included = {
        node.args[0].value
        for node in ast.walk(_source_tree("gpuplatform/urls.py"))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "include"
        and isinstance(node.args[0], ast.Constant)
    }

    assert {f"{app}.urls" for app in DOMAIN_APPS} | {f"{app}.api.urls" for app in DOMAIN_APPS} <= included


def test_every_route_is_served_by_the_app_that_declares_it_and_owns_its_prefix():
    strays, unowned = [], []
    for route, urlconf, view_module in _routes(get_resolver().url_patterns):
        if route.startswith(NOT_OURS):
            continue
        declared_by = urlconf.split(".")[0]
        if view_module.split(".")[0] != declared_by:
            strays.append(f"{route}: declared in {urlconf}, served by {view_module}")
        owners = API_OWNERS if route.startswith(API) else PAGE_OWNERS
        segment = _first_segment(route.removeprefix(API))
        if owners.get(segment) != declared_by:
            unowned.append(
                f"{route}: declared in {urlconf}, prefix {segment!r} owned by {owners.get(segment)}"
            )

    assert strays == []
    assert unowned == [], "a new prefix: name its app in PAGE_OWNERS or API_OWNERS"


def _sample(param: str, route: str) -> Any:
    converter = re.search(rf"<(\w+):{param}>", route)
    kind = converter.group(1) if converter else "pk"
    return {"uuid": uuid.uuid4(), "int": 7, "slug": "flavors", "str": "approve"}.get(kind, uuid.uuid4())


def test_every_named_route_reverses_to_a_path_that_resolves_back_to_it():
    # Catches one app's pattern shadowing another's (agents/<pk>/ taking agents/register/ for an id).
    shadowed, seen = [], set()
    for route, name in _named(get_resolver().url_patterns):
        if route.startswith(("admin/", "oidc/")) or "format>" in route or name in seen:
            continue
        seen.add(name)
        params = re.findall(r"<(?:\w+:)?(\w+)>", route)
        path = reverse(name, kwargs={param: _sample(param, route) for param in params})
        match = resolve(path)
        if match.view_name != name:
            shadowed.append(f"{path}: {name} expected, {match.view_name} answered")

    assert {"api:agent-register", "api:report-export", "tenant-create", "queues-request-new"} <= seen
    assert shadowed == []


def _named(patterns: list[Any], prefix: str = "", namespace: str = "") -> list[tuple[str, str]]:
    found = []
    for pattern in patterns:
        text = prefix + re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", str(pattern.pattern)).lstrip("^")
        if isinstance(pattern, URLResolver):
            inner = namespace + (f"{pattern.namespace}:" if pattern.namespace else "")
            found.extend(_named(pattern.url_patterns, text, inner))
        elif pattern.name:
            found.append((text, namespace + pattern.name))
    return found


def test_each_bare_asgi_app_is_a_coroutine_on_a_path_django_serves_too():
    assert settings.ASGI_BARE_APPS == {"/api/v1/agents/bundle/": "policies.api.long_poll.bundle_asgi"}
    for path, dotted in settings.ASGI_BARE_APPS.items():
        assert asyncio.iscoroutinefunction(import_string(dotted))
        assert resolve(path).view_name == "api:agent-bundle"  # WSGI and the test client answer it there


@pytest.mark.django_db
def test_the_api_index_links_every_apps_list_routes(cast, api):
    index = api(cast.pat).get("/api/v1/")

    assert index.status_code == 200
    # costs/ is detail-only (a tenant's month so far, /api/v1/costs/<tenant>/): no list to link.
    assert set(index.json()) == set(API_OWNERS) - {"", "me", "costs"}
    assert index.json()["slos"] == "http://testserver/api/v1/slos/"
    assert index.json()["tokens"] == "http://testserver/api/v1/tokens/"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/no-such-section/", "/no-such-section", "/catalogue/flavors/nope/"])
def test_a_path_no_route_matches_is_the_404_page(cast, client, path):
    client.force_login(cast.alice)

    answer = client.get(path)

    assert answer.status_code == 404  # no placeholder page, and no redirect to a slash-ended path
    assert b"Nothing here" in answer.content and b"Back to the overview" in answer.content


@pytest.mark.django_db
def test_a_path_no_api_route_matches_is_a_problem(cast, api):
    answer = api(cast.alice).get("/api/v1/no-such-thing/")

    assert answer.status_code == 404
    assert answer["Content-Type"] == "application/problem+json"
    assert answer.json()["code"] == "not_found"
