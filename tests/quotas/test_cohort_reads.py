"""A submission's cohort lock, both stamps and the cohort's live requests go to PostgreSQL in one round
trip (`quotas.runner.cohort_reads`, issue 31). The live requests are read for the tenants of the
catalogue cached before the lock; a decision must still count every live request of the cohort when
that catalogue is stale (a tenant added meanwhile), and see capacity added meanwhile."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import Node
from quotas.models import CapacityRequest, Quota
from quotas.runner.cohort_reads import lock_cohort_reading
from quotas.runner.inputs import _live_rows, cohort_root_path, root_id_of
from quotas.runner.loop import readmit
from quotas.services.requests import submit_request
from tenants.services import create_tenant
from tests.inventory import factories as inv
from tests.quotas import factories as adm
from tests.quotas.conftest import make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("the stamps and the one-message reads are PostgreSQL's")


def test_the_cohort_lock_carries_both_stamps_and_the_live_requests(cast):
    make_catalog(cast)
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)  # the catalogue now cached

    with CaptureQueriesContext(connection) as queries:
        second = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request

    assert second.state == "admitted"
    sent = [q["sql"] for q in queries.captured_queries]
    under_cohort_lock = [sql for sql in sent if "pg_advisory_xact_lock(50502" in sql]
    assert len(under_cohort_lock) == 1
    message = under_cohort_lock[0]
    assert "quotas_catalogue_stamp" in message
    assert "inventory_capacity_stamp" in message
    assert "quotas_capacityrequest" in message  # the live requests
    # and none of them costs a round trip of its own any more
    alone = [sql for sql in sent if sql is not message]
    assert not [sql for sql in alone if "inventory_capacity_stamp" in sql]
    assert not [sql for sql in alone if sql.lstrip().startswith("SELECT id, tenant_id, queue_id")]


def test_the_live_rows_read_with_the_lock_are_those_read_alone_and_only_while_the_catalogue_holds(cast):
    catalog = make_catalog(cast)
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)
    submit_request(actor=cast.bob, tenant="nlp", flavor="h100", amount=1)
    root_path = cohort_root_path(cast.vision.path)

    def read():
        with transaction.atomic():
            return lock_cohort_reading(
                root_id=root_id_of(cast.vision.path), root_path=root_path, flavors=[catalog.flavor]
            )

    current = read()
    assert current.live is not None
    tenants = list(current.live.catalogue.slug_of)
    assert current.live.rows == list(_live_rows(tenant_ids=tenants, flavor_ids=[catalog.flavor.pk]))
    assert len(current.live.rows) == 2

    Quota.objects.filter(pk=catalog.nlp_quota.pk).update(nominal=5)  # the cached catalogue is stale now
    assert read().live is None


def test_a_tenant_added_after_the_catalogue_was_cached_has_its_holdings_counted(cast):
    # given vision (4 of its own) holding 1, the cohort's catalogue cached by that submission
    catalog = make_catalog(cast, physical=16, vision=4, nlp=0)
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)
    # and then a new team under research, which some other process admitted 3 (borrowed from vision's
    # idle quota, at a priority no one may preempt)
    speech = create_tenant(actor=cast.pat, slug="speech", display_name="Speech", parent_id=cast.research.pk)
    Quota.objects.create(tenant=speech, flavor=catalog.flavor, resource=adm.GPU, nominal=0)
    held = adm.capacity_request(tenant=speech)
    CapacityRequest.objects.filter(pk=held.pk).update(
        state="admitted", flavor=catalog.flavor, amounts={adm.GPU: 3}, priority_class=catalog.high
    )

    # when vision asks 2 more: 1 + 3 + 2 > 4
    asked = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=2).request

    # then it waits: speech's 3 count, though the cached catalogue never knew speech
    assert asked.state == "pending"


def test_capacity_added_after_the_last_submission_is_seen_by_the_next(cast):
    catalog = make_catalog(cast, physical=2, vision=4, nlp=0)
    submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=2)
    waiting = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert waiting.state == "pending"

    node = Node.objects.create(
        cluster=catalog.pool.cluster,
        pool=catalog.pool,
        name="h100-pool-more",
        model_key="H100-80GB",
        gpu_count=2,
    )
    inv.whole_gpus(node, 2)

    after = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert after.state == "admitted"


def test_the_loop_sends_the_same_reads_with_its_cohort_lock_and_decides_on_a_changed_catalogue(cast):
    # given vision holding its 2 and a third waiting, the catalogue cached
    catalog = make_catalog(cast, physical=16, vision=2, nlp=0)
    for _ in range(2):
        submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1)
    waiting = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    later = submit_request(actor=cast.dana, tenant="vision", flavor="h100", amount=1).request
    assert waiting.state == later.state == "pending"
    # and its quota raised by 1, so the cached catalogue is stale
    Quota.objects.filter(pk=catalog.vision_quota.pk).update(nominal=3)

    # when the loop decides the cohort again
    with CaptureQueriesContext(connection) as queries:
        readmit(root_path=cohort_root_path(cast.vision.path), flavors=[catalog.flavor], now=timezone.now())

    # then exactly the one the new quota makes room for is admitted, the older first
    waiting.refresh_from_db()
    later.refresh_from_db()
    assert (waiting.state, later.state) == ("admitted", "pending")
    under_cohort_lock = [
        q["sql"] for q in queries.captured_queries if "pg_advisory_xact_lock(50502" in q["sql"]
    ]
    assert len(under_cohort_lock) == 1
    assert "inventory_capacity_stamp" in under_cohort_lock[0]
    assert "quotas_capacityrequest" in under_cohort_lock[0]
