"""Page-number pagination with a capped page size (API_PAGE_SIZE, API_MAX_PAGE_SIZE)."""

from __future__ import annotations

from django.conf import settings
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.request import Request

from gpuplatform.errors import ValidationFailed


def _page_size(request: Request, param: str) -> int:
    """The page size asked for, capped at API_MAX_PAGE_SIZE; one that is not a positive whole number
    is a 400 (it used to become a page of one item: a list that quietly answered something else)."""
    # Read per request rather than at import, so the settings stay the single source.
    default, cap = int(settings.API_PAGE_SIZE), int(settings.API_MAX_PAGE_SIZE)
    raw = request.query_params.get(param)
    if raw is None:
        return min(default, cap)
    try:
        asked = int(raw)
    except ValueError:
        asked = 0
    if asked < 1:
        raise ValidationFailed(
            f"{param} must be a whole number from 1 to {cap}", code="invalid_page_size", field=param
        )
    return min(asked, cap)


class PagePagination(PageNumberPagination):
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int:
        return _page_size(request, self.page_size_query_param)


class NewestFirstCursorPagination(CursorPagination):
    """For append-only logs: stable under inserts, no COUNT(*) over a large table."""

    ordering = ("-at", "-id")
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int:
        return _page_size(request, self.page_size_query_param)
