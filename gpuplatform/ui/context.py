"""The navigation every page shows, and which entry is current."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

SECTIONS = [
    ("overview", "Overview", "overview", None),
    ("tenants", "Tenants", "tenant-tree", None),
    ("queues", "Queues", "queues", None),
    ("inventory", "Inventory", "inventory", None),
    ("policies", "Policies", "policies", None),
    ("metering", "Metering", "section", "metering"),
    ("slos", "SLOs", "section", "slos"),
    ("audit", "Audit", "audit-log", None),
]


def navigation(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav": []}
    current = request.path.strip("/").split("/")[0] or "overview"
    items = []
    for key, label, url_name, arg in SECTIONS:
        if key == "audit" and not user.is_platform_admin:
            continue
        url = reverse(url_name, args=[arg] if arg else [])
        items.append({"key": key, "label": label, "url": url, "current": key == current})
    return {"nav": items}
