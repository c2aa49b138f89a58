"""Rows stored before content digests moved to orjson (SHA-256 of ``json.dumps``): the first resync after
the upgrade finds them unchanged (no rewrite, no drift) and stores the new digests."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from inventory import kube
from inventory.models import Node, ResourceClaim, ResourceSlice
from inventory.sync.nodes import _hash_parts
from inventory.sync.runner import ClusterSync

pytestmark = pytest.mark.django_db(transaction=False)


def old_digest(*parts: Any) -> str:
    """The digest as the sync made it before (inventory/sync/context.py at 0d5781a)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def listed(syncer: ClusterSync, kind: str) -> list[dict[str, Any]]:
    return [o for page in kube.list_pages(syncer.api, kind=kind, page_size=500) for o in page.items]


def test_digests_stored_before_orjson_are_taken_as_unchanged_and_replaced(kubesim_factory, register, mapped):
    # given: a synced cluster whose rows carry the digests the code before stored
    sim = kubesim_factory(scenario="mixed", nodes=20, seed=1)
    cluster = register(sim)
    syncer = ClusterSync(cluster, page_size=50)
    syncer.full_sync()
    for obj in listed(syncer, "nodes"):
        Node.objects.filter(cluster=cluster, name=obj["metadata"]["name"]).update(
            content_hash=old_digest(*_hash_parts(obj))
        )
    for obj in listed(syncer, "resourceslices"):
        ResourceSlice.objects.filter(cluster=cluster, name=obj["metadata"]["name"]).update(
            content_hash=old_digest(obj.get("spec"))
        )
    for claim in ResourceClaim.objects.filter(cluster=cluster):
        fields = {
            "tenant_id": claim.tenant_id,
            "namespace": claim.namespace,
            "name": claim.name,
            "state": claim.state,
            "requests": claim.requests,
            "results": claim.results,
            "reserved_for": claim.reserved_for,
            "node_name": claim.node_name,
            "deleting": claim.deleting,
        }
        ResourceClaim.objects.filter(pk=claim.pk).update(content_hash=old_digest(fields))
    slice_ids = set(ResourceSlice.objects.filter(cluster=cluster).values_list("pk", flat=True))
    stored = (Node.objects.filter(cluster=cluster), ResourceSlice.objects.filter(cluster=cluster))
    assert {len(h) for q in stored for h in q.values_list("content_hash", flat=True)} == {64}
    assert {
        len(h) for h in ResourceClaim.objects.filter(cluster=cluster).values_list("content_hash", flat=True)
    } == {64}

    # when: the first resync after the upgrade
    report = ClusterSync(cluster, page_size=50).full_sync(record_drift=True)

    # then: nothing changed, no slice was replaced, and every digest is the new one (60 characters)
    assert report.changes == dict.fromkeys(report.changes, 0)
    cluster.refresh_from_db()
    assert cluster.last_drift == 0
    assert set(ResourceSlice.objects.filter(cluster=cluster).values_list("pk", flat=True)) == slice_ids
    for query in (*stored, ResourceClaim.objects.filter(cluster=cluster)):
        assert {len(h) for h in query.values_list("content_hash", flat=True)} == {60}
    # and a second resync finds the new digests equal
    assert ClusterSync(cluster, page_size=50).full_sync(record_drift=True).drift == 0
