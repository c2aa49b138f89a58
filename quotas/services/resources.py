"""Renaming the resources of a pool's flavors when the pool starts advertising a name of its own.

The pool's sharing policy (policies app) gives each pool its own extended resource name, so a
namespace's ResourceQuota can hold pools apart (issue 12). The flavors of that pool follow: their
resource, the quotas granted on it and the amounts of requests still pending or holding are renamed
in one transaction, under the admission locks (so no decision reads half a rename). Finished
requests keep the name they were decided under: they are history. The FlavorHold trigger moves what
is held from the old name to the new one as the amounts change.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from gpuplatform.audit.services import record_event
from quotas.dispatch import materialise_after_commit
from quotas.models import CapacityRequest, Flavor, FlavorKind, Quota
from quotas.models.requests import HOLDING, RequestState
from quotas.runner.locks import lock_admission
from tenants.models import Tenant

__all__ = ["rename_pool_resources"]

LIVE = (RequestState.PENDING, *HOLDING)


def rename_pool_resources(*, pool_id: uuid.UUID, renames: dict[str, str], actor: Any) -> list[uuid.UUID]:
    """Rename resources of the pool's device-plugin flavors (``{old: new}``); returns the renamed
    flavors' ids. Idempotent (a second run finds nothing under the old names). Must run inside the
    caller's transaction (it is part of publishing a policy); audited there; re-materialises the
    holding requests after commit so each namespace's ResourceQuota carries the new names."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("rename_pool_resources runs inside the transaction that decides the names")
    renames = {old: new for old, new in renames.items() if old != new}
    if not renames:
        return []
    flavors = [
        f
        for f in Flavor.objects.filter(pool_id=pool_id, kind=FlavorKind.DEVICE_PLUGIN).order_by("pk")
        if set(f.resource_names) & set(renames)
    ]
    if not flavors:
        return []
    roots = Tenant.objects.filter(parent__isnull=True).values_list("pk", flat=True)
    lock_admission(flavor_ids=[f.pk for f in flavors], root_ids=list(roots))
    touched: list[uuid.UUID] = []
    for flavor in Flavor.objects.select_for_update().filter(pk__in=[f.pk for f in flavors]).order_by("pk"):
        before = list(flavor.resources)
        flavor.resources = [{**r, "name": renames.get(str(r["name"]), r["name"])} for r in flavor.resources]
        if flavor.resources == before:
            continue
        flavor.save(update_fields=["resources", "updated_at"])
        for old, new in renames.items():
            Quota.objects.filter(flavor=flavor, resource=old).update(resource=new)
        live = (
            CapacityRequest.objects.select_for_update().filter(flavor=flavor, state__in=LIVE).order_by("pk")
        )
        holding: list[uuid.UUID] = []
        for request in live:
            amounts = {renames.get(k, k): v for k, v in request.amounts.items()}
            if amounts != request.amounts:
                CapacityRequest.objects.filter(pk=request.pk).update(amounts=amounts)
            if request.state in HOLDING:
                holding.append(request.pk)
        record_event(
            actor=actor,
            action="flavor.resources_renamed",
            obj=flavor,
            before={"resources": before},
            after={"resources": flavor.resources, "renamed": renames, "requests": len(holding)},
            tenant_id=flavor.tenant_id,
        )
        materialise_after_commit(holding)
        touched.append(flavor.pk)
    return touched
