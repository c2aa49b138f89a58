"""Ports that layers above inventory fill: inventory announces, it never imports who listens."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that switches a cluster's enforcement backend, with ``cluster_id``
# (str), ``before`` and ``after``: quotas removes what the old backend wrote there and has the new
# one write its objects (quotas/apps.py connects it).
enforcement_backend_changed = Signal()
