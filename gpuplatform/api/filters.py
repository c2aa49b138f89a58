"""Filters shared by the API's lists.

``FilterSet`` is the one every list uses: a foreign key filters by id without looking the id up.
django-filter's default for a foreign key is a ModelChoiceFilter over every row of the related model,
so an id the caller cannot see answers 200 (an empty page) while an id that does not exist answers
400 "not one of the available choices": an existence oracle. Filtering by the raw id answers both the
same way (an empty page), and the scoping door has already narrowed the queryset.
"""

from __future__ import annotations

import uuid
from typing import Any

import django_filters
from django.db import models
from django.db.models import QuerySet


class FilterSet(django_filters.FilterSet):
    @classmethod
    def filter_for_field(cls, field: Any, field_name: str, lookup_expr: str | None = None) -> Any:
        if isinstance(field, models.ForeignKey | models.OneToOneField) and lookup_expr in (None, "exact"):
            by_uuid = isinstance(field.target_field, models.UUIDField)
            klass = django_filters.UUIDFilter if by_uuid else django_filters.NumberFilter
            return klass(field_name=field_name, lookup_expr="exact")
        return super().filter_for_field(field, field_name, lookup_expr)


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
