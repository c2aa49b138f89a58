"""The chargeback's lines, worked to the cent by hand: rows of one key summed into one line carrying
every field, unpriced usage and capacity shown without money, and the order of lines whose keys differ
only by a price one of them does not have."""

from __future__ import annotations

from decimal import Decimal as D

from metering.chargeback.report import ChargeLine, PoolCapacity, PricedUsage, compute_chargeback

VISION = "/acme/research/vision/"


def blended(ge_hours: str, card_hours: str, used: str | None) -> PricedUsage:
    return PricedUsage(
        tenant="v",
        tenant_path=VISION,
        pool="east/h100",
        flavor="h100",
        gpu_model="H100-80GB",
        currency="USD",
        unit_price=D("2.50"),
        ge_hours=D(ge_hours),
        card_hours=D(card_hours),
        basis="blended",
        used_ge_hours=None if used is None else D(used),
        rate_card="rc-1",
    )


def test_rows_of_one_key_are_summed_into_one_line_that_carries_every_field():
    # Three hourly rows of the same tenant, flavor and price. GE-hours 1.5 + 0.75 + 0.25 = 2.5;
    # card-hours 1.25 + 0.5 + 0.257 = 2.007; used 0.5 + 0.25 = 0.75 (the third row was not measured,
    # so it adds nothing and does not blank the sum). 2.007 x 2.50 = 5.0175 -> 5.02.
    report = compute_chargeback(
        usage=[blended("1.5", "1.25", "0.5"), blended("0.75", "0.5", "0.25"), blended("0.25", "0.257", None)],
        capacity=[],
    )
    assert report.lines == (
        ChargeLine(
            kind="charge",
            tenant="v",
            tenant_path=VISION,
            pool="east/h100",
            flavor="h100",
            gpu_model="H100-80GB",
            currency="USD",
            unit_price=D("2.50"),
            ge_hours=D("2.5"),
            card_hours=D("2.007"),
            amount_exact=D("5.0175"),
            amount=D("5.02"),
            adjusts="",
            basis="blended",
            used_ge_hours=D("0.75"),
            rate_card="rc-1",
        ),
    )
    assert report.unpriced_card_hours == 0


def unpriced(ge_hours: str, card_hours: str) -> PricedUsage:
    return PricedUsage(
        tenant="v",
        tenant_path=VISION,
        pool="east/t4",
        flavor="t4",
        gpu_model="T4",
        currency="",
        unit_price=None,
        ge_hours=D(ge_hours),
        card_hours=D(card_hours),
    )


def test_unpriced_usage_and_capacity_are_lines_without_money_and_all_their_card_hours_are_counted():
    # No rate card covers the T4 pool: 2 + 0.5 card-hours held and 1.5 idle of 4 are shown, with no
    # amount (exact or rounded), and 2 + 0.5 + 1.5 = 4 card-hours are reported unpriced; no money, so
    # nothing to reconcile or roll up.
    report = compute_chargeback(
        usage=[unpriced("2", "2"), unpriced("0.5", "0.5")],
        capacity=[
            PoolCapacity(
                pool="east/t4", gpu_model="T4", currency="", unit_price=None, card_hours=D(4),
                idle_card_hours=D("1.5"),
            )
        ],
    )  # fmt: skip
    assert report.lines == (
        ChargeLine(
            kind="charge",
            tenant="v",
            tenant_path=VISION,
            pool="east/t4",
            flavor="t4",
            gpu_model="T4",
            currency="",
            unit_price=None,
            ge_hours=D("2.5"),
            card_hours=D("2.5"),
            amount_exact=None,
            amount=None,
        ),
        ChargeLine(
            kind="idle",
            tenant="",
            tenant_path="",
            pool="east/t4",
            flavor="",
            gpu_model="T4",
            currency="",
            unit_price=None,
            ge_hours=D(0),
            card_hours=D("1.5"),
            amount_exact=None,
            amount=None,
        ),
    )
    assert report.unpriced_card_hours == D(4)
    assert (report.rollups, report.reconciliations) == ((), ())


def test_unpriced_capacity_of_one_pool_does_not_stop_the_pools_after_it_being_reconciled():
    # east/a100 (unpriced) sorts before east/h100. h100: 3 card-hours charged at 2.50 = 7.50, 1 idle
    # = 2.50; 4 x 2.50 = 10.00 physical, lines 10.00, no residue.
    report = compute_chargeback(
        usage=[
            PricedUsage(
                tenant="v", tenant_path=VISION, pool="east/h100", flavor="h100", gpu_model="H100-80GB",
                currency="USD", unit_price=D("2.50"), ge_hours=D(3), card_hours=D(3),
            )
        ],
        capacity=[
            PoolCapacity(
                pool="east/a100", gpu_model="A100-40GB", currency="", unit_price=None, card_hours=D(2),
                idle_card_hours=D(2),
            ),
            PoolCapacity(
                pool="east/h100", gpu_model="H100-80GB", currency="USD", unit_price=D("2.50"),
                card_hours=D(4), idle_card_hours=D(1),
            ),
        ],
    )  # fmt: skip
    assert [(line.kind, line.pool, line.card_hours, line.amount) for line in report.lines] == [
        ("charge", "east/h100", D(3), D("7.50")),
        ("idle", "east/a100", D(2), None),
        ("idle", "east/h100", D(1), D("2.50")),
    ]
    (rec,) = report.reconciliations
    assert (rec.pool, rec.physical, rec.lines_total, rec.residue) == ("east/h100", D("10.00"), D("10.00"), 0)
    assert report.unpriced_card_hours == D(2)


def test_a_stretch_without_a_price_sorts_before_the_priced_one_of_the_same_currency():
    # A caller that keeps the currency of a pool whose rate card starts mid-period: the keys differ
    # only by the price, None and 2.50. None sorts as "" (first), and is never compared to a Decimal.
    def row(price: str | None, card_hours: str) -> PricedUsage:
        return PricedUsage(
            tenant="v", tenant_path=VISION, pool="east/h100", flavor="h100", gpu_model="H100-80GB",
            currency="USD", unit_price=None if price is None else D(price), ge_hours=D(card_hours),
            card_hours=D(card_hours),
        )  # fmt: skip

    def cap(price: str | None, card_hours: str, idle: str) -> PoolCapacity:
        return PoolCapacity(
            pool="east/h100", gpu_model="H100-80GB", currency="USD",
            unit_price=None if price is None else D(price), card_hours=D(card_hours),
            idle_card_hours=D(idle),
        )  # fmt: skip

    report = compute_chargeback(
        usage=[row("2.50", "2"), row(None, "1")], capacity=[cap("2.50", "3", "1"), cap(None, "2", "1")]
    )
    # priced: 2 x 2.50 = 5.00 charged, 1 x 2.50 = 2.50 idle
    assert [(line.kind, line.unit_price, line.card_hours, line.amount) for line in report.lines] == [
        ("charge", None, D(1), None),
        ("charge", D("2.50"), D(2), D("5.00")),
        ("idle", None, D(1), None),
        ("idle", D("2.50"), D(1), D("2.50")),
    ]
    assert report.unpriced_card_hours == D(2)
