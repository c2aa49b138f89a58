"""Signed envelopes for one node (docs/agent-protocol.md, "Waiting for a bundle").

The revision row is signed over its content hash when made; the envelope is signed again here, per
node, because the payload names the node, the revision order and the operation: an agent must be able
to refuse a bundle meant for another node, or an older one replayed, on the signature alone.
Revisions are immutable, so what an envelope needs of one is cached per process by its id.
"""

from __future__ import annotations

import base64
import functools
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from policies import signing
from policies.models import PolicyRevision

BUNDLE_FORMAT = "gpuplatform.bundle/v1"
# The key's id hashes its public bytes: once per process, not once per envelope.
_key_id = functools.cache(signing.key_id)


@dataclass(frozen=True)
class RevisionInfo:
    id: uuid.UUID
    number: int
    previous_number: int | None
    content_hash: str
    needs_drain: bool
    bundle: dict[str, Any]


@dataclass(frozen=True)
class Addressee:
    cluster: str
    node: str
    pool: str


_CACHE: dict[uuid.UUID, RevisionInfo] = {}
_CACHE_SIZE = 256


def cached_revision_info(revision_id: uuid.UUID) -> RevisionInfo | None:
    """What the process already read of a revision; no query (safe in an event loop)."""
    return _CACHE.get(revision_id)


def revision_info(revision_id: uuid.UUID) -> RevisionInfo:
    """The immutable parts of a revision, read once per process (one query)."""
    cached = _CACHE.get(revision_id)
    if cached is not None:
        return cached
    row = PolicyRevision.objects.select_related("previous").get(pk=revision_id)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    info = _CACHE[revision_id] = RevisionInfo(
        id=row.pk,
        number=row.number,
        previous_number=row.previous.number if row.previous else None,
        content_hash=row.content_hash,
        needs_drain=row.needs_drain,
        bundle=row.bundle,
    )
    return info


def build_envelope(
    *, to: Addressee, revision: RevisionInfo, operation: str, now: datetime | None = None
) -> dict[str, str]:
    issued = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {
        "format": BUNDLE_FORMAT,
        "cluster": to.cluster,
        "node": to.node,
        "pool": to.pool,
        "revision": revision.number,
        "previous_revision": revision.previous_number,
        "issued_at": issued,
        "content_hash": revision.content_hash,
        "operation": {"kind": operation, "needs_drain": revision.needs_drain},
        "bundle": revision.bundle,
    }
    data = signing.canonical_json(payload)
    return {
        "payload": base64.b64encode(data).decode(),
        "signature": signing.sign(data),
        "key_id": _key_id(),
    }
