"""The demo's closed month, metered from the allocation ledger, gives one statement per tenant and
per cost centre; each PDF, opened and read, says what the tenant owes, worked out by hand below."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from pypdf import PdfReader

from demo.billing import seed_demo_billing
from demo.seed import seed_demo_organisation
from gpuplatform.accounts.models import User
from gpuplatform.audit.models import AuditEvent
from inventory.models import Allocation
from metering.models import BillingPeriod, ReportLine, Statement, UsageHour
from metering.services.credits import book_credit
from metering.services.periods import close_billing_period, start_closing_period
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db
APRIL_10 = datetime(2025, 4, 10, 12, tzinfo=UTC)

# March 2025 (744 h, UTC; the 1st is a Saturday: weekends 1-2, 8-9, 15-16, 22-23, 29-30). Node h-0
# (8 H100s at 2.50/GE-h) is vision's on even days and nlp's on odd ones; node t-0 (4 T4s at 0.35)
# rotates recsys, infra, vision, nlp from the 1st (vision on days = 1 mod 4). A weekday holds the
# whole node 09-19 (10 h) and a share the other 14 h; a weekend day holds the share all 24 h.
# vision, H100, even days: share 6 cards on days = 0 mod 4, 2 cards on days = 2 mod 4:
#   weekdays 4, 12, 20, 24, 28: 5 x (10 x 8 + 14 x 6) = 820;  weekend 8, 16: 2 x 24 x 6 = 288
#   weekdays 6, 10, 14, 18, 26: 5 x (80 + 14 x 2) = 540;     weekend 2, 22, 30: 3 x 24 x 2 = 144
#   1,792 card-hours x 2.50 = 4,480.00
# vision, T4, days 1, 5, 9, ..., 29, share 1 card: weekdays 5, 13, 17, 21, 25: 5 x (10 x 4 + 14) =
#   270; weekend 1, 9, 29: 3 x 24 = 72; 342 card-hours x 0.35 = 119.70.   vision owes 4,599.70.
# The same count for the others: nlp 1,448 H100 card-hours (3,620.00) + 200 T4 (70.00) = 3,690.00;
# recsys 636 T4 card-hours = 222.60; infra 436 = 152.60. search owns no namespace: it holds nothing.
EXPECTED = {
    "vision": Decimal("4599.70"),
    "nlp": Decimal("3690.00"),
    "recsys": Decimal("222.60"),
    "infra": Decimal("152.60"),
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def demo_march(tmp_path, monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: APRIL_10)
    seed_demo_organisation(token_file=tmp_path / "tokens.json")
    h100 = inv.pool("NVIDIA-H100-80GB-HBM3")
    t4 = inv.pool("Tesla-T4")
    inv.Node.objects.create(cluster=h100.cluster, pool=h100, name="h-0", model_key="H100-80GB", gpu_count=8)
    inv.Node.objects.create(cluster=t4.cluster, pool=t4, name="t-0", model_key="T4-16GB", gpu_count=4)
    assert seed_demo_billing(cluster=h100.cluster) is True
    return BillingPeriod.objects.get(label="2025-03")


def pdf_text(response) -> str:
    assert response["Content-Type"] == "application/pdf"
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)
    return " ".join(text.split())  # table cells come out one a line: read it as words


def test_the_closed_month_is_metered_from_the_allocation_ledger_and_bills_only_namespace_owners(demo_march):
    usage = UsageHour.objects.filter(period=demo_march)
    assert set(usage.values_list("source", flat=True)) == {"ledger"}
    assert all(row.allocation_id for row in usage)
    assert Allocation.objects.filter(ended_at__lte=demo_march.ends_at).count() > 0
    billed = set(
        ReportLine.objects.filter(period=demo_march, kind="charge").values_list("tenant_slug", flat=True)
    )
    assert billed == set(EXPECTED)  # not search: it owns no namespace


def test_each_tenant_downloads_its_statement_pdf_with_the_hand_worked_total(demo_march, client):
    statements = Statement.objects.filter(period=demo_march, kind="tenant")
    assert {s.tenant_slug: s.total for s in statements} == EXPECTED
    # Cost centres (one tenant each in the demo) get theirs too, after the tenants', numbered on.
    centres = Statement.objects.filter(period=demo_march, kind="cost_centre").order_by("number")
    assert {s.cost_centre: s.total for s in centres} == {
        "CC-2100": Decimal("4599.70"), "CC-2200": Decimal("3690.00"),
        "CC-3100": Decimal("222.60"), "CC-4100": Decimal("152.60"),
    }  # fmt: skip
    assert [s.number for s in Statement.objects.filter(period=demo_march).order_by("number")] == [
        f"2025-03-{n:04d}" for n in range(1, 9)
    ]
    for slug, admin in (("vision", "alice"), ("nlp", "bob"), ("recsys", "carol"), ("infra", "ivan")):
        client.force_login(User.objects.get(username=admin))
        statement = statements.get(tenant_slug=slug)
        text = pdf_text(client.get(f"/metering/statements/{statement.pk}/pdf/"))
        assert f"Statement {statement.number}" in text
        assert f"Total due (USD) {EXPECTED[slug]:,}" in text
        assert client.get(f"/api/v1/statements/{statement.pk}/pdf/").content.startswith(b"%PDF")
    vision = statements.get(tenant_slug="vision")
    text = pdf_text(client.get(f"/metering/statements/{statements.get(tenant_slug='infra').pk}/pdf/"))
    assert "Tesla-T4" in text and "436.00" in text and "0.35" in text and "152.60" in text
    # ivan (infra) may not open vision's statement, as page, PDF or through the API.
    assert client.get(f"/metering/statements/{vision.pk}/").status_code == 404
    assert client.get(f"/metering/statements/{vision.pk}/pdf/").status_code == 404
    assert client.get(f"/api/v1/statements/{vision.pk}/pdf/").status_code == 404
    # Two downloads, the same bytes.
    client.force_login(User.objects.get(username="fiona"))
    first = client.get(f"/metering/statements/{vision.pk}/pdf/").content
    assert client.get(f"/metering/statements/{vision.pk}/pdf/").content == first
    page = client.get("/metering/statements/?period=2025-03").content.decode()
    assert "2025-03-0008" in page and "4,599.70 USD" in page  # grouped, as every page shows money


def test_a_credit_booked_by_finance_shows_on_the_next_months_statement(demo_march, client, monkeypatch):
    fiona = User.objects.get(username="fiona")
    vision = demo_march.statements.get(tenant_slug="vision").tenant
    client.force_login(fiona)
    bad = client.post(
        "/metering/credits/new/", {"tenant": "vision", "amount": "-5", "currency": "XYZ", "reason": "x"}
    )
    assert bad.status_code == 400 and "ISO 4217" in bad.content.decode()
    booked = client.post(
        "/metering/credits/new/",
        {"tenant": "vision", "amount": "-100.00", "currency": "USD", "reason": "Outage on h-0, 2025-04-02"},
    )
    assert booked.status_code == 302
    assert AuditEvent.objects.filter(action="credit.booked", tenant_id=vision.pk).count() == 1
    charge = book_credit(
        actor=fiona, tenant_id=vision.pk, amount=Decimal("12.50"), currency="USD", reason="Support"
    )
    assert charge.period.label == "2025-04"  # March is closed: the first open period
    monkeypatch.setattr("django.utils.timezone.now", lambda: datetime(2025, 5, 2, tzinfo=UTC))
    start_closing_period(actor=fiona, period_id=charge.period.pk)
    close_billing_period(actor=fiona, period_id=charge.period.pk)
    april = Statement.objects.get(period__label="2025-04", kind="tenant", tenant_slug="vision")
    client.force_login(fiona)  # a session from April 10 has expired by May
    # No usage in April: -100.00 + 12.50 = -87.50, owed to vision.
    assert (april.charges, april.credits, april.total) == (Decimal(0), Decimal("-87.50"), Decimal("-87.50"))
    text = pdf_text(client.get(f"/metering/statements/{april.pk}/pdf/"))
    assert "Outage on h-0, 2025-04-02" in text and "-100.00" in text and "Total due (USD) -87.50" in text
