"""Panels of the core's pages, filled in by the apps that own them (the core knows no domain app).

An app registers a panel in its ``AppConfig.ready``: the page it goes on, a template and a function
to that template's context. The overview's panels take the signed-in user; the tenant page's and the
tenant dashboard's take the user and the tenant shown (a lower app such as tenants cannot read quotas
or inventory itself); the pool dashboard's take the user and the pool (inventory cannot read metering
or policies). A page renders its panels in ``order``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OVERVIEW = "overview"
TENANT = "tenant"
TENANT_DASHBOARD = "tenant-dashboard"
POOL_DASHBOARD = "pool-dashboard"

PanelContext = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Panel:
    name: str
    template: str
    context: PanelContext
    order: int = 100
    page: str = OVERVIEW


_panels: dict[tuple[str, str], Panel] = {}


def register_panel(
    *, name: str, template: str, context: PanelContext, order: int = 100, page: str = OVERVIEW
) -> None:
    """Add (or replace, by page and name: ``ready`` may run twice in tests) a panel of a page."""
    _panels[(page, name)] = Panel(name=name, template=template, context=context, order=order, page=page)


def panels_for(page: str) -> list[Panel]:
    return sorted((p for p in _panels.values() if p.page == page), key=lambda p: (p.order, p.name))


def overview_panels() -> list[Panel]:
    return panels_for(OVERVIEW)
