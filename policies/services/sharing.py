"""Declaring a pool's sharing: validated against the pool's GPUs, audited, and previewed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from gpuplatform.audit.services import record_attempt, record_event, snapshot
from gpuplatform.errors import Forbidden, NotFound, ValidationFailed
from inventory.models import NodePool
from policies.compiler import (
    DIMENSIONS,
    PolicyProblem,
    SharingMode,
    SharingSpec,
    normalise_parameters,
    pool_yield,
    tradeoff,
    validate_policy,
)
from policies.compiler.naming import pool_resource_name
from policies.models import SharingPolicy
from policies.selectors import agent_coverage, pool_spec

AUDITED = ("pool_id", "mode", "parameters", "resource_name")


class PolicyInvalid(ValidationFailed):
    """Every problem of a declared policy at once; the first gives the answer's code."""

    def __init__(self, problems: list[PolicyProblem]) -> None:
        first = problems[0]
        super().__init__("; ".join(p.message for p in problems), code=first.code, field=first.field)
        self.problems = problems
        self.errors = [{"field": p.field, "message": p.message, "code": p.code} for p in problems]


def _pool(pool_id: uuid.UUID | str, *, lock: bool = False) -> NodePool:
    try:
        queryset = NodePool.objects.select_related("cluster")
        if lock:
            queryset = queryset.select_for_update(of=("self",))
        return queryset.get(pk=pool_id)
    except (NodePool.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"no node pool {pool_id}", code="policy.unknown_pool", field="pool") from None


def _mode(mode: str) -> SharingMode:
    try:
        return SharingMode(mode)
    except ValueError:
        raise ValidationFailed(
            f"mode must be one of {', '.join(SharingMode)}", code="policy.mode_unknown", field="mode"
        ) from None


@dataclass(frozen=True)
class Preview:
    spec: SharingSpec
    problems: list[PolicyProblem]
    data: dict[str, Any]


def preview_policy(
    *, pool_id: uuid.UUID | str, mode: str, parameters: dict[str, Any], resource_name: str = ""
) -> Preview:
    """What a declaration would give on the pool (changes nothing): its problems, the mode's five
    dimensions and the units it yields, e.g. "7 x 1g.10gb per H100 -> 56 shares"."""
    pool = _pool(pool_id)
    sharing_mode = _mode(mode)
    spec = SharingSpec(sharing_mode, normalise_parameters(sharing_mode, parameters), resource_name.strip())
    pool_data = pool_spec(pool=pool)
    problems = validate_policy(spec=spec, pool=pool_data)
    data: dict[str, Any] = {
        "pool": str(pool.pk),
        "mode": str(sharing_mode),
        "parameters": spec.parameters,
        "resource_name": spec.resource_name or pool_resource_name(pool.name),
        "tradeoff": tradeoff(sharing_mode).as_dict(),
        "dimensions": list(DIMENSIONS),
        "models": [{"model": m.model_key, "cards": m.cards, "nodes": m.nodes} for m in pool_data.models],
        "problems": [{"code": p.code, "message": p.message, "field": p.field} for p in problems],
        "valid": not problems,
        # Valid all the same: nodes without agents just never get it (publishing asks to confirm).
        "agents": agent_coverage(pool_id=pool.pk).as_dict(),
    }
    if not problems:
        result = pool_yield(spec=spec, pool=pool_data)
        data["yield"] = {
            "summary": result.summary,
            "needs_empty_nodes": result.needs_empty_nodes,
            "notes": list(result.notes),
            "lines": [
                {
                    "model": line.model_key,
                    "cards": line.cards,
                    "resource": line.resource,
                    "per_card": line.per_card,
                    "units": line.units,
                    "ge_each": str(line.ge_each),
                    "text": line.text,
                }
                for line in result.lines
            ],
        }
    return Preview(spec=spec, problems=problems, data=data)


def set_sharing_policy(
    *, pool_id: uuid.UUID | str, actor: Any, mode: str, parameters: dict[str, Any], resource_name: str = ""
) -> SharingPolicy:
    """Create or change a pool's declared sharing. Locks the pool row (one writer per pool);
    refuses an invalid declaration whole (PolicyInvalid with every problem). Audited. Nodes see
    nothing until the policy is published as a revision. A refusal is audited as an attempt.
    Platform-admins only."""
    if not getattr(actor, "is_platform_admin", False):
        raise Forbidden("Only platform-admins declare sharing policies.")
    try:
        return _set_sharing_policy(
            pool_id=pool_id, actor=actor, mode=mode, parameters=parameters, resource_name=resource_name
        )
    except PolicyInvalid as refused:
        record_attempt(
            actor=actor,
            action="sharing_policy.refused",
            object_type="policies.sharingpolicy",
            object_repr=f"pool {pool_id}",
            detail={"pool": str(pool_id), "mode": mode, "problems": refused.errors},
        )
        raise


def _set_sharing_policy(
    *, pool_id: uuid.UUID | str, actor: Any, mode: str, parameters: dict[str, Any], resource_name: str
) -> SharingPolicy:
    with transaction.atomic():
        pool = _pool(pool_id, lock=True)
        preview = preview_policy(
            pool_id=pool.pk, mode=mode, parameters=parameters, resource_name=resource_name
        )
        if preview.problems:
            raise PolicyInvalid(preview.problems)
        policy = SharingPolicy.objects.filter(pool=pool).first()
        before = snapshot(policy, AUDITED) if policy else None
        if policy is None:
            policy = SharingPolicy(pool=pool)
        policy.mode = str(preview.spec.mode)
        policy.parameters = preview.spec.parameters
        policy.resource_name = preview.spec.resource_name
        policy.updated_by = actor if getattr(actor, "pk", None) else None
        policy.updated_at = timezone.now()
        policy.save()
        after = snapshot(policy, AUDITED)
        if before != after:
            record_event(
                actor=actor,
                action="sharing_policy.created" if before is None else "sharing_policy.updated",
                obj=policy,
                before=before,
                after=after,
            )
    return policy
