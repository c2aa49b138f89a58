"""The priced chargeback, worked to the cent by hand: lines, idle, roll-ups, reconciliation."""

from __future__ import annotations

from decimal import ROUND_UP, localcontext
from decimal import Decimal as D

from metering.chargeback.money import round_money
from metering.chargeback.report import PoolCapacity, PricedUsage, compute_chargeback

VISION = "/acme/research/vision/"
NLP = "/acme/research/nlp/"


def usage(tenant, path, card_hours, *, price="2.50", ge_hours=None, kind="charge"):
    return PricedUsage(
        tenant=tenant,
        tenant_path=path,
        pool="east/h100",
        flavor="h100",
        gpu_model="H100-80GB",
        currency="USD",
        unit_price=D(price),
        ge_hours=D(ge_hours or card_hours),
        card_hours=D(card_hours),
        kind=kind,
        adjusts="2025-02" if kind == "adjustment" else "",
    )


def test_money_rounds_half_even_to_the_minor_unit():
    assert round_money(D("3.335"), "USD") == D("3.34")
    assert round_money(D("3.345"), "USD") == D("3.34")
    assert round_money(D("1234.5"), "JPY") == D("1234")
    assert round_money(D("0.0005"), "KWD") == D("0.000")


def test_money_rounds_half_even_whatever_rounding_the_decimal_context_was_left_with():
    # A library that sets the thread's context to ROUND_UP must not move finance's cents:
    # 3.345 -> 3.34 (half to even), 3.341 -> 3.34 (down), 3.355 -> 3.36.
    with localcontext() as context:
        context.rounding = ROUND_UP
        assert round_money(D("3.345"), "USD") == D("3.34")
        assert round_money(D("3.341"), "USD") == D("3.34")
        assert round_money(D("3.355"), "USD") == D("3.36")


def test_two_tenants_and_idle_reconcile_to_the_pools_cost_with_the_residue_shown():
    # 2 cards x 3 hours = 6 card-hours at 2.50 = 15.00. vision and nlp each 1.333333333 card-hours:
    # 3.3333333325 -> 3.33 each; idle 6 - 2.666666666 = 3.333333334 -> 8.333333335 -> 8.33.
    # 3.33 + 3.33 + 8.33 = 14.99: the residue is 0.01.
    report = compute_chargeback(
        usage=[usage("v", VISION, "1.333333333"), usage("n", NLP, "1.333333333")],
        capacity=[
            PoolCapacity(
                pool="east/h100",
                gpu_model="H100-80GB",
                currency="USD",
                unit_price=D("2.50"),
                card_hours=D(6),
                idle_card_hours=D("3.333333334"),
            )
        ],
    )
    amounts = [(line.kind, line.tenant, line.amount) for line in report.lines]
    assert amounts == [("charge", "n", D("3.33")), ("charge", "v", D("3.33")), ("idle", "", D("8.33"))]
    assert report.lines[0].amount_exact == D("3.3333333325")
    (rec,) = report.reconciliations
    assert (rec.physical_exact, rec.physical, rec.lines_total, rec.residue) == (
        D("15.00"),
        D("15.00"),
        D("14.99"),
        D("0.01"),
    )
    assert rec.charged_card_hours + rec.idle_card_hours == rec.card_hours
    assert rec.holds


def test_rollups_sum_the_rounded_lines_up_the_tree():
    report = compute_chargeback(
        usage=[
            usage("v", VISION, "1.333333333"),
            usage("n", NLP, "2"),
            usage("v", VISION, "1", price="3.00"),
        ],
        capacity=[],
    )
    totals = {(r.tenant_path, r.currency): r.amount for r in report.rollups}
    # vision: 3.33 at 2.50 plus 3.00 at 3.00; nlp: 5.00; research and acme: all of it
    assert totals == {
        ("/acme/", "USD"): D("11.33"),
        ("/acme/research/", "USD"): D("11.33"),
        (NLP, "USD"): D("5.00"),
        (VISION, "USD"): D("6.33"),
    }


def test_a_line_is_rounded_once_on_its_full_sum_not_per_hour():
    # 3 hourly pieces of 0.001 card-hours at 2.50 = 0.0025 each: per-piece rounding gives 0.00 x 3,
    # the line's full sum 0.0075 rounds half-even once, to 0.01
    report = compute_chargeback(usage=[usage("v", VISION, "0.001")] * 3, capacity=[])
    assert report.lines[0].amount_exact == D("0.0075")
    assert report.lines[0].amount == D("0.01")


def test_unpriced_usage_is_shown_without_an_amount():
    report = compute_chargeback(
        usage=[
            PricedUsage(
                tenant="v",
                tenant_path=VISION,
                pool="east/t4",
                flavor="",
                gpu_model="T4",
                currency="",
                unit_price=None,
                ge_hours=D(2),
                card_hours=D(2),
            )
        ],
        capacity=[],
    )
    assert report.lines[0].amount is None
    assert report.unpriced_card_hours == D(2)
    assert report.rollups == ()


def test_adjustments_are_lines_of_their_own_left_out_of_the_pools_reconciliation():
    report = compute_chargeback(
        usage=[usage("v", VISION, "1"), usage("v", VISION, "0.5", kind="adjustment")],
        capacity=[
            PoolCapacity(
                pool="east/h100",
                gpu_model="H100-80GB",
                currency="USD",
                unit_price=D("2.50"),
                card_hours=D(1),
                idle_card_hours=D(0),
            )
        ],
    )
    assert [(line.kind, line.amount, line.adjusts) for line in report.lines] == [
        ("adjustment", D("1.25"), "2025-02"),
        ("charge", D("2.50"), ""),
        ("idle", D("0.00"), ""),
    ]
    assert report.reconciliations[0].residue == 0
    assert report.reconciliations[0].lines_total == D("2.50")
