"""Ports that layers above quotas fill: quotas asks, it never imports who answers.

Budget burn: admission needs each budget tenant's GE-hours so far this month, per flavor. Quotas'
own answer counts admitted request intervals; metering, once its hourly usage ledger exists, fills the
port with the ledger's figures (metering/apps.py), so the layers stay one way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from fractions import Fraction
from typing import Protocol


class BurnSource(Protocol):
    def __call__(
        self, *, tenant_ids: list[uuid.UUID], now: datetime, month_start: datetime
    ) -> dict[uuid.UUID, dict[uuid.UUID | None, Fraction]]:
        """GE-hours each tenant's subtree burned from ``month_start`` to ``now``, per flavor id (None:
        usage of no flavor, which counts only against tenant-wide budgets)."""
        ...


_burn_source: BurnSource | None = None


def set_burn_source(source: BurnSource | None) -> None:
    """Install (or, with None, remove) the budget-burn source; the last one installed answers."""
    global _burn_source
    _burn_source = source


def burn_source(default: Callable[..., dict]) -> Callable[..., dict]:
    """The installed burn source, or quotas' own ``default`` when none is."""
    return _burn_source or default
