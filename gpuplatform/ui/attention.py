"""The overview's "what needs attention": items the apps contribute, each saying what is wrong, how
many, and linking to where to act. The core knows no domain app: an app registers a source (a
function of the signed-in user) in its ``AppConfig.ready``, and each source reads through the
scoping door, so a viewer is told only of what it may see. A source answers in a constant number of
queries; an empty answer means nothing of its kind needs anyone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SEVERITY_ORDER = {"critical": 0, "warning": 1}


@dataclass(frozen=True)
class Attention:
    key: str  # stable, for tests and the page's data-testid
    severity: str  # "critical" or "warning"
    title: str  # "3 nodes not ready"
    detail: str  # one line of why it matters
    url: str  # where to act
    count: int = 1


AttentionSource = Callable[[Any], list[Attention]]
_sources: dict[str, AttentionSource] = {}


def register_attention(*, name: str, source: AttentionSource) -> None:
    """Add (or replace, by name: ``ready`` may run twice in tests) a source of attention items."""
    _sources[name] = source


def attention_for(user: Any) -> list[Attention]:
    """Every source's items, critical first, then by source name and order given."""
    items = [item for _, source in sorted(_sources.items()) for item in source(user)]
    return sorted(items, key=lambda item: SEVERITY_ORDER.get(item.severity, 9))
