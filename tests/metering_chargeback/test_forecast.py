"""The forecast's arithmetic (pure): what is admitted is summed exactly and rounded once per
currency, and the subtree's total is its children's plus its own lines."""

from __future__ import annotations

from decimal import Decimal as D
from fractions import Fraction

from metering.chargeback.forecast import Committed, Spent, forecast

ROOT, A, B = "/r/", "/r/a/", "/r/b/"


def test_admitted_hours_are_rounded_once_not_per_request():
    # Three requests of 1/3 GE-hour each at 1.00 USD: exactly 1.00 in all. Rounded per request
    # they would be 0.33 x 3 = 0.99, a cent short.
    third = [Committed(A, Fraction(1, 3), "USD", D("1.00")) for _ in range(3)]
    got = forecast(root_path=ROOT, child_paths=[A], spent=[], committed=third)
    (usd,) = got.subtree.totals
    assert (usd.month_to_date, usd.admitted, usd.forecast) == (D("0"), D("1.00"), D("1.00"))


def test_the_subtree_is_its_childrens_and_its_own_lines_and_unpriced_hours_are_apart():
    spent = [Spent(A, "USD", D("2.75")), Spent(B, "USD", D("2.50")), Spent(ROOT, "USD", D("0.10")),
             Spent("/other/", "USD", D("99"))]  # fmt: skip
    committed = [
        Committed(A, Fraction(24), "USD", D("2.50")),  # 60.00
        Committed(B, Fraction(10), "", None),  # no rate card: 10 GE-h unpriced
    ]
    got = forecast(root_path=ROOT, child_paths=[B, A], spent=spent, committed=committed)
    (usd,) = got.subtree.totals
    # 2.75 + 2.50 + 0.10 = 5.35 so far; + 60.00 admitted = 65.35
    assert (usd.month_to_date, usd.admitted, usd.forecast) == (D("5.35"), D("60.00"), D("65.35"))
    assert (got.subtree.admitted_ge_hours, got.subtree.unpriced_ge_hours) == (34, 10)
    assert [row.tenant_path for row in got.children] == [B, A]  # in the order given
    b, a = got.children
    assert [(t.month_to_date, t.forecast) for t in a.totals] == [(D("2.75"), D("62.75"))]
    assert [(t.month_to_date, t.forecast) for t in b.totals] == [(D("2.50"), D("2.50"))]
    assert b.unpriced_ge_hours == 10
