"""Month-to-date cost and month-end forecast (issue 32, item 9: "no month-to-date cost or month-end
forecast for tenants"), in the API and on the tenant's dashboard, for the tenant's subtree with a row
per child. Formula (metering/chargeback/forecast.py):

    forecast = month to date + admitted
    admitted = sum of GE x hours left this month x the GE-hour price then in force, rounded once

Now is 2025-03-10 12:30 UTC; the ledger has metered every hour until 12:00 (the last, 11:00, done).
Pool h100: 4 H100 cards; H100 costs 2.50 a GE-hour until 03-20 00:00, then 3.00.
Metered (10:00): vision holds 1.5 card-hours (3.75), nlp 1.0 (2.50), globex-ml 0.5 (1.25); finance
credited vision -1.00. Month to date: vision 3.75 - 1.00 = 2.75; nlp 2.50; research 5.25.
Admitted and holding:
    vision  2 GE, H100, until 03-11 00:00: 12 h from 12:00 = 24 GE-h x 2.50 = 60.00
    nlp   0.5 GE, H100, no expiry: 03-10 12:00 to 03-20 00:00 = 228 h x 0.5 = 114 GE-h x 2.50 = 285.00
                                   03-20 00:00 to 04-01 00:00 = 288 h x 0.5 = 144 GE-h x 3.00 = 432.00
                                   = 717.00
    nlp     1 GE, T4 (no rate card), until 03-10 22:00: 10 GE-h, unpriced (counted apart)
Not counted: vision's released request, nlp's pending one.
    vision   2.75 +  60.00 =  62.75
    nlp      2.50 + 717.00 = 719.50
    research 5.25 + 777.00 = 782.25
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
import time_machine

from metering.models import MeteredHour, RateCard
from metering.services.credits import book_credit
from quotas.models import CapacityRequest, Flavor
from tenants.services import add_membership
from tests.fixtures.people import make_user
from tests.metering import rows
from tests.metering.factories import HOUR
from tests.quotas import factories as adm

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 10, 12, 30, tzinfo=UTC)
PRICE_CHANGE = datetime(2025, 3, 20, tzinfo=UTC)


def request(tenant, flavor, *, ge: str, admitted: datetime, expires: datetime | None, state: str = "active"):
    return CapacityRequest.objects.create(
        tenant=tenant, queue=adm.queue(tenant=tenant), flavor=flavor, priority_class=adm.priority_class(),
        amounts={"nvidia.com/gpu": 1}, ge=D(ge), state=state, created_at=admitted,
        admitted_at=admitted if state != "pending" else None, expires_at=expires,
    )  # fmt: skip


@pytest.fixture
def march(cast):
    return build_month_so_far(cast)


def build_month_so_far(cast):
    make_user("rhea")
    add_membership(actor=cast.pat, tenant_id=cast.research.pk, username="rhea", role="viewer")
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=4, idle="1.0")
    rows.held(h100, tenant=cast.vision, ge_hours="1.5")
    rows.held(h100, tenant=cast.nlp, ge_hours="1.0")
    rows.held(h100, tenant=cast.globex_ml, ge_hours="0.5")
    rows.card(h100, price="2.50")
    RateCard.objects.filter(gpu_model="H100-80GB").update(effective_to=PRICE_CHANGE)
    RateCard.objects.create(
        gpu_model="H100-80GB", currency="USD", price_per_ge_hour=D("3.00"), effective_from=PRICE_CHANGE
    )
    MeteredHour.objects.create(
        cluster=h100.cluster, hour=datetime(2025, 3, 10, 11, tzinfo=UTC), source="ledger", complete=True
    )
    book_credit(
        actor=cast.fiona,
        tenant_id=cast.vision.pk,
        amount=D("-1.00"),
        currency="USD",
        reason="sorry",
        now=HOUR,
    )
    h100_flavor = Flavor.objects.create(
        name="h100-whole", pool=h100.pool, gpu_model="H100-80GB", resources=[]
    )
    t4 = Flavor.objects.create(name="t4-shared", gpu_model="T4", resources=[])
    request(cast.vision, h100_flavor, ge="2", admitted=datetime(2025, 3, 10, 9, tzinfo=UTC),
            expires=datetime(2025, 3, 11, tzinfo=UTC))  # fmt: skip
    request(cast.nlp, h100_flavor, ge="0.5", admitted=datetime(2025, 3, 5, tzinfo=UTC), expires=None)
    request(cast.nlp, t4, ge="1", admitted=datetime(2025, 3, 10, 8, tzinfo=UTC),
            expires=datetime(2025, 3, 10, 22, tzinfo=UTC))  # fmt: skip
    request(cast.vision, h100_flavor, ge="4", admitted=datetime(2025, 3, 2, tzinfo=UTC), expires=None,
            state="released")  # fmt: skip
    request(cast.nlp, h100_flavor, ge="8", admitted=datetime(2025, 3, 10, tzinfo=UTC), expires=None,
            state="pending")  # fmt: skip
    return h100


def figures(body: dict) -> tuple:
    (usd,) = body["totals"]
    return usd["currency"], D(usd["month_to_date"]), D(usd["admitted"]), D(usd["forecast"])


def test_a_department_sees_its_month_to_date_and_forecast_with_a_row_per_team(march, cast, api):
    from gpuplatform.accounts.models import User

    with time_machine.travel(NOW, tick=False):
        got = api(User.objects.get(username="rhea")).get(f"/api/v1/costs/{cast.research.pk}/")
    assert got.status_code == 200, got.content
    body = got.json()
    assert (body["period"], body["metered_until"]) == ("2025-03", "2025-03-10T12:00:00+00:00")
    assert figures(body) == ("USD", D("5.25"), D("777.00"), D("782.25"))
    assert D(body["unpriced_ge_hours"]) == D("10")  # nlp's T4 hours: no rate card, not priced
    children = {c["tenant_slug"]: figures(c) for c in body["children"]}
    assert children == {
        "nlp": ("USD", D("2.50"), D("717.00"), D("719.50")),
        "vision": ("USD", D("2.75"), D("60.00"), D("62.75")),
    }
    assert "month_to_date + admitted" in body["formula"]


def test_another_tenants_costs_are_a_404(march, cast, api):
    with time_machine.travel(NOW, tick=False):
        assert api(cast.victor).get(f"/api/v1/costs/{cast.research.pk}/").status_code == 404  # above
        assert api(cast.victor).get(f"/api/v1/costs/{cast.nlp.pk}/").status_code == 404  # beside
        assert api(cast.charlie).get(f"/api/v1/costs/{cast.vision.pk}/").status_code == 404
        mine = api(cast.victor).get(f"/api/v1/costs/{cast.vision.pk}/")
    assert figures(mine.json()) == ("USD", D("2.75"), D("60.00"), D("62.75"))


def test_the_dashboard_shows_the_month_so_far_and_the_forecast(march, cast, client):
    from gpuplatform.accounts.models import User

    client.force_login(User.objects.get(username="rhea"))
    with time_machine.travel(NOW, tick=False):
        page = client.get(f"/tenants/{cast.research.pk}/dashboard/").content.decode()
    section = re.search(r'data-testid="cost-rows">(.*?)</table>', page, re.S).group(1)
    cells = [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", section, re.S)
        if "<td" in row
    ]
    assert cells == [
        ["All of research", "5.25 USD", "777.00 USD", "782.25 USD", "10.00"],
        ["nlp", "2.50 USD", "717.00 USD", "719.50 USD", "10.00"],
        ["vision", "2.75 USD", "60.00 USD", "62.75 USD", "0.00"],
    ]
    assert 'data-chart="tenant-costs-data"' in page
