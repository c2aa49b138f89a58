"""Oversubscription counts a flavor's physical cards (issue 27): the page showed 0 cards for every
flavor of the demo because a flavor names its GPU model as the GFD product label
("NVIDIA-H100-80GB-HBM3", as the demo's catalogue does) while cards are counted under the catalog's
key ("H100-80GB"), and the two never matched."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from quotas.models import Flavor, Quota
from quotas.selectors import oversubscription
from tests.inventory import factories as inv
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

H100 = "NVIDIA-H100-80GB-HBM3"
GPU = "nvidia.com/gpu"
MIG_1G = "nvidia.com/mig-1g.10gb"


@pytest.fixture
def h100_pool(cast):
    """Three nodes of 8 H100s, one unit a card: 24 cards, 24 whole GPUs advertised. Quotas: vision 20
    and nlp 16 whole GPUs on `h100`, vision 14 x 1g.10gb (1/7 GE each) on `h100-mig-1g`."""
    pool = inv.h100_cards(nodes=3, blocked={})
    whole = adm.whole_gpu_flavor(name="h100", pool=pool, gpu_model=H100)
    mig = Flavor.objects.create(
        name="h100-mig-1g", pool=pool, gpu_model=H100, resources=[{"name": MIG_1G, "ge_per_unit": "1/7"}]
    )
    Quota.objects.create(tenant=cast.vision, flavor=whole, resource=GPU, nominal=20)
    Quota.objects.create(tenant=cast.nlp, flavor=whole, resource=GPU, nominal=16)
    Quota.objects.create(tenant=cast.vision, flavor=mig, resource=MIG_1G, nominal=14)
    return pool


def test_a_flavor_named_by_its_product_label_counts_its_pools_cards(h100_pool):
    rows = {row["flavor"].name: row for row in oversubscription()}

    # h100: 20 + 16 = 36 whole GPUs promised on 24 advertised = 1.5 x; 36 GE on 24 cards = 1.5 x
    whole = rows["h100"]
    assert (whole["nominal"], whole["physical"], whole["ratio"]) == (36, 24, 1.5)
    assert (whole["nominal_ge"], whole["cards"], whole["card_ratio"]) == (36, 24, 1.5)
    # h100-mig-1g: 14 x 1/7 = 2 GE on the same 24 cards = 0.083 -> 0.08 x; no 1g.10gb advertised
    mig = rows["h100-mig-1g"]
    assert (mig["nominal_ge"], mig["cards"], mig["card_ratio"], mig["ratio"]) == (2, 24, 0.08, None)


def test_the_catalog_key_and_an_unknown_model_still_count(h100_pool):
    Flavor.objects.filter(name="h100").update(gpu_model="H100-80GB")
    Flavor.objects.filter(name="h100-mig-1g").update(gpu_model="Tesla-T4")

    rows = {row["flavor"].name: row for row in oversubscription()}

    assert rows["h100"]["cards"] == 24
    assert rows["h100-mig-1g"]["cards"] == 0  # the pool has no T4s: no cards of that model


def test_the_page_shows_the_cards_and_the_ratio(cast, client, h100_pool):
    client.force_login(cast.pat)

    html = client.get("/queues/oversubscription/").content.decode()

    row = html[html.index("<td>h100") : html.index("</tr>", html.index("<td>h100"))]
    # units offered and cards are both 24; nominal ÷ offered and GE ÷ cards are both 1.5
    assert 'data-label="Units offered">24</td>' in row and 'data-label="Cards">24</td>' in row
    assert row.count("1.50\u00d7") == 2


XID = inv.XID_TAINT
CORDON = inv.HAMI_CORDON
NOT_OFFERED = f"2 of 16 H100-80GB not offered: 1 GPU {CORDON}, 1 GPU {XID}"


@pytest.fixture
def tainted_pool(cast):
    """Two nodes of 8 H100s, one unit a card (16 cards): gpu 3 of h100-0 tainted by a fatal XID, gpu 5
    of h100-1 cordoned by HAMi. Flavor `h100` (vision 20 whole GPUs) on the pool, `t4` on a pool
    nothing taints."""
    pool = inv.h100_cards(nodes=2, blocked={(0, 3): XID, (1, 5): CORDON})
    whole = adm.whole_gpu_flavor(name="h100", pool=pool, gpu_model=H100)
    adm.whole_gpu_flavor(name="t4", pool=inv.pool("Tesla-T4"), gpu_model="Tesla-T4")
    Quota.objects.create(tenant=cast.vision, flavor=whole, resource=GPU, nominal=20)
    return pool


def test_the_page_says_which_cards_are_not_offered_and_why_under_the_flavor(cast, client, tainted_pool):
    rows = {row["flavor"].name: row for row in oversubscription()}
    # the cards are still 16 (a tainted card is a card): 20 GE on 16 cards = 1.25 x
    assert (rows["h100"]["cards"], rows["h100"]["card_ratio"]) == (16, 1.25)
    assert rows["h100"]["not_offered"] == NOT_OFFERED
    assert rows["t4"]["not_offered"] == ""

    client.force_login(cast.pat)
    html = client.get("/queues/oversubscription/").content.decode()

    assert html.count(NOT_OFFERED) == 1 and html.count('data-testid="not-offered"') == 1
    # in a row of its own right under the h100 row
    after = html[html.index("<td>h100") :]
    assert after.index(NOT_OFFERED) < after.index("</tbody>")
    assert after.index("</tr>") < after.index(NOT_OFFERED)


def test_the_words_cost_the_page_two_queries_whatever_the_flavors(cast, client, tainted_pool):
    client.force_login(cast.pat)
    client.get("/queues/oversubscription/")  # fill the process's capacity caches
    with CaptureQueriesContext(connection) as few:
        client.get("/queues/oversubscription/")
    for n in range(10):
        Flavor.objects.create(
            name=f"h100-{n}", pool=tainted_pool, gpu_model=H100, resources=[{"name": GPU, "ge_per_unit": "1"}]
        )
    client.get("/queues/oversubscription/")
    with CaptureQueriesContext(connection) as many:
        html = client.get("/queues/oversubscription/").content.decode()
    assert html.count(NOT_OFFERED) == 11
    assert len(many) == len(few)
    # the tainted units, then what is held of them; the cards are those the page read already
    assert sum("inventory_shareableunit" in q["sql"] and "unavailable" in q["sql"] for q in many) == 1
    assert sum('"inventory_allocation"' in q["sql"] for q in many) == 1
