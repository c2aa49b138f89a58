"""Ports that layers above inventory fill: inventory announces, it never imports who listens."""

from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that switches a cluster's enforcement backend, with ``cluster_id``
# (str), ``before`` and ``after``: quotas removes what the old backend wrote there and has the new
# one write its objects (quotas/apps.py connects it).
enforcement_backend_changed = Signal()

# Sent after the commit of a Workload sync that saw a Workload waiting on gpuplatform's admission
# check (``gpuplatform-budget`` Pending), with ``cluster_id`` (str): quotas decides it
# (quotas/kueue_check/, connected in quotas/apps.py).
kueue_check_pending = Signal()
