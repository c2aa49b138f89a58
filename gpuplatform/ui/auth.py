from __future__ import annotations

from typing import cast

from django.http import HttpRequest

from gpuplatform.accounts.models import User


def current_user(request: HttpRequest) -> User:
    """The logged-in user of a @login_required view, typed as our User model."""
    return cast(User, request.user)
