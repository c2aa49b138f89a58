"""Quotas' receivers of the ports that tenants defines."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone

from quotas.runner.loop import withdraw_suspended
from tenants.models import TenantState


def on_tenant_state_changed(*, tenant_id: uuid.UUID, state: str, **kwargs: Any) -> None:
    """A suspension takes effect at once: what the subtree waited for stops waiting, in the same
    transaction (the loop repeats it, so a missed signal only delays it)."""
    if state == TenantState.SUSPENDED:
        withdraw_suspended(now=timezone.now())
