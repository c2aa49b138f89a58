"""FOCUS 1.2 and 1.3 bytes pinned on awkward lines (pure writers, no database): refactoring the
writers must not change a byte. The digests were taken from the writers before focus.py and
focus13.py shared their column table (issue 32); a deliberate change of output updates them: 1.3's
when origins became per node (the x_Pool column; a tie at half a minor unit between an origin's rows
now goes to the earlier row: the JPY origin's 751 + 150)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal as D

from metering.exports.focus import FlavorFacts, FocusContext, focus_chunks
from metering.exports.focus13 import focus13_chunks, focus13_records
from metering.exports.rows import ExportLine

MARCH = (datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC))
APRIL = (datetime(2025, 4, 1, tzinfo=UTC), datetime(2025, 5, 1, tzinfo=UTC))
CARD = "5b0e9a3c-0f6b-4a53-9b0e-3f1c2d4e5a6b"


def line(n, **kw):
    start, end = APRIL if kw.get("period") == "2025-04" else MARCH
    base = {
        "period": "2025-03", "period_start": start, "period_end": end, "line_no": n, "kind": "charge",
        "tenant_id": "0b7d5f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "tenant_slug": "vision",
        "tenant_path": "/acme/research/vision/", "cost_centre": "CC-1", "pool": "east/h100", "flavor": "",
        "gpu_model": "H100-80GB", "basis": "allocation", "currency": "USD", "unit_price": D("2.500000"),
        "ge_hours": D("1.333333333"), "used_ge_hours": None, "card_hours": D("1.333333333"),
        "amount_exact": D("3.333333332500"), "amount": D("3.3333"), "rate_card": CARD,
    }  # fmt: skip
    base.update(kw)
    return ExportLine(**base)


LINES = [
    line(1),
    line(
        2,
        tenant_id="",
        tenant_slug="",
        tenant_path="",
        cost_centre="",
        kind="idle",
        card_hours=D("0.666666667"),
        ge_hours=D("0"),
        amount_exact=D("1.6666666675"),
        amount=D("1.6667"),
    ),
    line(
        3,
        cost_centre='=HYPERLINK("x"),"q"',
        flavor="mig-1g",
        ge_hours=D("0.142857143"),
        card_hours=D("0.142857143"),
        amount_exact=D("0.3571428575"),
        amount=D("0.3571"),
        basis="utilisation",
        used_ge_hours=D("0.1"),
        pool="east/h100\r\nx",
    ),
    line(4, kind="idle_share", card_hours=D("0.5"), amount_exact=D("1.25"), amount=D("1.25")),
    line(
        5,
        pool="east/h200",
        gpu_model="H200-141GB",
        unit_price=None,
        amount=None,
        amount_exact=None,
        currency="",
        rate_card="",
    ),
    line(
        6,
        kind="adjustment",
        adjusts="2025-02",
        adjusts_start=datetime(2025, 2, 1, tzinfo=UTC),
        adjusts_end=MARCH[0],
        card_hours=D("0.25"),
        amount_exact=D("0.625"),
        amount=D("0.625"),
    ),
    line(
        7,
        period="2025-04",
        currency="JPY",
        unit_price=D("300"),
        card_hours=D("2.5"),
        amount_exact=D("750.5"),
        amount=D("750.5"),
        rate_card="r-2",
    ),
    line(
        8,
        period="2025-04",
        currency="JPY",
        unit_price=D("300"),
        kind="idle",
        tenant_id="",
        tenant_path="",
        card_hours=D("0.5"),
        amount_exact=D("150.5"),
        amount=D("150.5"),
        rate_card="r-2",
    ),
    line(
        9,
        period="2025-04",
        kind="credit",
        card_hours=D("0"),
        ge_hours=D("0"),
        amount=D("-12.3400"),
        amount_exact=D("-12.34"),
        unit_price=None,
        rate_card="",
    ),
]
CTX13 = FocusContext(
    flavors={"mig-1g": FlavorFacts(share_type="mig_instance", mig_profile="1g.10gb")},
    card_flavors={CARD: ""},
)


def digest(chunks):
    return hashlib.sha256(b"".join(chunks)).hexdigest()


def test_focus_1_2_bytes_are_pinned():
    assert (
        digest(focus_chunks(LINES, FocusContext()))
        == "a503e5643122899dbbdc9d2e600284e054d2f54b2d3bb3319f3d3fda1bbfd8e3"
    )


def test_focus_1_3_bytes_are_pinned():
    assert (
        digest(focus13_chunks(LINES, CTX13))
        == "f4cea2c626d4e282b82ef52a323952ef79b5ac539c3f209481e917abab6ccc4e"
    )
    assert (
        digest(focus13_chunks(LINES, CTX13, columns=("x_Unpriced", "BilledCost", "SkuId")))
        == "782f2bf041799f8aa56836fb3189240fdf0ed4615f35b434b8cfafad20bdde94"
    )


def test_holding_one_pool_at_a_time_gives_the_rows_holding_the_period_gives():
    """What the database path does (lines ordered by pool, one pool and model held at a time) writes
    the rows the period-at-a-time writer does, in pool order."""
    ordered = sorted(LINES, key=lambda line: (line.period_start, line.pool, line.gpu_model, line.line_no))
    by_pool = list(focus13_records(ordered, CTX13, by_pool=True))
    held = list(focus13_records(LINES, CTX13))
    assert sorted(tuple(r.items()) for r in by_pool) == sorted(tuple(r.items()) for r in held)
