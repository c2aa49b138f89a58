"""The one scoping door for the API (DESIGN §6, STYLE: NetBox's restrict()).

Every API viewset derives from ScopedViewSet, whose get_queryset() passes the viewset's queryset
through ``visible_to(user)``. A queryset without that method is a configuration error, raised on the
first request, so a new endpoint cannot forget tenancy; the isolation suite also checks every route.
Objects outside the user's view are simply absent: 404, never 403.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from rest_framework import viewsets

from gpuplatform.accounts.models import User


def scoped(queryset: QuerySet[Any], user: User) -> QuerySet[Any]:
    visible_to = getattr(queryset, "visible_to", None)
    if not callable(visible_to):
        raise ImproperlyConfigured(
            f"{queryset.model.__name__} queryset has no visible_to(user): API querysets must be tenant-scoped"
        )
    result = visible_to(user)
    if not isinstance(result, QuerySet):
        raise ImproperlyConfigured(f"{queryset.model.__name__}.visible_to() must return a QuerySet")
    return result


class ScopedViewSet(viewsets.GenericViewSet[Any]):
    queryset: QuerySet[Any]
    # Query parameters the list reads itself, beyond its filters and pager (api.filters refuses others).
    list_params: tuple[str, ...] = ()

    def get_queryset(self) -> QuerySet[Any]:
        return scoped(self.queryset.all(), self.request.user)  # type: ignore[arg-type]

    @property
    def actor(self) -> User:
        return self.request.user  # type: ignore[return-value]

    def get_scoped_object(self) -> Model:
        return self.get_object()
