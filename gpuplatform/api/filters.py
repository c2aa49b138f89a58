"""Filters shared by the API's lists.

``StrictFilterBackend`` is every list's filter backend: a query parameter the list does not know is a
400 ``unknown_filter`` naming the accepted ones. Ignored, ``/api/v1/tenants/?slg=vision`` (a typo)
answered every visible tenant, parent first, and a script taking the first result acted on the
wrong tenant.

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
from django import forms
from django.db import models
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.widgets import SuffixedMultiWidget
from rest_framework.request import Request
from rest_framework.settings import api_settings

from gpuplatform.errors import ValidationFailed


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


class UnknownFilter(ValidationFailed):
    code = "unknown_filter"

    def __init__(self, *, unknown: list[str], accepted: list[str]) -> None:
        super().__init__(
            f"Unknown query parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"this list accepts: {', '.join(accepted)}."
        )
        self.errors = [
            {"field": name, "message": "Not a parameter of this list.", "code": "unknown_filter"}
            for name in unknown
        ]
        self.members = {"accepted": accepted}  # added to the problem body


# Read by the paginator, whichever kind a list uses.
_PAGINATION_PARAMS = (
    "page_query_param",
    "page_size_query_param",
    "cursor_query_param",
    "limit_query_param",
    "offset_query_param",
)


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter's backend, refusing unknown parameters on lists. Accepted: the filterset's
    filters (with a range's suffixes), the other filter backends' parameters (ordering, search), the
    paginator's, ``format``, and what the view's own ``list`` reads, declared as ``list_params``."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        if getattr(view, "action", None) == "list":
            accepted = self.accepted_params(request, queryset, view)
            unknown = sorted(set(request.query_params) - accepted)
            if unknown:
                raise UnknownFilter(unknown=unknown, accepted=sorted(accepted))
        return super().filter_queryset(request, queryset, view)

    def accepted_params(self, request: Request, queryset: QuerySet[Any], view: Any) -> set[str]:
        accepted = set(getattr(view, "list_params", ()))
        if api_settings.URL_FORMAT_OVERRIDE:
            accepted.add(api_settings.URL_FORMAT_OVERRIDE)
        paginator = getattr(view, "paginator", None)
        accepted.update(
            name for attr in _PAGINATION_PARAMS if (name := getattr(paginator, attr, None)) is not None
        )
        for backend_class in getattr(view, "filter_backends", ()):
            backend = backend_class()
            if isinstance(backend, DjangoFilterBackend):
                filterset = backend.get_filterset(request, queryset, view)
                if filterset is not None:
                    accepted.update(form_params(filterset.form))
            else:
                accepted.update(p["name"] for p in backend.get_schema_operation_parameters(view))
        return accepted


def form_params(form: forms.Form) -> set[str]:
    """The query parameters a filterset's form reads: a range filter reads ``<name>_min`` and
    ``<name>_max`` (or ``_after``/``_before``), not its own name."""
    names: set[str] = set()
    for name, field in form.fields.items():
        widget = field.widget
        if isinstance(widget, SuffixedMultiWidget):
            names.update(widget.suffixed(name, suffix) for suffix in widget.suffixes)
        else:
            names.add(name)
    return names
