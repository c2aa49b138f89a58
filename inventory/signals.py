"""Inventory's receivers of the ports that tenants defines."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from inventory.services import reattribute_namespace


def on_namespace_owner_changed(
    *, cluster: str, namespace: str, tenant_id: uuid.UUID | None, at: datetime, **kwargs: Any
) -> None:
    reattribute_namespace(cluster_name=cluster, namespace=namespace, tenant_id=tenant_id, at=at)
