"""Idle capacity distributed by weight in the pure chargeback: shares to the nanohour summing to the
idle exactly, the residue of rounding shown; a pool nobody used keeps its idle central."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from metering.chargeback.report import PoolCapacity, PricedUsage, compute_chargeback


def usage(tenant: str, card_hours: str, pool: str = "east/a") -> PricedUsage:
    return PricedUsage(
        tenant=tenant,
        tenant_path=f"/{tenant}/",
        pool=pool,
        flavor="",
        gpu_model="T4",
        currency="USD",
        unit_price=D("1.00"),
        ge_hours=D(card_hours),
        card_hours=D(card_hours),
    )


def capacity(card_hours: str, idle: str, pool: str = "east/a") -> PoolCapacity:
    return PoolCapacity(
        pool=pool, gpu_model="T4", currency="USD", unit_price=D("1.00"), card_hours=D(card_hours),
        idle_card_hours=D(idle),
    )  # fmt: skip


def test_three_equal_takers_share_one_idle_card_hour_and_the_cent_left_is_shown():
    report = compute_chargeback(
        usage=[usage("a", "1"), usage("b", "1"), usage("c", "1")],
        capacity=[capacity("4", "1")],
        idle="distributed",
    )
    shares = [
        (line.tenant, line.card_hours, line.amount) for line in report.lines if line.kind == "idle_share"
    ]
    # 1/3 each: floored 0.333333333 three times leaves a nanohour, to the first of the equal remainders.
    assert shares == [
        ("a", D("0.333333334"), D("0.33")),
        ("b", D("0.333333333"), D("0.33")),
        ("c", D("0.333333333"), D("0.33")),
    ]
    assert not [line for line in report.lines if line.kind == "idle"]
    (rec,) = report.reconciliations
    # 4 card-hours x 1.00 = 4.00; lines 3 x 1.00 + 3 x 0.33 = 3.99; the cent is the residue, shown.
    assert (rec.physical, rec.lines_total, rec.residue, rec.holds) == (D("4.00"), D("3.99"), D("0.01"), True)
    assert rec.idle_card_hours == D("1")


def test_a_pool_nobody_used_keeps_its_idle_central():
    report = compute_chargeback(
        usage=[usage("a", "1")],
        capacity=[capacity("2", "1"), capacity("3", "3", pool="east/b")],
        idle="distributed",
    )
    kinds = [(line.kind, line.pool, line.card_hours) for line in report.lines]
    assert ("idle", "east/b", D("3")) in kinds
    assert ("idle_share", "east/a", D("1")) in kinds
    assert all(r.residue == 0 for r in report.reconciliations)


def test_an_unknown_idle_mode_is_refused():
    with pytest.raises(ValueError, match="idle must be one of"):
        compute_chargeback(usage=[], capacity=[], idle="sideways")
