"""Finance ends a rate card in the browser (issue 27): the card's End action, a confirmation page that
says what prices the hours after, a refusal until it is confirmed, then the card ends at the hour
chosen. Before this, ending a card needed the API."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from metering.models import RateCard
from metering.services.rates import create_rate_card
from tests.browser.test_page_widths import docs_shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_fiona_ends_a_rate_card_after_a_confirmation(transactional_db, cast, page: Page, login, shot):
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    card = create_rate_card(
        actor=cast.fiona,
        gpu_model="H100-80GB",
        currency="USD",
        price_per_ge_hour=Decimal("2.5"),
        effective_from=hour - timedelta(days=60),
    )
    end = hour + timedelta(days=2)
    base = login(page, "fiona")

    page.goto(f"{base}/metering/rate-cards/")
    row = page.get_by_test_id(f"rate-card-{card.pk}")
    expect(row).to_contain_text("until further notice")
    row.get_by_test_id("end-card").click()
    expect(page.get_by_test_id("end-consequence")).to_contain_text("no card: its hours are")
    expect(page.get_by_test_id("end-consequence")).to_contain_text(
        "unpriced card-hours, never priced at zero"
    )
    page.fill("input[name=effective_to]", f"{end:%Y-%m-%d %H:%M}")
    page.evaluate("window.stillThisPage = true")  # gone if the browser loaded a page afresh
    page.get_by_role("button", name="End the card").click()
    # not yet confirmed: said so, nothing changed
    expect(page.get_by_test_id("error-confirm")).to_be_visible()
    card.refresh_from_db()
    assert card.effective_to is None
    page.get_by_label("I understand").check()
    shot(page, "end-confirmation")
    docs_shot(page, "rate-card-end")
    page.get_by_role("button", name="End the card").click()

    expect(page.get_by_role("status")).to_contain_text("Ended the rate card")
    # answered in place (htmx): the refusal and the result without a page load, the list's URL pushed
    assert page.evaluate("window.stillThisPage") is True
    assert page.url.endswith("/metering/rate-cards/")
    card.refresh_from_db()
    assert card.effective_to == end
    expect(page.get_by_test_id(f"rate-card-{card.pk}")).not_to_contain_text("until further notice")
    assert RateCard.objects.count() == 1
