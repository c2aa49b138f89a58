"""Assertions shared by the API tests."""

from __future__ import annotations

from typing import Any

from django.apps import apps

from gpuplatform.audit.services import ATTEMPT_ACTIONS


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status and stable code."""
    assert response.status_code == status, (response.status_code, getattr(response, "data", response.content))
    assert response["Content-Type"].startswith("application/problem+json"), response["Content-Type"]
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["title"] and body["detail"]
    return body


# Bookkeeping that any authenticated call may touch; not a change the caller asked for.
VOLATILE_FIELDS = {"last_used_at"}


def database_state(*labels: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the named models, to prove a refused request changed nothing. The audit log's
    records of attempts (the refusal itself) are not a change and are left out."""
    state = {}
    for label in labels:
        model = apps.get_model(label)
        rows = model.objects.order_by("pk").values()
        if label == "audit.AuditEvent":
            rows = rows.exclude(action__in=ATTEMPT_ACTIONS)
        state[label] = [{k: v for k, v in row.items() if k not in VOLATILE_FIELDS} for row in rows]
    return state
