"""Authentication plus token scopes. Object visibility is the scoping door's job, not this one's."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, permissions
from rest_framework.request import Request

from gpuplatform.accounts.models import ApiToken


class InsufficientScope(exceptions.PermissionDenied):
    problem_code = "insufficient_scope"
    default_detail = "This token is read-only: create a token with the write scope to change things."


class IsAuthenticatedWithScope(permissions.BasePermission):
    """Any authenticated user; a token without the write scope may only read."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        writing = request.method not in permissions.SAFE_METHODS
        if writing and isinstance(request.auth, ApiToken) and not request.auth.can_write:
            raise InsufficientScope()
        return True
