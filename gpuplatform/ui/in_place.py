"""Forms answered in place (htmx): a form posts with ``hx-post``, ``hx-target="#main"``,
``hx-select="#main"`` and ``hx-swap="outerHTML"``. A refused form comes back into the page where it
was, its errors on their fields and what was typed kept (status 200, which htmx swaps; a plain
browser gets the 400 it always did). A write that succeeded sends htmx on to the page it leads to
with ``HX-Location``: htmx fetches it, swaps its ``<main>`` (with the message saying what happened)
into this one and pushes its URL, so Back and a reload behave; a plain browser gets the redirect."""

from __future__ import annotations

import json
from typing import Any

from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, resolve_url

SWAP = {"target": "#main", "select": "#main", "swap": "outerHTML"}


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def form_status(request: HttpRequest, form: BaseForm) -> int:
    """The status of a form page: 400 when refused, except to htmx, which swaps only a 2xx."""
    return 400 if form.errors and not is_htmx(request) else 200


def go_on(request: HttpRequest, to: str, *args: Any, **kwargs: Any) -> HttpResponse:
    """After a write that succeeded: the next page, in place for htmx, else a redirect."""
    url = resolve_url(to, *args, **kwargs)
    if not is_htmx(request):
        return redirect(url)
    response = HttpResponse(status=200)
    response["HX-Location"] = json.dumps({"path": url, **SWAP})
    return response
