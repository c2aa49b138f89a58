"""Filters shared by the API's lists."""

from __future__ import annotations

import uuid
from typing import Any

import django_filters
from django.db.models import QuerySet


class IdOrNameFilter(django_filters.CharFilter):
    """An object by its id or by the name a POST accepts for it (a tenant's slug, a flavor's name):
    ``?flavor=h100`` and ``?flavor=<uuid>`` both work, as in a request's body."""

    def __init__(self, *, field_name: str, name_field: str, **kwargs: Any) -> None:
        super().__init__(field_name=field_name, **kwargs)
        self.name_field = name_field

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        if value in ("", None):
            return qs
        try:
            return qs.filter(**{self.field_name: uuid.UUID(str(value))})
        except ValueError:
            return qs.filter(**{self.name_field: value})
