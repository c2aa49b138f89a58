"""Ports that layers above tenants fill: tenants announces, it never imports who listens."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that changes who owns a namespace, with ``cluster`` ("" = every
# cluster), ``namespace``, ``tenant_id`` (the new owner, or None) and ``at``. Inventory re-attributes
# the namespace's open allocations at that moment (inventory/apps.py connects it).
namespace_owner_changed = Signal()

# Sent inside the transaction that changes a tenant's state, with ``tenant_id`` and ``state``:
# quotas withdraws what a suspended subtree was waiting for (quotas/apps.py connects it).
tenant_state_changed = Signal()
