"""Idle capacity edges worked to the cent by hand: central idle lines carrying their pool's price
segment, capacity rows summed per segment, shares by unequal weights where the largest remainder is
not the largest share, a fully held pool, and a charge line of no card-hours."""

from __future__ import annotations

from decimal import Decimal as D

from metering.chargeback.report import (
    ChargeLine,
    PoolCapacity,
    PricedUsage,
    Reconciliation,
    compute_chargeback,
)


def usage(tenant: str, pool: str, ge_hours: str, card_hours: str, *, price: str = "2.50") -> PricedUsage:
    return PricedUsage(
        tenant=tenant,
        tenant_path=f"/acme/{tenant}/",
        pool=pool,
        flavor="t4",
        gpu_model="T4",
        currency="USD",
        unit_price=D(price),
        ge_hours=D(ge_hours),
        card_hours=D(card_hours),
        basis="utilisation",
        rate_card="rc-7",
    )


def capacity(pool: str, card_hours: str, idle: str, *, price: str = "2.50") -> PoolCapacity:
    return PoolCapacity(
        pool=pool, gpu_model="T4", currency="USD", unit_price=D(price), card_hours=D(card_hours),
        idle_card_hours=D(idle), basis="utilisation", rate_card="rc-7",
    )  # fmt: skip


def idle_line(pool: str, card_hours: str, exact: str, amount: str) -> ChargeLine:
    return ChargeLine(
        kind="idle",
        tenant="",
        tenant_path="",
        pool=pool,
        flavor="",
        gpu_model="T4",
        currency="USD",
        unit_price=D("2.50"),
        ge_hours=D(0),
        card_hours=D(card_hours),
        amount_exact=D(exact),
        amount=D(amount),
        basis="utilisation",
        rate_card="rc-7",
    )


def test_central_idle_lines_carry_their_segment_in_pool_order_with_capacity_rows_summed():
    # east/a's capacity comes in two rows (4 + 5 = 9 card-hours, 0.4 + 0.6 = 1 idle); east/b has 10
    # with 2 idle. Each pool: 8 card-hours charged at 2.50 = 20.00. Idle a: 1 x 2.50 = 2.50, b: 2 x
    # 2.50 = 5.00. Physical a: 9 x 2.50 = 22.50 = 20.00 + 2.50; b: 25.00 = 20.00 + 5.00, no residue.
    report = compute_chargeback(
        usage=[usage("x", "east/a", "8", "8"), usage("y", "east/b", "8", "8")],
        capacity=[
            capacity("east/a", "4", "0.4"),
            capacity("east/a", "5", "0.6"),
            capacity("east/b", "10", "2"),
        ],
    )
    assert report.lines[2:] == (
        idle_line("east/a", "1", "2.50", "2.50"),
        idle_line("east/b", "2", "5.00", "5.00"),
    )
    assert report.reconciliations == (
        Reconciliation(
            pool="east/a",
            currency="USD",
            card_hours=D(9),
            charged_card_hours=D(8),
            idle_card_hours=D(1),
            physical_exact=D("22.50"),
            physical=D("22.50"),
            lines_total=D("22.50"),
            residue=D(0),
        ),
        Reconciliation(
            pool="east/b",
            currency="USD",
            card_hours=D(10),
            charged_card_hours=D(8),
            idle_card_hours=D(2),
            physical_exact=D("25.00"),
            physical=D("25.00"),
            lines_total=D("25.00"),
            residue=D(0),
        ),
    )


def share(tenant: str, card_hours: str, exact: str, amount: str) -> ChargeLine:
    return ChargeLine(
        kind="idle_share",
        tenant=tenant,
        tenant_path=f"/acme/{tenant}/",
        pool="east/a",
        flavor="t4",
        gpu_model="T4",
        currency="USD",
        unit_price=D("2.50"),
        ge_hours=D(0),
        card_hours=D(card_hours),
        amount_exact=D(exact),
        amount=D(amount),
        basis="utilisation",
        rate_card="rc-7",
    )


def test_idle_is_shared_by_card_hours_and_the_last_nanohour_goes_to_the_largest_remainder():
    # a was charged 6 card-hours, b 1: one idle card-hour splits 6/7 and 1/7.
    #   6/7 = 0.857142857|142857... -> floor 0.857142857, remainder 0.14 nanohour
    #   1/7 = 0.142857142|857142... -> floor 0.142857142, remainder 0.86 nanohour
    # The floors sum to 0.999999999; the nanohour left goes to b, the larger remainder, though a has
    # the larger share and the earlier line. Amounts at 2.50: a 2.1428571425 -> 2.14, b 0.3571428575
    # -> 0.36. Physical 8 x 2.50 = 20.00 = 15.00 + 2.50 + 2.14 + 0.36, no residue.
    report = compute_chargeback(
        usage=[usage("a", "east/a", "7.5", "6"), usage("b", "east/a", "2", "1")],
        capacity=[capacity("east/a", "8", "1")],
        idle="distributed",
    )
    assert report.lines[2:] == (
        share("a", "0.857142857", "2.1428571425", "2.14"),
        share("b", "0.142857143", "0.3571428575", "0.36"),
    )
    (rec,) = report.reconciliations
    assert (rec.idle_card_hours, rec.physical, rec.lines_total, rec.residue) == (
        D(1),
        D("20.00"),
        D("20.00"),
        D(0),
    )


def test_a_fully_held_pool_keeps_a_zero_idle_line_and_shares_nothing():
    # 2 card-hours offered, 2 charged at 2.50 = 5.00: nothing idle to share, so the pool shows its
    # central idle line of 0 card-hours and 0.00, as in central mode.
    report = compute_chargeback(
        usage=[usage("a", "east/a", "2", "2")], capacity=[capacity("east/a", "2", "0")], idle="distributed"
    )
    assert [(line.kind, line.tenant, line.card_hours, line.amount) for line in report.lines] == [
        ("charge", "a", D(2), D("5.00")),
        ("idle", "", D(0), D("0.00")),
    ]


def test_a_charge_line_of_no_card_hours_takes_no_idle_share():
    # On the utilisation basis z held 1 GE-hour but used none: 0 card-hours priced, weight 0, so it
    # gets no idle_share line at all; a (1 card-hour) takes the whole idle card-hour, 2.50.
    report = compute_chargeback(
        usage=[usage("a", "east/a", "1", "1"), usage("z", "east/a", "1", "0")],
        capacity=[capacity("east/a", "2", "1")],
        idle="distributed",
    )
    assert [(line.kind, line.tenant, line.card_hours, line.amount) for line in report.lines] == [
        ("charge", "a", D(1), D("2.50")),
        ("charge", "z", D(0), D("0.00")),
        ("idle_share", "a", D(1), D("2.50")),
    ]
