"""No filter is an existence oracle: on every list route, filtering by the id, slug or name of an
object the viewer cannot see answers exactly as filtering by one that does not exist.

The objects probed are the isolation suite's foreign objects (nlp's, bob's, or dedicated to nlp) plus
the tenants around the viewer that it cannot see (its parent, its sibling). Every filter of every
route's filterset is tried with each of their identifiers; a route whose filters accept none of them
still passes for that identifier, since the absent one is refused the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

import django_filters
import pytest
from django.urls import resolve
from rest_framework.throttling import SimpleRateThrottle

from tests.isolation.routes import api_routes
from tests.isolation.test_isolation import FOREIGN_OBJECTS, SELF_ROUTES

pytestmark = pytest.mark.django_db

NAME_FIELDS = ("slug", "name", "username", "namespace")


def identifiers(obj, user) -> list[str]:
    """The object's id, and each name it has that no object the user can see shares (the user's own
    token named "ci" legitimately answers ``?name=ci``)."""
    found = [str(obj.pk)]
    visible = type(obj)._default_manager.visible_to(user)
    for field in NAME_FIELDS:
        value = getattr(obj, field, "")
        if value and not visible.filter(**{field: value}).exists():
            found.append(str(value))
    return found


def absent_like(value: str) -> str:
    """An identifier of the same shape that names nothing, so both pass or fail validation alike."""
    try:
        uuid.UUID(value)
    except ValueError:
        return f"no-such-{uuid.uuid4().hex[:8]}"
    return str(uuid.uuid4())


# Filters that can name an object: by id (UUID, model choice) or by a name (char, or a method).
REFERENCE_FILTERS = (django_filters.UUIDFilter, django_filters.ModelChoiceFilter, django_filters.CharFilter)


def answer(client, url: str, value: str) -> tuple[int, object]:
    response = client.get(url)
    body = response.json()
    if response.status_code == 200:
        return 200, sorted(str(row.get("id", row)) for row in body.get("results", []))
    # The same refusal in code and words; a message may echo the value it was given, nothing more.
    return response.status_code, (body.get("code"), body.get("detail", "").replace(value, "<value>"))


def invisible_to(user, probes) -> list:
    """The probes the user cannot see through the scoping door (platform objects such as clusters
    are visible to everyone, and filtering by them is no leak)."""
    return [
        obj for obj in probes if not type(obj)._default_manager.visible_to(user).filter(pk=obj.pk).exists()
    ]


def filter_names(route) -> list[str]:
    view: Any = resolve(route.url()).func
    filterset = getattr(view.cls, "filterset_class", None)
    if filterset is None:
        return []
    return sorted(
        name
        for name, declared in filterset.base_filters.items()
        if isinstance(declared, REFERENCE_FILTERS) and name not in {"q", "search"}
    )


def test_filtering_by_an_invisible_object_answers_as_filtering_by_an_absent_one(cast, api, monkeypatch):
    # thousands of probes from one token: the per-token limit is not what is tested here
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"token": "1000000/minute", "user": "1000000/minute"}
    )
    # Tenant-owned objects only: clusters, nodes and GPUs are the platform's, named on the pools and
    # nodes a tenant may see, so filtering by them reveals nothing of another tenant.
    probes = [factory(cast) for basename, factory in sorted(FOREIGN_OBJECTS.items())]
    probes = [obj for obj in probes if getattr(obj, "tenant_id", None) or getattr(obj, "user_id", None)]
    probes += [cast.research, cast.nlp, cast.acme]
    leaks = []
    for viewer_name, viewer in {"alice": cast.alice}.items():
        client = api(viewer)
        for route in api_routes():
            if route.is_detail or "GET" not in route.methods or route.basename in SELF_ROUTES:
                continue
            for name in filter_names(route):
                for obj in invisible_to(viewer, probes):
                    for value in identifiers(obj, viewer):
                        other = absent_like(value)
                        seen = answer(client, f"{route.url()}?{name}={value}", value)
                        absent = answer(client, f"{route.url()}?{name}={other}", other)
                        if seen != absent:
                            leaks.append(f"{viewer_name} {route.template}?{name}={value}: {seen} vs {absent}")
    assert leaks == [], "\n".join(leaks)


def test_the_sweep_catches_a_filter_that_follows_an_invisible_parent(cast, api):
    # The attack of the review: alice lists tenants by vision's parent's slug, which she cannot see.
    by_invisible = answer(api(cast.alice), "/api/v1/tenants/?parent_slug=research", "research")
    by_absent = answer(api(cast.alice), "/api/v1/tenants/?parent_slug=no-such-tenant", "no-such-tenant")

    assert by_invisible == by_absent == (200, [])
