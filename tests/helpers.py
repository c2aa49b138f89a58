"""Assertions shared by the API tests."""

from __future__ import annotations

from typing import Any

from django.apps import apps


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status and stable code."""
    assert response.status_code == status, (response.status_code, getattr(response, "data", response.content))
    assert response["Content-Type"].startswith("application/problem+json"), response["Content-Type"]
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["title"] and body["detail"]
    return body


def database_state(*labels: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the named models, to prove a refused request changed nothing."""
    state = {}
    for label in labels:
        model = apps.get_model(label)
        state[label] = list(model.objects.order_by("pk").values())
    return state
