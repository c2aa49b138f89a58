"""Policy rollout's SLI, contributed to metering's SLO evaluation through gpuplatform.sli_sources
(metering must not import this app): nodes of the rollouts started in a bucket, good when the node
acked the rollout's revision within ``converge_seconds`` (default 900) of the rollout's start.

A node keeps one delivery state (its latest rollout), so a bucket is judged once its nodes have had
``converge_seconds`` to converge and kept from then on; a node taken by a newer rollout before that
counts for the newer one only."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpuplatform.sli_sources import SliKind, register_sli
from policies.models import NodePolicyState
from policies.node_states import NodeState

CONVERGE_DEFAULT_SECONDS = 900


def policy_rollout(
    *, start: datetime, end: datetime, tenant_id: uuid.UUID | None, params: Mapping[str, Any]
) -> tuple[Decimal, Decimal]:
    within = int(params.get("converge_seconds", CONVERGE_DEFAULT_SECONDS))
    nodes = NodePolicyState.objects.filter(rollout__created_at__gte=start, rollout__created_at__lt=end)
    if tenant_id is not None:
        nodes = nodes.filter(node__pool__tenant_id=tenant_id)  # pools dedicated to the tenant
    good = total = 0
    for state, changed, started in nodes.values_list("state", "state_changed_at", "rollout__created_at"):
        total += 1
        if state == NodeState.APPLIED and (changed - started).total_seconds() <= within:
            good += 1
    return Decimal(good), Decimal(total)


def register() -> None:
    register_sli(
        SliKind(
            name="policy_rollout",
            title="Policy rollout convergence",
            bucket_seconds=300,
            settle=lambda params: int(params.get("converge_seconds", CONVERGE_DEFAULT_SECONDS)),
            compute=policy_rollout,
            describe="Nodes of a rollout that applied its revision within converge_seconds (default 900).",
        )
    )
