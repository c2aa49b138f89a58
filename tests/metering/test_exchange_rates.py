"""One currency per period unless finance sets an exchange rate for it (issue 32, item 7 and Build):
finance enters a rate for the period with its source and date (audited); a rate card in that currency
is then priced in the period's currency; bad input is refused and changes nothing.

March 2025, one hour. The period is priced in USD: H100 at 2.50 USD a card-hour; vision holds the
pool's 2 cards: 2 x 2.50 = 5.00. A T4 card in EUR, 0.50 EUR a card-hour; finance sets 1 EUR = 1.0834
USD (ECB reference rate of 2025-02-28), so the T4 card prices at 0.50 x 1.0834 = 0.5417 USD (six
places: exact). T4 pool: 12 cards, nlp holds 10 card-hours, 2 idle:
    nlp   10 x 0.5417 = 5.417  -> 5.42 USD
    idle   2 x 0.5417 = 1.0834 -> 1.08 USD
    pool  12 x 0.5417 = 6.5004 -> 6.50 USD = 5.42 + 1.08 (no residue)
A credit of -1.00 EUR to nlp: -1.0834 -> -1.08 USD.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal as D

import pytest

from gpuplatform.audit.models import AuditEvent
from metering.models import ExchangeRate, RateCard, ReportLine
from metering.services.credits import book_credit
from metering.services.reports import build_period_report
from tests.metering import rows
from tests.metering.factories import HOUR

pytestmark = pytest.mark.django_db

EUR_RATE = {"period": "2025-03", "currency": "EUR", "rate": "1.0834", "source": "ECB reference rate",
            "as_of": "2025-02-28"}  # fmt: skip


@pytest.fixture
def march(cast):
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=2, idle="0")
    rows.held(h100, tenant=cast.vision, ge_hours="2")
    rows.card(h100, price="2.50")
    t4 = rows.Pool(cluster=h100.cluster, pool=rows.inv.pool("t4", on=h100.cluster), period=h100.period)
    t4.model = "T4"
    rows.capacity(t4, cards=12, idle="2", node="n1")
    rows.held(t4, tenant=cast.nlp, ge_hours="10")
    return h100, t4


def eur_card(api, user):
    return api(user).post(
        "/api/v1/rate-cards/",
        {"gpu_model": "T4", "currency": "EUR", "price_per_ge_hour": "0.50",
         "effective_from": "2025-03-01T00:00:00Z"},
        format="json",
    )  # fmt: skip


def test_a_card_in_another_currency_is_priced_at_finances_rate(march, cast, api):
    refused = eur_card(api, cast.fiona)
    assert (refused.status_code, refused.json()["code"]) == (409, "currency_mix")
    got = api(cast.fiona).post("/api/v1/exchange-rates/", EUR_RATE, format="json")
    assert got.status_code == 201, got.content
    assert {k: got.json()[k] for k in ("period", "currency", "rate", "source", "as_of", "set_by")} == {
        "period": "2025-03", "currency": "EUR", "rate": "1.08340000", "source": "ECB reference rate",
        "as_of": "2025-02-28", "set_by": "fiona",
    }  # fmt: skip
    event = AuditEvent.objects.get(action="exchange_rate.set")
    assert event.after["source"] == "ECB reference rate" and event.after["as_of"] == "2025-02-28"
    assert eur_card(api, cast.fiona).status_code == 201
    # a credit in EUR too: -1.00 EUR x 1.0834 = -1.0834 -> -1.08 USD on the statement
    book_credit(
        actor=cast.fiona, tenant_id=cast.nlp.pk, amount=D("-1.00"), currency="EUR", reason="outage", now=HOUR
    )
    period = build_period_report(period_id=march[0].period.pk, at=HOUR)
    lines = {
        (line.kind, line.tenant_slug, line.pool_name.rsplit("/", 1)[-1]):
            (line.currency, line.unit_price, line.amount)
        for line in ReportLine.objects.filter(period=period)
    }  # fmt: skip
    assert lines == {
        ("charge", "vision", "h100"): ("USD", D("2.50"), D("5.00")),
        ("idle", "", "h100"): ("USD", D("2.50"), D("0.00")),  # both cards held
        ("charge", "nlp", "t4"): ("USD", D("0.5417"), D("5.42")),
        ("idle", "", "t4"): ("USD", D("0.5417"), D("1.08")),
        ("credit", "nlp", ""): ("USD", None, D("-1.08")),
    }
    t4 = next(r for r in period.summary["reconciliation"] if r["pool"].endswith("/t4"))
    assert (t4["currency"], D(t4["physical"]), D(t4["lines_total"]), D(t4["residue"])) == (
        "USD", D("6.50"), D("6.50"), D("0.00"),
    )  # fmt: skip
    assert RateCard.objects.get(gpu_model="T4").price_per_ge_hour == D("0.50")  # the card is unchanged


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"currency": "XYZ"}, 400, None),  # not ISO 4217
        ({"currency": "eur"}, 400, None),  # not in capitals
        ({"rate": "0"}, 400, None),
        ({"rate": "-1.08"}, 400, None),
        ({"rate": "abc"}, 400, None),
        ({"source": ""}, 400, None),
        ({"as_of": "yesterday"}, 400, None),
        ({"period": "1999-01"}, 400, None),  # no such period
        ({"currency": "USD"}, 409, "own_currency"),  # the period's own currency
    ],
)
def test_bad_input_is_refused_and_changes_nothing(march, cast, api, change, status, code):
    api(cast.fiona).post("/api/v1/exchange-rates/", EUR_RATE, format="json")
    before = (
        list(ExchangeRate.objects.values_list("currency", "rate", "source", "as_of")),
        AuditEvent.objects.count(),
    )
    asked = EUR_RATE | {"rate": "1.2"} | change  # a rate that would change it, were it taken
    got = api(cast.fiona).post("/api/v1/exchange-rates/", asked, format="json")
    assert got.status_code == status, got.content
    assert got["Content-Type"].startswith("application/problem+json")
    if code:
        assert got.json()["code"] == code
    after = (
        list(ExchangeRate.objects.values_list("currency", "rate", "source", "as_of")),
        AuditEvent.objects.count(),
    )
    assert after == before == ([("EUR", D("1.0834"), "ECB reference rate", date(2025, 2, 28))], before[1])


def test_only_finance_sets_a_rate_and_tenants_never_see_them(march, cast, api):
    assert api(cast.alice).post("/api/v1/exchange-rates/", EUR_RATE, format="json").status_code == 403
    assert not ExchangeRate.objects.exists()
    api(cast.fiona).post("/api/v1/exchange-rates/", EUR_RATE, format="json")
    assert api(cast.alice).get("/api/v1/exchange-rates/").json()["results"] == []


def test_finance_sets_a_rate_on_the_period_page_and_a_refusal_is_shown(march, cast, client):
    client.force_login(cast.fiona)
    url = f"/metering/periods/{march[0].period.pk}/exchange-rate/"
    form = {k: v for k, v in EUR_RATE.items() if k != "period"}
    refused = client.post(url, form | {"rate": "0"}, follow=True).content.decode()
    assert "Exchange rate not set" in refused or "positive" in refused
    assert not ExchangeRate.objects.exists()
    page = client.post(url, form, follow=True).content.decode()
    table = re.search(r'data-testid="exchange-rates">(.*?)</table>', page, re.S).group(1)
    assert "1 EUR" in table and "1.08340000 USD" in table and "ECB reference rate" in table
    assert "priced in <strong>USD</strong>" in page
    client.force_login(cast.alice)
    assert client.post(url, form | {"currency": "GBP"}).status_code == 404  # not her page
    assert list(ExchangeRate.objects.values_list("currency", flat=True)) == ["EUR"]
