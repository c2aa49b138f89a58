"""A department's people see their teams' costs rolled up (issue 32, item 7: "a department's viewer
sees none of its teams' costs"), and after a reorganisation a period's lines stay with the tree they
were built with, like the period's frozen roll-ups and statements.

March 2025, one hour, pool h100, 4 H100 cards at 2.50 USD a card-hour (10.00 in all):
    vision   1.5 card-hours = 3.75     (under research)
    nlp      1.0            = 2.50     (under research)
    globex-ml 0.5           = 1.25     (under globex)
    idle     1.0            = 2.50     (the platform's)
research's roll-up: 3.75 + 2.50 = 6.25. rhea is a plain viewer of research, gil a viewer of globex.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from gpuplatform.accounts.models import User
from metering.services.periods import close_billing_period, start_closing_period
from metering.services.reports import build_period_report
from tenants.services import add_membership, update_tenant
from tests.fixtures.people import make_user
from tests.metering import rows

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)
APRIL_HOUR = datetime(2025, 4, 10, 10, tzinfo=UTC)


@pytest.fixture
def march(cast):
    return build_closed_march(cast)


def build_closed_march(cast):
    for name, tenant in (("rhea", cast.research), ("gil", cast.globex)):
        make_user(name)
        add_membership(actor=cast.pat, tenant_id=tenant.pk, username=name, role="viewer")
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=4, idle="1.0")
    rows.held(h100, tenant=cast.vision, ge_hours="1.5")
    rows.held(h100, tenant=cast.nlp, ge_hours="1.0")
    rows.held(h100, tenant=cast.globex_ml, ge_hours="0.5")
    rows.card(h100, price="2.50")
    start_closing_period(actor=cast.fiona, period_id=h100.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=h100.period.pk, now=LATER)
    return h100


def amounts(api, user, query: str = "period=2025-03") -> dict[str, D]:
    got = api(user).get(f"/api/v1/reports/?{query}&page_size=100")
    assert got.status_code == 200
    return {r["tenant_slug"]: D(r["amount"]) for r in got.json()["results"]}


def my_costs(client, user) -> list[list[str]]:
    client.force_login(user)
    page = client.get("/metering/periods/").content.decode()
    table = re.search(r'data-testid="my-costs">(.*?)</table>', page, re.S).group(1)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)][:4]
        for row in re.findall(r"<tr data-testid[^>]*>(.*?)</tr>", table, re.S)
    ]


def test_a_departments_viewer_sees_each_teams_cost_and_their_sum(march, cast, api, client):
    rhea = User.objects.get(username="rhea")
    assert amounts(api, rhea) == {"vision": D("3.75"), "nlp": D("2.50")}  # not globex-ml's 1.25
    assert amounts(api, cast.victor) == {"vision": D("3.75")}  # a team's viewer: its own only
    usage = api(rhea).get("/api/v1/usage/?period=2025-03&meter=allocated_ge_hours").json()["results"]
    assert sorted((u["tenant_slug"], D(u["quantity"])) for u in usage) == [
        ("nlp", D("1.0")),
        ("vision", D("1.5")),
    ]
    # the page: the period's total (3.75 + 2.50 = 6.25) then a row per team
    assert my_costs(client, rhea) == [
        ["2025-03", "Total", "2.50", "6.25 USD"],
        ["", "nlp", "1.00", "2.50 USD"],
        ["", "vision", "1.50", "3.75 USD"],
    ]


def test_after_a_move_closed_costs_stay_with_the_old_department_and_new_ones_go_to_the_new(march, cast, api):
    rhea, gil = User.objects.get(username="rhea"), User.objects.get(username="gil")
    update_tenant(actor=cast.pat, tenant_id=cast.vision.pk, parent_id=cast.globex.pk)
    # March was closed (and billed) with vision under research: research's frozen roll-up is still
    # 6.25, and research's people still see the two lines it is made of; globex's do not.
    march.period.refresh_from_db()
    rollups = {r["tenant"]: D(r["amount"]) for r in march.period.summary["rollups"] if r["amount"]}
    assert (rollups["research"], rollups["globex"]) == (D("6.25"), D("1.25"))
    assert amounts(api, rhea) == {"vision": D("3.75"), "nlp": D("2.50")}
    assert amounts(api, gil) == {"globex-ml": D("1.25")}
    assert amounts(api, cast.victor) == {"vision": D("3.75")}  # the team always sees its own
    # April, built after the move (March's card, open-ended, prices it): vision's 2 card-hours
    # at 2.50 = 5.00 roll up to globex now.
    april = rows.pool("h100-apr", hour=APRIL_HOUR)
    rows.capacity(april, cards=2, idle="0", hour=APRIL_HOUR)
    rows.held(april, tenant=cast.vision, ge_hours="2", hour=APRIL_HOUR)
    built = build_period_report(period_id=april.period.pk, at=APRIL_HOUR)
    rollups = {r["tenant"]: D(r["amount"]) for r in built.summary["rollups"] if r["amount"]}
    assert rollups["globex"] == D("5.00") and "research" not in rollups
    assert amounts(api, gil, "period=2025-04") == {"vision": D("5.00")}
    assert amounts(api, rhea, "period=2025-04") == {}
