"""The overview page's panels, filled in by the apps that own them (the core knows no domain app).

An app registers a panel in its ``AppConfig.ready``: a template and a function from the signed-in user
to that template's context. The overview renders the panels in ``order``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PanelContext = Callable[[Any], dict[str, Any]]


@dataclass(frozen=True)
class Panel:
    name: str
    template: str
    context: PanelContext
    order: int = 100


_panels: dict[str, Panel] = {}


def register_panel(*, name: str, template: str, context: PanelContext, order: int = 100) -> None:
    """Add (or replace, by name: ``ready`` may run twice in tests) a panel of the overview."""
    _panels[name] = Panel(name=name, template=template, context=context, order=order)


def overview_panels() -> list[Panel]:
    return sorted(_panels.values(), key=lambda p: (p.order, p.name))
