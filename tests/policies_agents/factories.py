"""Revisions made directly (the policy compiler lives on another branch): a bundle, its hash and
signature, as policies' publish step makes them."""

from __future__ import annotations

from typing import Any

from inventory.models import NodePool
from policies import signing
from policies.models import PolicyRevision

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
