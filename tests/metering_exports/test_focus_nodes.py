"""FOCUS 1.3 origins per node, worked by hand (issue 32).

One hour of March 2025, pool h100 at 2.00 USD a card-hour (allocation basis), two nodes:

- n0, 8 cards = 16.00: vision holds 3 whole cards (3 card-h, 6.00); nlp holds ten 1g.10gb slices
  (10/7 GE on two cards: 1.428571429 card-h, 2.857142858 -> 2.86); idle 8 - 3 - 1.428571429 =
  3.571428571 card-h (7.142857142 -> 7.14). 6.00 + 2.86 + 7.14 = 16.00. Ratios: 3/8 = 0.375,
  1.428571429/8 = 0.178571428625, 3.571428571/8 = 0.446428571375: sum 1.
- n1, 2 cards = 4.00: vision 1 card-h (2.00), nlp 0.333333333 (0.666666666), idle 0.666666667
  (1.333333334). Floors 2.00 + 0.66 + 1.33 = 3.99; the cent left goes to the largest remainder,
  nlp's (0.67): 2.00 + 0.67 + 1.33 = 4.00.

The report's lines (one rounding per line): vision 4 card-h = 8.00, nlp 1.761904762 card-h =
3.523809524 -> 3.52, idle 4.238095238 = 8.476190476 -> 8.48; 20.00 in all. nlp's FOCUS rows sum to
2.86 + 0.67 = 3.53: a cent from its line, as one rounding per node (not per line) gives; its
x_AmountExact sum is the line's.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from metering.exports.focus13 import apportion
from metering.models import ReportLine
from metering.services.periods import close_billing_period, start_closing_period
from tests.metering import rows
from tests.metering_exports.focus_validator import validate

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)


@pytest.fixture
def month(cast):
    p = rows.pool("h100")
    rows.capacity(p, cards=8, idle="3.571428571", node="n0")
    rows.capacity(p, cards=2, idle="0.666666667", node="n1")
    rows.usage(p, tenant=cast.vision, meter="allocated_ge_hours", quantity="3", card_hours="3",
               node_name="n0", share_key="vision-n0")  # fmt: skip
    rows.usage(p, tenant=cast.nlp, meter="allocated_ge_hours", quantity="1.428571429",
               card_hours="1.428571429", node_name="n0", share_key="nlp-n0", flavor_name="")  # fmt: skip
    rows.usage(p, tenant=cast.vision, meter="allocated_ge_hours", quantity="1", card_hours="1",
               node_name="n1", share_key="vision-n1")  # fmt: skip
    rows.usage(p, tenant=cast.nlp, meter="allocated_ge_hours", quantity="0.333333333",
               card_hours="0.333333333", node_name="n1", share_key="nlp-n1")  # fmt: skip
    rows.card(p, price="2.00")
    start_closing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    return p


def focus_rows(api, user):
    got = api(user).get("/api/v1/reports/export/?as=focus&period=2025-03")
    assert got.status_code == 200, got.content
    text = b"".join(got.streaming_content).decode()
    return text, list(csv.DictReader(io.StringIO(text)))


def ratio(row):
    return D(str(json.loads(row["AllocatedMethodDetails"])["Elements"][0]["AllocatedRatio"]))


def test_each_nodes_charge_is_split_among_its_holders_and_its_idle(month, cast, api):
    text, records = focus_rows(api, cast.fiona)
    assert validate(text, origin_of=lambda r: r["x_OriginChargeId"]) == []
    got = {
        (r["ResourceName"], r["x_LineKind"], r["x_TenantPath"]): (
            r["PricingQuantity"],
            r["BilledCost"],
            ratio(r),
        )
        for r in records
    }
    vision, nlp = "/acme/research/vision/", "/acme/research/nlp/"
    assert got == {
        ("n0", "charge", vision): ("3.000000000", "6.00", D("0.375")),
        ("n0", "charge", nlp): ("1.428571429", "2.86", D("0.178571428625")),
        ("n0", "idle", ""): ("3.571428571", "7.14", D("0.446428571375")),
        ("n1", "charge", vision): ("1.000000000", "2.00", D("0.5")),
        ("n1", "charge", nlp): ("0.333333333", "0.67", D("0.1666666665")),
        ("n1", "idle", ""): ("0.666666667", "1.33", D("0.3333333335")),
    }
    by_origin: dict[str, D] = {}
    for r in records:
        by_origin[r["x_OriginChargeId"]] = by_origin.get(r["x_OriginChargeId"], D(0)) + D(r["BilledCost"])
    # One origin per node: its cards x 1 h x 2.00.
    assert sorted(by_origin.values()) == [D("4.00"), D("16.00")]
    assert all(k.startswith("2025-03/") and "/h100/n" in k for k in by_origin)
    n0 = [r for r in records if r["ResourceName"] == "n0"]
    assert {
        (r["ResourceType"], r["ResourceId"].rsplit("/", 2)[1:]) == ("GPU node", ["h100", "n0"]) for r in n0
    } == {True}
    # The report's lines are unchanged (one rounding per line); nlp's rows differ from its line by a
    # cent, their exact amounts sum to its line's.
    lines = {(ln.kind, ln.tenant_id): ln for ln in ReportLine.objects.filter(period=month.period)}
    assert lines[("charge", cast.nlp.pk)].amount == D("3.52")
    assert lines[("charge", cast.vision.pk)].amount == D("8.00")
    assert lines[(("idle"), None)].amount == D("8.48")
    nlp_rows = [r for r in records if r["x_TenantPath"] == nlp]
    assert sum(D(r["BilledCost"]) for r in nlp_rows) == D("3.53")
    assert sum(D(r["x_AmountExact"]) for r in nlp_rows) == lines[("charge", cast.nlp.pk)].amount_exact
    assert {r["x_LineNumber"] for r in nlp_rows} == {str(lines[("charge", cast.nlp.pk)].line_no)}


def test_a_tenant_sees_its_own_pieces_only(month, cast, api):
    _, records = focus_rows(api, cast.alice)
    assert {(r["ResourceName"], r["BilledCost"]) for r in records} == {("n0", "6.00"), ("n1", "2.00")}


def test_a_line_is_cut_to_the_nanohour_summing_to_itself():
    # 1 card-hour over weights 1 : 1 : 1: 0.333333334 + 0.333333333 + 0.333333333 (ties to the earlier).
    assert apportion(D("1.000000000"), [D(1), D(1), D(1)], 9) == [
        D("0.333333334"),
        D("0.333333333"),
        D("0.333333333"),
    ]
    assert sum(apportion(D("1.761904762"), [D("1.428571429"), D("0.333333333")], 9)) == D("1.761904762")
