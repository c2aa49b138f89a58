"""The cost model through the API and its page, and currencies: ISO 4217 codes in capitals, one per
period unless finance sets an exchange rate."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal as D

import pytest

from gpuplatform.audit.models import AuditEvent
from metering.models import CostModel, RateCard
from metering.services.currency import set_exchange_rate
from metering.services.periods import ensure_period

pytestmark = pytest.mark.django_db
APRIL = datetime(2025, 4, 1, tzinfo=UTC)
H100 = {
    "gpu_model": "H100-80GB", "currency": "USD", "purchase_price_per_card": "30000",
    "amortisation_months": 48, "watts_under_load": "700", "price_per_kwh": "0.12", "pue": "1.4",
    "hosting_per_card_month": "150",
}  # fmt: skip
INPUTS = {k: v for k, v in H100.items() if k not in ("gpu_model", "currency")}


def test_finance_derives_a_price_from_what_the_cards_cost_and_creates_the_rate_card(cast, api):
    # 30,000 / 48 / 730 + 150 / 730 + 0.7 kW x 0.12 x 1.4 = 1.179243835... -> 1.179244 (worked in
    # tests/metering_chargeback/test_cost_model.py)
    preview = api(cast.fiona).post("/api/v1/cost-models/preview/", INPUTS, format="json")
    assert preview.status_code == 200, preview.content
    assert preview.json()["price_per_ge_hour"] == "1.179244"
    assert [s["per_card_hour"] for s in preview.json()["steps"]] == [
        "0.8561643836",
        "0.2054794521",
        "0.1176000000",
    ]
    assert RateCard.objects.count() == 0  # a preview saves nothing
    made = api(cast.fiona).post(
        "/api/v1/cost-models/", {**H100, "effective_from": APRIL.isoformat()}, format="json"
    )
    assert made.status_code == 201, made.content
    card = RateCard.objects.get()
    assert (card.price_per_ge_hour, card.effective_from, card.gpu_model) == (
        D("1.179244"),
        APRIL,
        "H100-80GB",
    )
    assert CostModel.objects.get().rate_card == card
    assert made.json()["derivation"][-1]["per_card_hour"] == "1.179244"
    assert AuditEvent.objects.filter(action="cost_model.created").count() == 1


def test_a_tenant_cannot_and_bad_inputs_change_nothing(cast, api):
    assert api(cast.alice).post("/api/v1/cost-models/preview/", INPUTS, format="json").status_code == 403
    refused = api(cast.alice).post(
        "/api/v1/cost-models/", {**H100, "effective_from": APRIL.isoformat()}, format="json"
    )
    assert refused.status_code == 403
    bad = api(cast.fiona).post(
        "/api/v1/cost-models/", {**H100, "pue": "0.8", "effective_from": APRIL.isoformat()}, format="json"
    )
    assert bad.status_code == 400 and bad["Content-Type"] == "application/problem+json"
    assert (RateCard.objects.count(), CostModel.objects.count()) == (0, 0)


def test_the_cost_model_page_shows_the_derivation(cast, client):
    client.force_login(cast.fiona)
    page = client.post("/metering/cost-model/", {**H100, "preview": "1"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="derived-price">1.179244<' in html and "0.8561643836" in html
    created = client.post(
        "/metering/cost-model/", {**H100, "effective_from": "2025-04-01 00:00", "create": "1"}
    )
    assert created.status_code == 302
    assert RateCard.objects.get().price_per_ge_hour == D("1.179244")
    client.force_login(cast.alice)
    assert client.get("/metering/cost-model/").status_code == 404


def card(api, user, currency, model="T4", start=APRIL):
    body = {
        "gpu_model": model,
        "currency": currency,
        "price_per_ge_hour": "0.35",
        "effective_from": start.isoformat(),
    }
    return api(user).post("/api/v1/rate-cards/", body, format="json")


def test_only_iso_4217_codes_in_capitals_are_accepted(cast, api):
    for code in ("XYZ", "usd", "US1"):
        refused = card(api, cast.fiona, code)
        assert refused.status_code == 400, code
        assert "ISO 4217" in refused.json()["detail"] or "ISO 4217" in str(refused.json()["errors"])
    assert RateCard.objects.count() == 0
    assert card(api, cast.fiona, "USD").status_code == 201


def test_one_currency_per_period_unless_finance_sets_an_exchange_rate(cast, api):
    assert card(api, cast.fiona, "USD").status_code == 201
    ensure_period(at=APRIL)
    mixed = card(api, cast.fiona, "EUR", model="H100-80GB")
    assert (mixed.status_code, mixed.json()["code"]) == (409, "currency_mix")
    assert "needs an exchange rate" in mixed.json()["detail"]
    set_exchange_rate(
        actor=cast.fiona, period_id=ensure_period(at=APRIL).pk, currency="EUR", rate=D("1.08"),
        source="ECB reference rate", as_of=date(2025, 3, 31),
    )  # fmt: skip
    assert card(api, cast.fiona, "EUR", model="H100-80GB").status_code == 201
