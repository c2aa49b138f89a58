"""Sharing policies start from what the nodes run (issue 27): the pages show the mode detected from the
nodes' labels and units, a pool with mixed modes says so, and the form starts from the detected mode so
saving it unchanged declares what runs. Publishing on a pool where no agent reports warns at preview,
save and publish, and needs an explicit confirmation, recorded in the audit event."""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from gpuplatform.audit.models import AuditEvent
from inventory.models import Node, ShareableUnit
from policies.models import NodeAgent, PolicyRevision, SharingPolicy
from policies.selectors import detect_sharing
from tests.policies.factories import h100_pool

pytestmark = pytest.mark.django_db


def time_sliced(pool, replicas: int = 4, *, only: str | None = None) -> None:
    """The nodes run time-slicing as GFD reports it: the sharing-strategy label and replica units."""
    for node in Node.objects.filter(pool=pool).order_by("name"):
        if only and node.name != only:
            continue
        Node.objects.filter(pk=node.pk).update(sharing_strategy="time-slicing", replicas=replicas)
        ShareableUnit.objects.create(
            cluster=node.cluster,
            node=node,
            key=f"node/{node.name}/nvidia.com/gpu.shared",
            kind="time_slice_replica",
            resource_name="nvidia.com/gpu.shared",
            count=node.gpu_count * replicas,
            ge_each=Decimal(1) / replicas,
            model_key=node.model_key,
        )


def test_a_time_sliced_pool_is_detected_as_such_and_the_form_starts_there(cast, client):
    pool = h100_pool("t4", nodes=2)
    time_sliced(pool)
    detected = detect_sharing(pool_ids=[pool.pk])[pool.pk]
    assert (detected.mode, detected.parameters, detected.per_mode) == (
        "time-slicing",
        {"replicas": 4},
        {"time-slicing": 2},
    )
    client.force_login(cast.pat)
    listing = client.get("/policies/").content.decode()
    assert "not declared: nodes keep their own setup" in listing
    assert "time-slicing <small>(4 replicas)</small>" in listing
    html = client.get(f"/policies/pools/{pool.pk}/").content.decode()
    assert '<span data-testid="detected-mode">time-slicing</span>, 4 replicas a card' in html
    assert '<option value="time-slicing" selected>' in html and 'name="replicas" value="4"' in html
    assert "▶ Time-slicing" in html  # the comparison marks the mode that runs, not exclusive
    # pressing Save unchanged declares what runs: time-slicing, 4 replicas
    client.post(f"/policies/pools/{pool.pk}/", {"intent": "save", "mode": "time-slicing", "replicas": "4"})
    policy = SharingPolicy.objects.get(pool=pool)
    assert (policy.mode, policy.parameters["replicas"]) == ("time-slicing", 4)


def test_a_pool_with_mixed_modes_says_so(cast, client):
    pool = h100_pool("mixed", nodes=3)
    time_sliced(pool, only="mixed-node-0")
    detected = detect_sharing(pool_ids=[pool.pk])[pool.pk]
    assert detected.mixed and detected.per_mode == {"exclusive": 2, "time-slicing": 1}
    client.force_login(cast.pat)
    html = client.get(f"/policies/pools/{pool.pk}/").content.decode()
    assert "mixed modes</span> (mixed: 2 nodes exclusive, 1 node time-slicing)" in html


def test_publishing_where_no_agent_reports_warns_and_needs_a_confirmation(cast, api, client):
    pool = h100_pool("quiet", nodes=2)
    pat = api(cast.pat)
    preview = pat.post(
        "/api/v1/sharing-policies/preview/",
        {"pool": str(pool.pk), "mode": "time-slicing", "parameters": {"replicas": 4}},
        format="json",
    ).json()
    assert preview["agents"]["reporting"] == 0 and "No node agent reports" in preview["agents"]["warning"]
    saved = pat.post(
        "/api/v1/sharing-policies/",
        {"pool": str(pool.pk), "mode": "time-slicing", "parameters": {"replicas": 4}},
        format="json",
    )
    assert saved.status_code == 201 and saved.json()["warnings"][0]["code"] == "policy.no_reporting_agent"
    refused = pat.post("/api/v1/policy-revisions/", {"pool": str(pool.pk)}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "policy.no_reporting_agent"
    assert not PolicyRevision.objects.filter(pool=pool).exists()
    # the page says so and offers the confirmation; without it, nothing is published
    client.force_login(cast.pat)
    html = client.get(f"/policies/pools/{pool.pk}/").content.decode()
    assert 'data-testid="agent-warning"' in html and 'name="confirm_no_agent"' in html
    client.post(f"/policies/pools/{pool.pk}/", {"intent": "publish"})
    assert not PolicyRevision.objects.filter(pool=pool).exists()
    confirmed = pat.post(
        "/api/v1/policy-revisions/", {"pool": str(pool.pk), "confirm_no_agent": True}, format="json"
    )
    assert confirmed.status_code == 201
    event = AuditEvent.objects.get(action="policy_revision.published")
    assert event.after["no_reporting_agent_confirmed"] is True and event.after["agents"]["reporting"] == 0


def test_with_an_agent_reporting_there_is_nothing_to_confirm(cast, api):
    pool = h100_pool("heard", nodes=2)
    node = pool.nodes.get(name="heard-node-0")
    NodeAgent.objects.create(
        cluster=pool.cluster,
        node=node,
        credential_hash=secrets.token_hex(32),
        rotate_after=timezone.now() + timedelta(days=1),
        last_seen_at=timezone.now(),
    )
    pat = api(cast.pat)
    pat.post("/api/v1/sharing-policies/", {"pool": str(pool.pk), "mode": "exclusive"}, format="json")
    published = pat.post("/api/v1/policy-revisions/", {"pool": str(pool.pk)}, format="json")
    assert published.status_code == 201, published.json()
    event = AuditEvent.objects.get(action="policy_revision.published")
    assert event.after["no_reporting_agent_confirmed"] is False and event.after["agents"]["reporting"] == 1
