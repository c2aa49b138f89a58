"""The port through which apps contribute SLIs (DESIGN §5.6): metering evaluates SLOs, but the data of
some SLIs lives in apps it must not import (policy rollouts live in ``policies``, a sibling layer).
Each app registers its SLI kinds here in ``AppConfig.ready``; the evaluator looks them up by kind."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol


class SliFunction(Protocol):
    def __call__(
        self, *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
    ) -> tuple[Decimal, Decimal] | None:
        """(good, total) events in [start, end), or None when the bucket cannot be known (no data)."""


@dataclass(frozen=True)
class SliKind:
    name: str
    title: str
    bucket_seconds: int  # the length of one sample
    # How long after a bucket's end it can be judged (a request's wait is known only once its
    # threshold has passed); None: only the bucket just ended can be measured (a state, not events).
    settle: Callable[[Mapping[str, Any]], int] | None
    compute: SliFunction
    describe: str


_kinds: dict[str, SliKind] = {}


def register_sli(kind: SliKind) -> None:
    _kinds[kind.name] = kind


def sli_kind(name: str) -> SliKind | None:
    return _kinds.get(name)


def sli_kinds() -> list[SliKind]:
    return [(_kinds[name]) for name in sorted(_kinds)]
