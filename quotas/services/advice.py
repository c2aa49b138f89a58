"""Warnings (gpuplatform.input_warnings) about catalogue values that are valid but suspicious: a quota
above what its flavor's pool can ever offer, a hard budget of 0 GE-hours, a queue of weight 0. Read
only; the same for the API and the forms, on the values about to be saved."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import models

from gpuplatform.input_warnings import InputWarning
from inventory.selectors import pool_resource_capacity
from quotas.models import Budget, Flavor, Queue, Quota


def catalogue_warnings(
    *, model: type[models.Model], values: dict[str, Any], current: models.Model | None = None
) -> list[InputWarning]:
    """The warnings for ``values`` (what a form or serializer validated) over ``current`` (the row
    being edited; None on create)."""

    def value(name: str) -> Any:
        return values[name] if name in values else getattr(current, name, None)

    if model is Quota:
        return _quota(value("flavor"), value("resource"), value("nominal"))
    if model is Budget:
        return _budget(value("limit_ge_hours"), value("hard"), value("flavor"))
    if model is Queue:
        return _queue(value("weight"))
    return []


def _quota(flavor: Flavor | None, resource: str | None, nominal: int | None) -> list[InputWarning]:
    if flavor is None or nominal is None or nominal == 0:
        return []
    resource = resource or (flavor.resource_names[0] if len(flavor.resource_names) == 1 else "")
    if resource not in flavor.resource_names:
        return []  # not a warning: the service refuses it, on its field
    if flavor.pool_id is None:
        offered = 0
    else:
        # Uncached: the form is read by a person, and a pool just grown should count at once.
        offered = pool_resource_capacity(pool_ids=[flavor.pool_id]).get(flavor.pool_id, {}).get(resource, 0)
    if nominal <= offered:
        return []
    where = f"its pool counts {offered}" if flavor.pool_id else "it has no node pool"
    return [
        InputWarning(
            code="quota.above_capacity",
            message=(
                f"A quota of {nominal} {resource} is more than flavor {flavor.name} can ever offer: "
                f"{where}. Requests above {offered} would wait for capacity that does not exist."
            ),
            field="nominal",
        )
    ]


def _budget(limit: Decimal | None, hard: bool | None, flavor: Flavor | None) -> list[InputWarning]:
    if limit is None or Decimal(limit) != 0 or not hard:
        return []
    scope = f"on {flavor.name}" if flavor is not None else "on every flavor"
    return [
        InputWarning(
            code="budget.hard_zero",
            message=f"A hard budget of 0 GE-hours refuses every request of this tenant {scope}.",
            field="limit_ge_hours",
        )
    ]


def _queue(weight: Decimal | None) -> list[InputWarning]:
    if weight is None or Decimal(weight) != 0:
        return []
    return [
        InputWarning(
            code="queue.zero_weight",
            message=(
                "A weight of 0 gives this queue no fair share: whenever its requests would borrow "
                "from the cohort, they go last, behind every other queue's."
            ),
            field="weight",
        )
    ]
