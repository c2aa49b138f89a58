"""Publishing a pool's sharing policy makes the next immutable, signed revision (issue 12 item 3)."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.db import transaction

from gpuplatform.audit.models import AuditEvent
from gpuplatform.errors import Conflict, Forbidden, NotFound
from policies import signing
from policies.models import PolicyRevision, SharingPolicy
from policies.services.revisions import diff_revisions, dry_run, publish_policy
from policies.services.sharing import PolicyInvalid, set_sharing_policy
from policies.signals import revision_published
from tests.policies.factories import gpu_pod, h100_pool

pytestmark = pytest.mark.django_db

MIG_7 = {"strategy": "mixed", "geometry": {"H100-80GB": {"1g.10gb": 7}}}


@pytest.fixture
def pool(cast):
    return h100_pool()


def test_the_first_publish_is_revision_1_with_a_verifiable_signature(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 4})
    revision = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True, note="four replicas")
    assert revision.number == 1 and revision.previous is None and revision.needs_drain is False
    assert revision.content_hash == signing.content_hash(revision.bundle)
    key: Ed25519PublicKey = signing.public_key()
    key.verify(base64.b64decode(revision.signature), revision.content_hash.encode())  # raises if tampered
    assert revision.key_id == signing.key_id()
    assert revision.policy == {
        "mode": "time-slicing",
        "parameters": {"replicas": 4, "fail_requests_greater_than_one": False},
        "resource_name": "nvidia.com/gpu-h100",
    }
    assert revision.bundle["labels"]["nvidia.com/device-plugin.config"] == "gpuplatform-h100-r1"
    assert SharingPolicy.objects.get(pool=pool).published_revision == 1


def test_each_change_makes_the_next_number_and_a_mig_geometry_change_needs_a_drain(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
    first = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 2})
    second = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=MIG_7)
    third = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    set_sharing_policy(
        pool_id=pool.pk, actor=cast.pat, mode="mig", parameters={"geometry": {"H100-80GB": {"3g.40gb": 2}}}
    )
    fourth = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    assert [r.number for r in (first, second, third, fourth)] == [1, 2, 3, 4]
    assert [r.needs_drain for r in (first, second, third, fourth)] == [False, False, True, True]
    assert fourth.previous_id == third.pk


def test_publishing_an_unchanged_policy_is_refused_and_makes_nothing(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
    publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    with pytest.raises(Conflict) as refused:
        publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    assert refused.value.code == "policy.unchanged"
    assert PolicyRevision.objects.filter(pool=pool).count() == 1


def test_unknown_pool_and_pool_without_policy_are_told_apart(cast, pool):
    with pytest.raises(NotFound) as unknown:
        publish_policy(pool_id="8d3c1d1e-0000-0000-0000-000000000000", actor=cast.pat)
    assert unknown.value.code == "policy.unknown_pool"
    with pytest.raises(NotFound) as none:
        publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    assert none.value.code == "policy.no_policy"


def test_an_invalid_geometry_is_refused_with_its_code_and_nothing_is_stored(cast, pool):
    bad = {"geometry": {"H100-80GB": {"3g.40gb": 2, "1g.10gb": 1}}}  # 4 + 4 + 1 memory slices of 8
    with pytest.raises(PolicyInvalid) as refused:
        set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=bad)
    assert refused.value.code == "policy.mig_geometry_invalid"
    assert not SharingPolicy.objects.exists()


def test_publish_is_audited_in_the_same_transaction(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mps", parameters={"replicas": 4})
    revision = publish_policy(
        pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True, note="mps for inference"
    )
    event = AuditEvent.objects.get(action="policy_revision.published")
    assert event.object_id == str(revision.pk) and event.actor == cast.pat
    assert event.after["number"] == 1 and event.after["note"] == "mps for inference"
    assert AuditEvent.objects.filter(action="sharing_policy.created").count() == 1


def publish_and_roll_back(pool, actor):
    with transaction.atomic():
        publish_policy(pool_id=pool.pk, actor=actor, confirm_no_agent=True)
        raise RuntimeError("rolled back")


@pytest.mark.django_db(transaction=True)
def test_revision_published_is_sent_after_commit_only(cast):
    pool = h100_pool("late")
    seen: list[int] = []

    def listener(*, revision, **kwargs):
        seen.append(revision.number)

    revision_published.connect(listener)
    try:
        set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
        with transaction.atomic():
            publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
            assert seen == []  # not while the transaction could still roll back
        assert seen == [1]
        set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 3})
        with pytest.raises(RuntimeError):
            publish_and_roll_back(pool, cast.pat)
        assert seen == [1] and PolicyRevision.objects.filter(pool=pool).count() == 1
    finally:
        revision_published.disconnect(listener)


def test_diff_shows_each_file_and_the_labels_that_change(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="time-slicing", parameters={"replicas": 4})
    r1 = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=MIG_7)
    r2 = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    diff = diff_revisions(older=r1, newer=r2)
    by_path = {f["path"]: f for f in diff["files"]}
    assert by_path["mig-parted/config.yaml"]["status"] == "added"
    assert "+        1g.10gb: 7\n" in by_path["mig-parted/config.yaml"]["diff"]
    assert "-        replicas: 4\n" in by_path["device-plugin/config.yaml"]["diff"]
    assert "+  migStrategy: mixed\n" in by_path["device-plugin/config.yaml"]["diff"]
    labels = {label["name"]: (label["from"], label["to"]) for label in diff["labels"]}
    assert labels["nvidia.com/mig.config"] == ("all-disabled", "gpuplatform-h100-r2")
    assert diff["needs_drain"] is True
    assert diff_revisions(older=r2, newer=r1)["from"] == 2  # either order


def test_dry_run_names_the_nodes_and_the_gpu_pods_that_block_a_mig_change(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
    publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    gpu_pod(pool, node="h100-node-1", namespace="team-vision", pod="train-0", tenant=cast.vision)
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=MIG_7)
    result = dry_run(pool_id=pool.pk).data
    assert result["from_revision"] == 1 and result["to_revision"] == 2 and result["needs_drain"] is True
    nodes = {n["node"]: n for n in result["nodes"]}
    assert nodes["h100-node-0"]["blocked_by"] == []
    assert nodes["h100-node-1"]["blocked_by"] == [
        {"namespace": "team-vision", "pod": "train-0", "resource": "nvidia.com/gpu", "count": 1}
    ]
    assert result["blocked_nodes"] == ["h100-node-1"]
    assert PolicyRevision.objects.filter(pool=pool).count() == 1  # a dry run makes nothing


def test_a_revision_bundle_is_stored_as_canonical_json_round_trip(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=MIG_7)
    revision = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    revision.refresh_from_db()
    assert signing.content_hash(json.loads(signing.canonical_json(revision.bundle))) == revision.content_hash


def test_a_rollback_carries_the_earlier_bundle_under_the_next_number(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
    r1 = publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="mig", parameters=MIG_7)
    publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    # the rollout's automatic rollback runs as the system (no actor)
    r3 = publish_policy(pool_id=pool.pk, actor=None, note="r2 failed on a node", rollback_of=1)
    assert r3.number == 3 and r3.bundle == r1.bundle and r3.content_hash == r1.content_hash
    assert r3.policy["rollback_of"] == 1 and r3.needs_drain is True  # MIG back off: nodes emptied again
    assert SharingPolicy.objects.get(pool=pool).mode == "exclusive"  # the declaration follows
    with pytest.raises(Conflict):  # r3 already holds the exclusive policy
        publish_policy(pool_id=pool.pk, actor=cast.pat, confirm_no_agent=True)
    with pytest.raises(NotFound) as unknown:
        publish_policy(pool_id=pool.pk, actor=None, rollback_of=9)
    assert unknown.value.code == "policy.unknown_revision"


def test_only_platform_admins_publish(cast, pool):
    set_sharing_policy(pool_id=pool.pk, actor=cast.pat, mode="exclusive", parameters={})
    with pytest.raises(Forbidden):
        publish_policy(pool_id=pool.pk, actor=cast.alice)
    assert not PolicyRevision.objects.exists()
