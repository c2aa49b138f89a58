"""The cohort catalogue is reused while unchanged, and never once a change is visible."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuplatform.errors import Conflict, NotFound, ValidationFailed
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.runner.catalogue import catalogue_of
from quotas.services.requests import submit_request
from tenants.models import Tenant
from tests.helpers import assert_problem
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


def quotas_of(catalogue):
    return {(q.tenant, q.resource): q.nominal for q in catalogue.quotas}


def test_a_second_read_costs_only_the_stamp(cast, django_assert_num_queries):
    catalog = make_catalog(cast)
    first = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    with django_assert_num_queries(1):
        again = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    assert again is first
    assert quotas_of(first) == {("vision", "nvidia.com/gpu"): 4, ("nlp", "nvidia.com/gpu"): 4}


@pytest.mark.parametrize(
    "change",
    [
        lambda c, cat: Quota.objects.filter(pk=cat.vision_quota.pk).update(nominal=9),
        lambda c, cat: Queue.objects.create(tenant=c.nlp, name="urgent"),
        lambda c, cat: Tenant.objects.filter(pk=c.vision.pk).update(display_name="Vision!"),
        lambda c, cat: PriorityClass.objects.filter(pk=cat.low.pk).update(value=5),
        lambda c, cat: Budget.objects.create(tenant=c.vision, limit_ge_hours=Decimal(10)),
    ],
    ids=["quota", "queue", "tenant", "priority-class", "budget"],
)
def test_any_change_to_the_catalogue_is_read_afresh(cast, change):
    catalog = make_catalog(cast)
    before = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    change(cast, catalog)
    after = catalogue_of(root_path=cast.acme.path, flavors=[catalog.flavor])
    assert after is not before


def test_a_raised_quota_admits_at_once(cast):
    catalog = make_catalog(cast, physical=16, vision=2, nlp=0)
    # vision holds its 2; a third waits, the catalogue now cached
    for _ in range(2):
        submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)
    waiting = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert waiting.state == "pending"
    # the quota is raised by 1: the next request is decided on the new quota
    Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=4)
    after = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert after.state == "admitted"


# The names a submission gives (tenant, queue, flavor, priority class) are cached under the same stamp
# (quotas/services/request_names.py): whoever filled the cache, each requester still sees only what the
# scoping door shows it, and a change is seen by the very next submission.


def ask(client, tenant="vision", flavor="h100"):
    return client.post(
        "/api/v1/capacity-requests/", {"tenant": tenant, "flavor": flavor, "amount": 1}, format="json"
    )


def test_names_another_requester_cached_are_still_hidden_from_outsiders(cast, api):
    make_catalog(cast)
    assert ask(api(cast.alice)).status_code == 201  # vision, its queue, h100 and batch now cached

    # charlie belongs nowhere, bob administers nlp only: vision does not exist for them
    for outsider in (cast.charlie, cast.bob):
        assert_problem(ask(api(outsider)), 404, "tenant_not_found")
    # victor sees vision but only views it
    assert ask(api(cast.victor)).status_code == 403


def test_a_flavor_renamed_or_dedicated_elsewhere_is_seen_by_the_next_submission(cast):
    catalog = make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)

    Flavor.objects.filter(pk=catalog.flavor.pk).update(name="h100-sxm")
    with pytest.raises(NotFound) as renamed:
        submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)
    assert renamed.value.code == "flavor_not_found"

    submit_request(actor=cast.pat, tenant="vision", flavor="h100-sxm", amount=1)  # cached again
    Flavor.objects.filter(pk=catalog.flavor.pk).update(tenant=cast.globex)
    with pytest.raises(ValidationFailed) as dedicated:
        submit_request(actor=cast.pat, tenant="vision", flavor="h100-sxm", amount=1)
    assert dedicated.value.code == "flavor_not_allowed"


def test_a_tenant_suspended_above_is_refused_at_the_next_submission(cast):
    make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)

    Tenant.objects.filter(pk=cast.research.pk).update(state="suspended")
    with pytest.raises(Conflict) as refused:
        submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)
    assert refused.value.code == "tenant_suspended"


# A tenant not yet cached brings its whole cohort's names in: the siblings' submissions then read no
# tenant or queue by name, and are refused or hidden exactly as before.


def test_a_sibling_of_a_cached_team_is_named_without_reading_tenants_or_queues(
    cast, django_assert_max_num_queries
):
    catalog = make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)

    with django_assert_max_num_queries(50) as captured:
        submitted = submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1).request
    assert (submitted.tenant_id, submitted.queue_id) == (cast.nlp.pk, catalog.nlp_queue.pk)
    statements = [q["sql"] for q in captured.captured_queries]
    assert not [sql for sql in statements if '"tenants_tenant"."slug" =' in sql]
    assert not [sql for sql in statements if 'FROM "quotas_queue"' in sql]


def test_a_sibling_cached_by_another_requester_is_still_hidden_from_outsiders(cast, api):
    make_catalog(cast)
    assert ask(api(cast.pat)).status_code == 201  # vision's cohort, nlp with it, now cached

    for outsider in (cast.alice, cast.charlie):  # alice administers vision, not its sibling nlp
        assert_problem(ask(api(outsider), tenant="nlp"), 404, "tenant_not_found")
    assert ask(api(cast.bob), tenant="nlp").status_code == 201


def test_a_sibling_suspended_or_given_a_new_first_queue_is_seen_by_its_next_submission(cast):
    make_catalog(cast)
    submit_request(actor=cast.alice, tenant="vision", flavor="h100", amount=1)

    first = Queue.objects.create(tenant=cast.nlp, name="aaa-first")
    assert submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1).request.queue_id == first.pk
    Tenant.objects.filter(pk=cast.nlp.pk).update(state="suspended")
    with pytest.raises(Conflict) as refused:
        submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1)
    assert refused.value.code == "tenant_suspended"
