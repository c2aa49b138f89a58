"""Ports other parts fill: policies announces, it never imports who listens.

``revision_published`` is sent after the transaction that made a revision commits (never inside it:
a listener that notifies waiting agents must not announce a revision a rollback could still undo),
with ``revision`` (the PolicyRevision). The rollout side connects to it to set the pool's nodes'
desired revision and wake the agents waiting for a bundle.
"""

from __future__ import annotations

from django.dispatch import Signal

revision_published = Signal()
