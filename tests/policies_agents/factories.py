"""Revisions made directly (the policy compiler lives on another branch): a bundle, its hash and
signature, as policies' publish step makes them."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.utils import timezone

from inventory.models import NodePool
from policies import signing
from policies.models import AgentBootstrapToken, NodeAgent, NodePolicyState, PolicyRevision, Rollout
from tests.inventory import factories as inv

# The agent protocol's routes (docs/agent-protocol.md), as tests/isolation/routes.py names them.
AGENT_PROTOCOL_ROUTES = (
    "agents/register",
    "agents/rotate",
    "agents/status",
    "agents/heartbeat",
    "agents/bundle",
)

MIG_PARTED = """version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
"""


def bundle(mig_config: str, *, note: str = "") -> dict[str, Any]:
    return {
        "files": [
            {"path": "mig-parted/config.yaml", "content": MIG_PARTED},
            {"path": "note.txt", "content": note},
        ],
        "labels": {"nvidia.com/mig.config": mig_config},
        "configmaps": [],
    }


def revision(pool: NodePool, body: dict[str, Any], *, needs_drain: bool = False) -> PolicyRevision:
    last = PolicyRevision.objects.filter(pool=pool).order_by("-number").first()
    content_hash = signing.content_hash(body)
    return PolicyRevision.objects.create(
        pool=pool,
        number=(last.number + 1) if last else 1,
        previous=last,
        policy={"mode": "mig" if needs_drain else "exclusive"},
        bundle=body,
        content_hash=content_hash,
        signature=signing.sign(content_hash.encode()),
        key_id=signing.key_id(),
        needs_drain=needs_drain,
    )


def bootstrap_token(name: str = "rack") -> AgentBootstrapToken:
    return AgentBootstrapToken.objects.create(
        cluster=inv.cluster(),
        name=name,
        token_hash=secrets.token_hex(32),
        expires_at=timezone.now() + timedelta(hours=1),
    )


def agent(node_name: str = "agent-node") -> NodeAgent:
    node = inv.node(node_name)
    return NodeAgent.objects.create(
        cluster=node.cluster,
        node=node,
        credential_hash=secrets.token_hex(32),
        rotate_after=timezone.now() + timedelta(days=1),
    )


def rollout(pool_name: str = "rollout-pool") -> Rollout:
    pool = inv.pool(pool_name)
    running = Rollout.objects.filter(pool=pool, state="running").first()
    if running is not None:  # the factories hand out one object per name, as inv's do
        return running
    node = inv.node(f"{pool_name}-node", in_pool=pool)
    r1 = revision(pool, bundle("all-disabled"))
    made = Rollout.objects.create(pool=pool, revision=r1)
    NodePolicyState.objects.create(node=node, desired_revision=r1, rollout=made)
    return made
