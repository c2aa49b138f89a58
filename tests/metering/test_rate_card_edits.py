"""Finance ends a rate card and changes one not yet in effect, in the pages and the API; a card in
effect keeps its price (only its end moves); a card for a model no cluster reports, or in another
currency than the others, is saved with a warning."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine
from django.test import Client

from gpuplatform.audit.models import AuditEvent
from metering.models import RateCard
from metering.services.rates import create_rate_card
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 10, 10, 30, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)


def _card(cast, start: datetime, **extra) -> RateCard:
    values = {"gpu_model": "H100-80GB", "currency": "USD", "price_per_ge_hour": Decimal("2.5"), **extra}
    return create_rate_card(actor=cast.fiona, effective_from=start, **values)


@pytest.fixture
def inventory():
    node = inv.node()
    node.model_key = "H100-80GB"
    node.save()
    return node


@time_machine.travel(NOW, tick=False)
def test_finance_ends_a_card_in_the_page_after_a_confirmation(cast, inventory):
    card = _card(cast, datetime(2026, 1, 1, tzinfo=UTC))
    fiona = Client()
    fiona.force_login(cast.fiona)

    page = fiona.get(f"/metering/rate-cards/{card.pk}/end/").content.decode()
    assert "priced by\nno card" in page or "no card: its hours are" in page
    unconfirmed = fiona.post(f"/metering/rate-cards/{card.pk}/end/", {"effective_to": "2026-03-31 00:00"})
    assert unconfirmed.status_code == 400
    card.refresh_from_db()
    assert card.effective_to is None

    ended = fiona.post(
        f"/metering/rate-cards/{card.pk}/end/", {"effective_to": "2026-03-31 00:00", "confirm": "on"}
    )
    assert ended.status_code == 302
    card.refresh_from_db()
    assert card.effective_to == datetime(2026, 3, 31, tzinfo=UTC)
    assert AuditEvent.objects.filter(action="rate_card.ended", actor=cast.fiona).exists()


@time_machine.travel(NOW, tick=False)
def test_a_card_not_yet_in_effect_is_changed_one_in_effect_is_not(cast, api, inventory):
    current = _card(cast, datetime(2026, 1, 1, tzinfo=UTC), effective_to=APRIL)
    upcoming = _card(cast, APRIL)
    client = api(cast.fiona)

    changed = client.patch(f"/api/v1/rate-cards/{upcoming.pk}/", {"price_per_ge_hour": "2.75"}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["price_per_ge_hour"] == "2.750000" and changed.json()["warnings"] == []
    event = AuditEvent.objects.get(action="rate_card.updated")
    assert (event.before["price_per_ge_hour"], event.after["price_per_ge_hour"]) == ("2.500000", "2.750000")

    refused = client.patch(f"/api/v1/rate-cards/{current.pk}/", {"price_per_ge_hour": "1"}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "rate_card_in_effect"
    current.refresh_from_db()
    assert current.price_per_ge_hour == Decimal("2.5")

    # moving the upcoming card onto the current one's hours is an overlap, as on create
    overlap = client.patch(
        f"/api/v1/rate-cards/{upcoming.pk}/", {"effective_from": "2026-03-20T00:00:00Z"}, format="json"
    )
    assert overlap.status_code == 409 and overlap.json()["code"] == "rate_card_overlap"
    assert api(cast.alice).patch(
        f"/api/v1/rate-cards/{upcoming.pk}/", {"note": "x"}, format="json"
    ).status_code in (
        403,
        404,
    )


@time_machine.travel(NOW, tick=False)
def test_the_edit_page_changes_an_upcoming_card_and_explains_one_in_effect(cast, inventory):
    current = _card(cast, datetime(2026, 1, 1, tzinfo=UTC), effective_to=APRIL)
    upcoming = _card(cast, APRIL)
    fiona = Client()
    fiona.force_login(cast.fiona)

    assert (
        'data-testid="card-in-effect"'
        in fiona.get(f"/metering/rate-cards/{current.pk}/edit/").content.decode()
    )
    form = {
        "currency": "USD",
        "price_per_ge_hour": "3",
        "basis": "allocation",
        "effective_from": "2026-04-01 00:00",
        "note": "spring",
    }
    assert fiona.post(f"/metering/rate-cards/{upcoming.pk}/edit/", form).status_code == 302
    upcoming.refresh_from_db()
    assert (upcoming.price_per_ge_hour, upcoming.note) == (Decimal(3), "spring")


@time_machine.travel(NOW, tick=False)
def test_a_card_for_a_model_no_cluster_has_or_in_another_currency_warns(cast, api, inventory):
    # The USD card ends when the EUR one starts: one currency per period holds, yet the reports of
    # the two spans would total in two currencies, which is worth a word.
    _card(cast, datetime(2026, 1, 1, tzinfo=UTC), effective_to=datetime(2026, 4, 1, tzinfo=UTC))
    body = {"currency": "EUR", "price_per_ge_hour": "4", "effective_from": "2026-04-01T00:00:00Z"}

    response = api(cast.fiona).post("/api/v1/rate-cards/", {**body, "gpu_model": "B200"}, format="json")

    assert response.status_code == 201, response.json()
    codes = {w["code"]: w["message"] for w in response.json()["warnings"]}
    assert set(codes) == {"rate_card.unknown_model", "rate_card.other_currency"}
    assert (
        "No cluster reports a GPU of model B200 (models in the inventory: H100-80GB)"
        in codes["rate_card.unknown_model"]
    )
    assert "The other rate cards are in USD, this one in EUR" in codes["rate_card.other_currency"]


@time_machine.travel(NOW, tick=False)
def test_the_rate_card_form_warns_first_and_saves_anyway(cast, inventory):
    fiona = Client()
    fiona.force_login(cast.fiona)
    form = {
        "gpu_model": "B200",
        "currency": "USD",
        "price_per_ge_hour": "4",
        "basis": "allocation",
        "effective_from": "2026-04-01 00:00",
    }
    shown = fiona.post("/metering/rate-cards/", form)
    assert "No cluster reports a GPU of model B200" in shown.content.decode()
    assert not RateCard.objects.exists()
    assert fiona.post("/metering/rate-cards/", {**form, "save_anyway": "1"}).status_code == 302
    assert RateCard.objects.get().gpu_model == "B200"
