"""The FilterSet every list uses: a foreign key filters by id without looking the id up.

django-filter's default for a foreign key is a ModelChoiceFilter over every row of the related model,
so an id the caller cannot see answers 200 (an empty page) while an id that does not exist answers
400 "not one of the available choices": an existence oracle. Filtering by the raw id answers both the
same way (an empty page), and the scoping door has already narrowed the queryset.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db import models


class FilterSet(django_filters.FilterSet):
    @classmethod
    def filter_for_field(cls, field: Any, field_name: str, lookup_expr: str | None = None) -> Any:
        if isinstance(field, models.ForeignKey | models.OneToOneField) and lookup_expr in (None, "exact"):
            target = field.target_field
            klass = (
                django_filters.UUIDFilter
                if isinstance(target, models.UUIDField)
                else django_filters.NumberFilter
            )
            return klass(field_name=field_name, lookup_expr="exact")
        return super().filter_for_field(field, field_name, lookup_expr)
