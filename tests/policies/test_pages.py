"""The policy pages: a pool's form with the five dimensions and the yield, save and publish, the
revisions and their diff, and admission rules as each role sees them."""

from __future__ import annotations

import pytest

from policies.models import AdmissionApply, PolicyRevision, SharingPolicy
from policies.services.admission import save_admission_rule
from tests.policies.factories import gpu_pod, h100_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(cast):
    return h100_pool()


def page(client, url, **post):
    response = client.post(url, post) if post else client.get(url)
    return response.status_code, response.content.decode()


def test_the_pool_form_shows_the_five_dimensions_and_what_mig_yields_here(cast, client, pool):
    client.force_login(cast.pat)
    url = f"/policies/pools/{pool.pk}/"
    status, html = page(client, url)
    assert status == 200
    for heading in ("Isolation", "Interference", "Utilisation", "Reconfiguration cost", "How pods ask"):
        assert f"<th>{heading}</th>" in html
    assert "1 pod per H100 -&gt; 8 whole GPUs" in html  # exclusive until declared otherwise
    status, html = page(
        client, url, intent="preview", mode="mig", mig_strategy="mixed", geometry="H100-80GB: 1g.10gb=7"
    )
    assert status == 200 and "7 x 1g.10gb per H100 -&gt; 56 shares of 1/7 GE (56 in all)" in html
    assert "needs empty nodes" in html and not SharingPolicy.objects.exists()
    status, html = page(
        client,
        url,
        intent="save",
        mode="mig",
        mig_strategy="mixed",
        geometry="H100-80GB: 3g.40gb=2, 1g.10gb=1",
    )
    assert status == 200 and "policy.mig_geometry_invalid" in html and not SharingPolicy.objects.exists()
    response = client.post(
        url, {"intent": "save", "mode": "mig", "mig_strategy": "mixed", "geometry": "H100-80GB: 1g.10gb=7"}
    )
    assert response.status_code == 302 and SharingPolicy.objects.get(pool=pool).mode == "mig"


def test_publishing_from_the_page_after_its_dry_run_names_the_blocking_pod(cast, client, pool):
    client.force_login(cast.pat)
    url = f"/policies/pools/{pool.pk}/"
    client.post(
        url, {"intent": "save", "mode": "mig", "mig_strategy": "mixed", "geometry": "H100-80GB: 1g.10gb=7"}
    )
    gpu_pod(pool, node="h100-node-0", namespace="team-vision", pod="train-0", tenant=cast.vision)
    status, html = page(client, url)
    assert "Publish r1" in html and "team-vision/train-0" in html
    assert (
        client.post(url, {"intent": "publish", "note": "seven slices", "confirm_no_agent": "on"}).status_code
        == 302
    )
    revision = PolicyRevision.objects.get(pool=pool)
    assert revision.number == 1 and revision.note == "seven slices"
    status, html = page(client, f"/policies/pools/{pool.pk}/revisions/")
    assert status == 200 and "r1" in html and "needs empty nodes" in html
    status, html = page(client, f"/policies/revisions/{revision.pk}/diff/")
    assert status == 200 and "+        1g.10gb: 7" in html and "gpuplatform-h100-r1" in html


def test_tenants_see_no_sharing_pages_and_only_their_own_admission_rules(cast, client, pool):
    save_admission_rule(
        actor=cast.pat,
        tenant_id=cast.nlp.pk,
        pool_id=pool.pk,
        allowed_flavor_ids=[],
        max_per_pod=3,
        allowed_priority_class_ids=[],
    )
    client.force_login(cast.alice)
    assert client.get(f"/policies/pools/{pool.pk}/").status_code == 404
    assert client.get("/policies/").status_code == 302  # to the rules page, what a tenant has here
    status, html = page(client, "/policies/admission-rules/")
    assert status == 200 and "No admission rules." in html and "Save rule" not in html
    client.force_login(cast.bob)
    status, html = page(client, "/policies/admission-rules/")
    assert "<td>nlp</td>" in html and '<td class="num">3</td>' in html


def test_apply_on_the_page_queues_a_job_for_a_worker_and_shows_how_it_went(
    cast, client, pool, django_capture_on_commit_callbacks
):
    save_admission_rule(
        actor=cast.pat,
        tenant_id=cast.nlp.pk,
        pool_id=pool.pk,
        allowed_flavor_ids=[],
        max_per_pod=3,
        allowed_priority_class_ids=[],
    )
    client.force_login(cast.pat)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(
            "/policies/admission-rules/", {"intent": "apply", "pool": str(pool.pk)}, follow=True
        )
    html = response.content.decode()
    assert response.status_code == 200 and len(queued) == 1  # the worker's task, after commit
    assert f"Apply to {pool.cluster.name} queued" in html
    (job,) = AdmissionApply.objects.all()
    assert (job.state, job.cluster_id, job.requested_by) == ("queued", pool.cluster_id, cast.pat)
    assert '<td class="wrap">queued</td>' in html  # the applies table, newest first
    # a tenant sees neither the button nor the applies
    client.force_login(cast.bob)
    html = client.get("/policies/admission-rules/").content.decode()
    assert 'data-testid="applies"' not in html and "Apply to" not in html
