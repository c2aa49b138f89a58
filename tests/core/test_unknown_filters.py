"""A query parameter a list does not know is refused (400 unknown_filter, naming the accepted ones),
never ignored: ignored, ``?slg=vision`` answered every visible tenant and a script acting on the first
result acted on the wrong one. Every list of the URL configuration is walked, so a new one is covered
without edits."""

from __future__ import annotations

from typing import Any

import django_filters
import pytest
from django.urls import resolve

from gpuplatform.api.filters import form_params
from tenants.models import Tenant
from tests.isolation.routes import Route, api_routes

pytestmark = pytest.mark.django_db

# Values that pass for the parameters whose empty value would itself be refused (page "" is not a
# page); the filters take "" as "not filtered", but for a multiple choice (see value_for).
WORKING_VALUES = {"page": "1", "page_size": "10", "format": "json", "granularity": "day"}


def list_routes() -> list[Route]:
    found = []
    for route in api_routes():
        if route.is_detail or "GET" not in route.methods:
            continue
        actions: dict[str, str] = getattr(resolve(route.url()).func, "actions", None) or {}
        if actions.get("get") == "list":
            found.append(route)
    return found


def value_for(route: Route, name: str) -> str:
    if name in WORKING_VALUES:
        return WORKING_VALUES[name]
    view: Any = resolve(route.url()).func
    filterset = getattr(view.cls, "filterset_class", None)
    declared = filterset.base_filters.get(name) if filterset is not None else None
    if isinstance(declared, django_filters.MultipleChoiceFilter):
        return str(declared.extra["choices"][0][0])
    return ""


def test_the_walk_finds_the_lists():
    urls = {route.url() for route in list_routes()}

    assert {"/api/v1/tenants/", "/api/v1/audit-events/", "/api/v1/usage/", "/api/v1/slos/"} <= urls
    assert len(urls) >= 30


def test_every_list_refuses_an_unknown_parameter_and_names_the_accepted_ones(cast, api):
    client = api(cast.pat)
    wrong = []
    for route in list_routes():
        response = client.get(route.url(), {"no_such_filter": "1"})
        body: dict[str, Any] = response.json()
        if (
            response.status_code != 400
            or response["Content-Type"] != "application/problem+json"
            or body.get("code") != "unknown_filter"
            or [e["field"] for e in body.get("errors", [])] != ["no_such_filter"]
            or "no_such_filter" not in body.get("detail", "")
            or "format" not in body.get("accepted", [])
            or not {"page", "cursor"} & set(body.get("accepted", []))
        ):
            wrong.append(f"{route.url()}: {response.status_code} {body}")
    assert wrong == [], "\n".join(wrong)


def test_every_accepted_parameter_still_works_on_every_list(cast, api):
    client = api(cast.pat)
    wrong = []
    for route in list_routes():
        accepted = client.get(route.url(), {"no_such_filter": "1"}).json()["accepted"]
        # A cursor is only ever one the list handed out; the others together, in one request.
        params = {name: value_for(route, name) for name in accepted if name != "cursor"}
        response = client.get(route.url(), params)
        if response.status_code != 200:
            wrong.append(f"{route.url()}?{params}: {response.status_code} {response.json()}")
    assert wrong == [], "\n".join(wrong)


def test_the_accepted_list_is_the_lists_own(cast, api):
    body = api(cast.pat).get("/api/v1/tenants/?slg=vision&state=active").json()

    assert body["code"] == "unknown_filter"
    assert body["errors"] == [
        {"field": "slg", "message": "Not a parameter of this list.", "code": "unknown_filter"}
    ]
    assert body["accepted"] == sorted(
        [
            "cost_centre",
            "depth",
            "format",
            "page",
            "page_size",
            "parent",
            "parent_slug",
            "q",
            "root",
            "slug",
            "state",
            "within",
        ]
    )
    # the audit log pages by cursor; the usage list reads its own granularity
    assert "cursor" in api(cast.pat).get("/api/v1/audit-events/?x=1").json()["accepted"]
    assert "granularity" in api(cast.pat).get("/api/v1/usage/?x=1").json()["accepted"]


def test_several_unknown_parameters_are_all_named(cast, api):
    body = api(cast.alice).get("/api/v1/memberships/?tenant_slug=vision&usr=dana&rol=member").json()

    assert [e["field"] for e in body["errors"]] == ["rol", "usr"]
    assert body["detail"].startswith("Unknown query parameters rol, usr;")


def test_a_tenant_is_found_by_its_exact_slug(cast, api):
    def slugs(user, query: str) -> list[str]:
        response = api(user).get(f"/api/v1/tenants/?{query}")
        assert response.status_code == 200, response.json()
        return [row["slug"] for row in response.json()["results"]]

    assert slugs(cast.pat, "slug=vision") == ["vision"]
    assert slugs(cast.pat, "slug=globex-ml") == ["globex-ml"]
    # exact: neither a prefix nor another case matches, and a slug nobody has finds nothing
    assert slugs(cast.pat, "slug=vis") == []
    assert slugs(cast.pat, "slug=Vision") == []
    assert slugs(cast.pat, "slug=vision-sec") == []
    # a tenant outside the caller's view is absent, as one that does not exist
    assert slugs(cast.alice, "slug=nlp") == []
    assert slugs(cast.alice, "slug=vision") == ["vision"]


def test_a_range_filter_accepts_its_two_ends_not_its_own_name():
    class TenantDepthFilter(django_filters.FilterSet):
        depth = django_filters.RangeFilter()
        created = django_filters.DateFromToRangeFilter(field_name="created_at")
        slug = django_filters.CharFilter()

        class Meta:
            model = Tenant
            fields = ["depth", "created", "slug"]

    assert form_params(TenantDepthFilter().form) == {
        "depth_min",
        "depth_max",
        "created_after",
        "created_before",
        "slug",
    }
