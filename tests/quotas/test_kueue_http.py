"""Issue #18 over HTTP: ordered flavor fallback, borrowWithinCohort and per-queue preemption policy,
with their problem+json codes. Cast: research -> vision (alice), nlp (bob); rita administers research.
Numbers: vision and nlp hold 4 H100s nominal each (make_catalog), 16 H100s in the pool; an A100
flavor with 8 cards, vision 2 nominal on it.
"""

from __future__ import annotations

import re

import pytest

from inventory.models import NodePool
from quotas.models import CapacityRequest, Flavor, PriorityClass, Quota
from tests.helpers import assert_problem, database_state
from tests.inventory import factories as inv
from tests.quotas.conftest import GPU, give_capacity, make_catalog

pytestmark = pytest.mark.django_db

URL = "/api/v1/capacity-requests/"
QUEUES = "/api/v1/queues/"
TABLES = ("quotas.CapacityRequest", "quotas.RequestTransition", "quotas.Queue", "audit.AuditEvent")


@pytest.fixture
def two_flavors(cast):
    catalog = make_catalog(cast, physical=16)
    pool: NodePool = inv.pool("a100-pool")
    give_capacity(pool, 8)
    a100 = Flavor.objects.create(
        name="a100", pool=pool, gpu_model="A100-80GB", resources=[{"name": GPU, "ge_per_unit": "1"}]
    )
    Quota.objects.create(tenant=cast.vision, flavor=a100, resource=GPU, nominal=2)
    PriorityClass.objects.create(name="standard", value=500)
    return catalog, a100


def submit(client, **body):
    response = client.post(URL, {"priority_class": "batch", **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_request_falls_back_to_its_second_flavor_when_the_first_is_full(cast, api, two_flavors):
    _, a100 = two_flavors
    alice = api(cast.alice)
    # given: vision holds 4 H100s (its nominal) at prod, and nlp its 4: the research pool of 8 is full
    submit(alice, tenant="vision", flavor="h100", amount=4, priority_class="prod")
    submit(api(cast.bob), tenant="nlp", flavor="h100", amount=4, priority_class="prod")
    # when: vision asks 2, H100 else A100
    body = submit(alice, tenant="vision", flavors=["h100", "a100"], amount=2)
    # then: H100 has no room and nothing to preempt (prod is not preemptible); A100 has vision's 2
    assert (body["state"], body["flavor_name"]) == ("admitted", "a100")
    assert [(a["flavor"], a["outcome"]) for a in body["flavor_attempts"]] == [
        ("h100", "wait"),
        ("a100", "admit"),
    ]
    row = CapacityRequest.objects.get(pk=body["id"])
    assert row.flavor_id == a100.pk
    assert row.fallback_flavors == [str(Flavor.objects.get(name="h100").pk)]


def test_a_request_on_its_first_flavor_keeps_it(cast, api, two_flavors):
    body = submit(api(cast.alice), tenant="vision", flavors=["h100", "a100"], amount=3)
    assert (body["state"], body["flavor_name"]) == ("admitted", "h100")
    assert [a["outcome"] for a in body["flavor_attempts"]] == ["admit", "not_tried"]


def test_a_request_naming_flavors_explains_each_while_it_waits(cast, api, client, two_flavors):
    alice = api(cast.alice)
    submit(alice, tenant="vision", flavor="h100", amount=4, priority_class="prod")
    submit(api(cast.bob), tenant="nlp", flavor="h100", amount=4, priority_class="prod")
    submit(alice, tenant="vision", flavor="a100", amount=2, priority_class="prod")
    # when: vision asks 1 more, H100 else A100: both full of non-preemptible work
    body = submit(alice, tenant="vision", flavors=["h100", "a100"], amount=1)
    # then: it waits, saying why on each flavor; the queue page shows both
    assert (body["state"], body["reason_code"]) == ("pending", "waiting_for_quota")
    assert "h100:" in body["message"] and "a100:" in body["message"]
    client.force_login(cast.alice)
    page = client.get("/queues/").content.decode()
    assert "h100 → a100" in page
    assert "h100: wait" in page and "a100: wait" in page
    assert 'data-code="waiting_for_quota"' in page  # the code stays out of the words, in the markup
    # and what vision's queue may preempt, in words (one row per tenant / queue)
    row = re.search(r"<tr><td>vision / default</td>(.*?)</tr>", re.sub(r"\s+", " ", page))
    assert row is not None and "<td>lower priority</td>" in row.group(1)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"tenant": "vision", "amount": 1}, 400, "flavor_required"),
        ({"tenant": "vision", "flavor": "h100", "flavors": ["a100"], "amount": 1}, 400, "flavor_and_flavors"),
        ({"tenant": "vision", "flavors": ["h100", "h100"], "amount": 1}, 400, "flavor_repeated"),
        ({"tenant": "vision", "flavors": ["h100", "nope"], "amount": 1}, 404, "flavor_not_found"),
        ({"tenant": "vision", "flavors": [], "amount": 1}, 400, "flavor_required"),
        ({"tenant": "vision", "flavors": ["h100", "hami"], "amount": 1}, 400, "flavors_incompatible"),
        ({"tenant": "vision", "flavors": [f"f{i}" for i in range(9)], "amount": 1}, 400, "too_many_flavors"),
    ],
)
def test_it_refuses_bad_flavor_lists_and_changes_nothing(cast, api, two_flavors, body, status, code):
    Flavor.objects.create(
        name="hami",
        resources=[
            {"name": "nvidia.com/gpumem", "ge_per_unit": "1/81920"},
            {"name": GPU, "ge_per_unit": "1"},
        ],
    )
    before = database_state(*TABLES)
    assert_problem(api(cast.alice).post(URL, body, format="json"), status, code)
    assert database_state(*TABLES) == before


def test_a_queue_threshold_without_borrow_within_cohort_is_refused(cast, api, two_flavors):
    catalog, _ = two_flavors
    before = database_state(*TABLES)
    response = api(cast.rita).patch(
        f"{QUEUES}{catalog.vision_queue.pk}/", {"max_priority_threshold": 0}, format="json"
    )
    assert_problem(response, 400, "max_priority_threshold_without_borrowing")
    assert database_state(*TABLES) == before


def test_what_a_queue_may_take_from_relatives_is_set_from_above(cast, api, two_flavors):
    catalog, _ = two_flavors
    url = f"{QUEUES}{catalog.vision_queue.pk}/"
    # alice administers vision only: her queue's own preemption is hers, its reach into nlp is not
    assert (
        api(cast.alice).patch(url, {"within_tenant": "LowerOrNewerEqualPriority"}, format="json").status_code
        == 200
    )
    assert_problem(
        api(cast.alice).patch(url, {"borrow_within_cohort": "LowerPriority"}, format="json"),
        403,
        "set_from_above",
    )
    # rita, above vision, may
    done = api(cast.rita).patch(
        url, {"borrow_within_cohort": "LowerPriority", "max_priority_threshold": 100}, format="json"
    )
    assert done.status_code == 200, done.json()
    assert (done.json()["borrow_within_cohort"], done.json()["max_priority_threshold"]) == (
        "LowerPriority",
        100,
    )
    assert_problem(
        api(cast.rita).patch(url, {"within_tenant": "Any"}, format="json"), 400, "validation_failed"
    )


def busy_nlp(cast, api):
    """nlp holds its own 2 plus 4 borrowed at batch (100): research's 8 has 6 used, 2 idle (nlp's)."""
    bob = api(cast.bob)
    submit(bob, tenant="nlp", flavor="h100", amount=2, priority_class="prod")
    return submit(bob, tenant="nlp", flavor="h100", amount=4)


def test_without_borrow_within_cohort_a_borrowing_request_does_not_reclaim(cast, api, two_flavors):
    borrowed = busy_nlp(cast, api)
    # when: vision asks 5 at standard (500): 5 > its 4, so it would borrow 1 even after evicting nlp's 4
    body = submit(api(cast.alice), tenant="vision", flavor="h100", amount=5, priority_class="standard")
    # then: Kueue never reclaims for a request that will borrow, unless borrowWithinCohort allows it
    assert (body["state"], body["reason_code"]) == ("pending", "waiting_for_quota")
    assert CapacityRequest.objects.get(pk=borrowed["id"]).state == "admitted"


def test_borrow_within_cohort_lets_a_queue_preempt_lower_priority_borrowers(cast, api, two_flavors):
    catalog, _ = two_flavors
    borrowed = busy_nlp(cast, api)
    url = f"{QUEUES}{catalog.vision_queue.pk}/"
    assert (
        api(cast.rita)
        .patch(url, {"borrow_within_cohort": "LowerPriority", "max_priority_threshold": 100}, format="json")
        .status_code
        == 200
    )
    # when: vision asks 5 at standard (500); nlp's batch job (100 <= threshold 100) borrows 4
    body = submit(api(cast.alice), tenant="vision", flavor="h100", amount=5, priority_class="standard")
    # then: it goes; vision holds 5 = its 4 + 1 of nlp's idle quota
    assert body["state"] == "admitted"
    assert [(loan["lender"], loan["amount"]) for loan in body["borrowed"]] == [("nlp", 1)]
    victim = CapacityRequest.objects.get(pk=borrowed["id"])
    assert victim.state == "preempted"
    assert "borrowing within the cohort" in victim.message


def test_within_tenant_never_keeps_a_queues_own_work(cast, api, two_flavors):
    catalog, _ = two_flavors
    alice = api(cast.alice)
    low = submit(alice, tenant="vision", flavor="h100", amount=4)
    submit(api(cast.bob), tenant="nlp", flavor="h100", amount=4, priority_class="prod")
    assert (
        alice.patch(
            f"{QUEUES}{catalog.vision_queue.pk}/", {"within_tenant": "Never"}, format="json"
        ).status_code
        == 200
    )
    body = submit(alice, tenant="vision", flavor="h100", amount=2, priority_class="standard")
    assert body["state"] == "pending"
    assert CapacityRequest.objects.get(pk=low["id"]).state == "admitted"


def test_the_request_form_takes_a_flavor_to_fall_back_to(cast, api, client, two_flavors):
    submit(api(cast.alice), tenant="vision", flavor="h100", amount=4, priority_class="prod")
    submit(api(cast.bob), tenant="nlp", flavor="h100", amount=4, priority_class="prod")
    client.force_login(cast.alice)
    html = client.get("/queues/requests/new/").content.decode()
    key = re.search(r'name="idempotency_key" value="([^"]+)"', html).group(1)
    body = {
        "tenant": "vision",
        "flavor": "h100",
        "fallback_flavor": "a100",
        "amount": 2,
        "priority_class": "batch",
    }
    response = client.post("/queues/requests/new/", {**body, "idempotency_key": key})
    assert response.status_code == 302
    row = CapacityRequest.objects.get(tenant=cast.vision, amounts={GPU: 2})
    assert (row.state, row.flavor.name) == ("admitted", "a100")
