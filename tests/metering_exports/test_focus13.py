"""FOCUS 1.3: split cost allocation of a small month worked by hand, unpriced usage kept and marked,
column selection, 1.2 still on request, and the suite's validator on every file.

The month (one hour of March 2025, tests/metering/rows): pool h100, 1 H100 card at 1.00 USD per
GE-hour: vision holds 1/3 of it (0.333333333 card-hours), nlp 1/3 (0.333333333), idle 0.333333334.
Pool h200: 2 H200 cards, no rate card, globex-ml holds 1.5 card-hours, 0.5 idle.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from metering.exports.focus13 import ALLOCATED_METHOD_ID, FOCUS13_COLUMNS
from metering.services.periods import close_billing_period, start_closing_period
from tests.metering import rows
from tests.metering_exports.focus_validator import validate

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)


@pytest.fixture
def month(cast):
    h100 = rows.pool("h100")
    rows.capacity(h100, cards=1, idle="0.333333334")
    rows.held(h100, tenant=cast.vision, ge_hours="0.333333333")
    rows.held(h100, tenant=cast.nlp, ge_hours="0.333333333")
    rows.card(h100, price="1.00")
    h200 = rows.Pool(cluster=h100.cluster, pool=rows.inv.pool("h200", on=h100.cluster), period=h100.period)
    h200.model = "H200-141GB"
    rows.capacity(h200, cards=2, idle="0.5", node="n1")
    rows.held(h200, tenant=cast.globex_ml, ge_hours="1.5")
    start_closing_period(actor=cast.fiona, period_id=h100.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=h100.period.pk, now=LATER, acknowledge_unpriced=True)
    return h100


def focus(api, user, query=""):
    got = api(user).get(f"/api/v1/reports/export/?as=focus&period=2025-03{query}")
    assert got.status_code == 200, got.content
    return b"".join(got.streaming_content).decode()


def parsed(text):
    return list(csv.DictReader(io.StringIO(text)))


def origin(row):
    return row["x_OriginChargeId"]


def test_a_pools_card_hours_are_split_among_holders_and_idle_to_the_cent(month, cast, api):
    text = focus(api, cast.fiona)
    assert validate(text, origin_of=origin) == []
    records = parsed(text)
    h100 = [r for r in records if r["x_Pool"].endswith("h100")]
    by_kind = {(r["x_LineKind"], r["x_TenantPath"]): r for r in h100}
    vision = by_kind[("charge", "/acme/research/vision/")]
    nlp = by_kind[("charge", "/acme/research/nlp/")]
    idle = by_kind[("idle", "")]
    # Origin: 1 card x 1 h x 1.00 = 1.00. Lines rounded one by one: 0.333333333 -> 0.33, 0.33, and
    # idle 0.333333334 -> 0.33: 0.99, a cent short. It goes to the line whose rounding lost the
    # most: idle (0.003333334 > 0.003333333), so 0.33 + 0.33 + 0.34 = 1.00.
    assert (vision["BilledCost"], nlp["BilledCost"], idle["BilledCost"]) == ("0.33", "0.33", "0.34")
    assert sum(D(r["EffectiveCost"]) for r in h100) == D("1.00")

    def ratio(r):
        return D(json.loads(r["AllocatedMethodDetails"])["Elements"][0]["AllocatedRatio"].__str__())

    # Ratios are card-hours / 1 card-hour, to 12 places, summing to exactly 1.
    assert [ratio(r) for r in (vision, nlp, idle)] == [D("0.333333333"), D("0.333333333"), D("0.333333334")]
    assert {r["AllocatedMethodId"] for r in h100} == {ALLOCATED_METHOD_ID}
    assert len({r["x_OriginChargeId"] for r in h100}) == 1
    # Holders are the allocated resources; idle is the unallocated portion (null AllocatedResourceId).
    assert (vision["AllocatedResourceId"], vision["AllocatedResourceName"]) == (
        str(cast.vision.pk),
        "/acme/research/vision/",
    )
    assert json.loads(vision["AllocatedTags"])["gpuplatform/tenant"] == "/acme/research/vision/"
    assert (idle["AllocatedResourceId"], idle["AllocatedResourceName"], idle["AllocatedTags"]) == ("", "", "")
    # Dimensions are the origin's: the pool, the cluster as sub account, one SKU and SKU price.
    assert {r["SkuId"] for r in h100} == {"H100-80GB"}
    assert {r["SkuPriceId"] for r in h100} == {"H100-80GB/allocation/USD"}
    assert json.loads(vision["SkuPriceDetails"]) == {
        "GpuCount": 1,
        "x_GpuModel": "H100-80GB",
        "x_PricingBasis": "allocation",
        "x_Unpriced": False,
    }
    assert vision["ServiceProviderName"] == vision["HostProviderName"] == "gpuplatform"
    assert vision["x_GeHours"] == "0.333333333"


def test_unpriced_usage_is_kept_and_marked_never_dropped(month, cast, api):
    records = parsed(focus(api, cast.fiona))
    h200 = [r for r in records if r["x_Pool"].endswith("h200")]
    # globex-ml's 1.5 card-hours and the 0.5 idle: both rows there, at 0 and marked unpriced.
    assert sorted(
        (r["x_LineKind"], r["PricingQuantity"], r["BilledCost"], r["x_Unpriced"]) for r in h200
    ) == [
        ("charge", "1.500000000", "0.00", "true"),
        ("idle", "0.500000000", "0.00", "true"),
    ]
    assert {r["SkuPriceId"] for r in h200} == {"H200-141GB/unpriced"}
    assert all(r["ChargeDescription"].startswith("Unpriced (no rate card)") for r in h200)
    assert all(r["BillingCurrency"] == "USD" for r in h200)
    # The CSV lists the same lines: FOCUS drops nothing.
    csv_rows = parsed(
        b"".join(
            api(cast.fiona).get("/api/v1/reports/export/?as=csv&period=2025-03").streaming_content
        ).decode()
    )
    assert len(records) == len(csv_rows) == 5


def test_columns_can_be_chosen_and_an_unknown_one_is_a_problem(month, cast, api):
    text = focus(api, cast.fiona, "&columns=BilledCost,SkuId,x_Unpriced")
    assert text.splitlines()[0] == "BilledCost,SkuId,x_Unpriced"
    assert len(parsed(text)) == 5
    for query, code in [
        ("&columns=BilledCost,Nope", "unknown_focus_column"),
        ("&focus_version=2.0", "invalid_focus_version"),
        ("&focus_version=1.2&columns=BilledCost", "columns_need_focus_1_3"),
    ]:
        got = api(cast.fiona).get(f"/api/v1/reports/export/?as=focus&period=2025-03{query}")
        assert (got.status_code, got["Content-Type"], got.json()["code"]) == (
            400,
            "application/problem+json",
            code,
        )


def test_focus_1_2_is_kept_on_request(month, cast, api):
    from metering.exports.focus import FOCUS_COLUMNS

    records = parsed(focus(api, cast.fiona, "&focus_version=1.2"))
    assert list(records[0]) == list(FOCUS_COLUMNS)
    assert len(records) == 3  # 1.2 cannot say "unpriced": the h200 lines are not in it
    assert list(parsed(focus(api, cast.fiona))[0]) == list(FOCUS13_COLUMNS)


def test_a_tenant_sees_its_own_rows_only(month, cast, api):
    records = parsed(focus(api, cast.alice))
    assert {r["x_TenantPath"] for r in records} == {"/acme/research/vision/"}


def test_the_validator_catches_what_it_claims_to(month, cast, api):
    """The validator is not vacuous: the 1.2 file and tampered 1.3 files fail the rules they break."""
    good = focus(api, cast.fiona)
    old = validate(focus(api, cast.fiona, "&focus_version=1.2"), origin_of=origin)
    assert "'ServiceProviderName MUST be present in a Cost and Usage FOCUS dataset.'" in old
    records = parsed(good)
    header = list(records[0])

    def written(rows_):
        out = io.StringIO()
        writer = csv.DictWriter(out, header, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows(rows_)
        return out.getvalue()

    vision = next(r for r in records if r["x_TenantPath"] == "/acme/research/vision/")
    vision["BilledCost"] = "0.34"  # the origin's rows now sum to 1.01
    vision["SkuId"] = "H100-80GB/other"  # one SkuPriceId, two SkuIds; and a dimension off the origin's
    problems = "\n".join(validate(written(records), origin_of=origin))
    assert "MUST sum up to the origin charge record for all aggregatable metric columns" in problems
    assert "SkuPriceId MUST have one and only one parent SkuId." in problems
    assert "MUST match the values of the origin charge record.': " in problems
    idle = next(r for r in parsed(good) if r["x_LineKind"] == "idle" and r["x_Pool"].endswith("h100"))
    idle["AllocatedMethodDetails"] = '{"Elements":[{"AllocatedRatio":0.5,"UsageQuantity":1}]}'
    idle["AllocatedResourceName"] = "someone"
    problems = "\n".join(validate(written([idle]), origin_of=origin))
    assert "MUST sum up to 1 (100%)" in problems
    assert '"UsageUnit" MUST be included' in problems
    assert "AllocatedResourceName MUST be null when AllocatedResourceId is null." in problems


def test_a_price_change_keeps_one_sku_price_id_and_flavors_share_the_models_sku(cast, api):
    """H100 at 2.00 until 10:00 on the 10th, 3.00 from then (two rate cards, one SKU price). At 09:00
    vision holds the one card (2.00); at 10:00, of 2 cards, vision holds 1 (3.00) and nlp 1g.10gb
    slices worth 0.5 card-hour (0.5 x 3.00 = 1.50), 0.5 idle (1.50). A model card prices every
    flavor of the model: one SkuId, whatever the flavor (it was model/flavor: two SkuIds under one
    SkuPriceId)."""
    from metering.models import RateCard
    from quotas.models import Flavor

    p = rows.pool("h100")
    before, after = rows.HOUR.replace(hour=9), rows.HOUR.replace(hour=10)
    rows.capacity(p, cards=1, idle="0", hour=before)
    rows.capacity(p, cards=2, idle="0.5", hour=after)
    rows.held(p, tenant=cast.vision, ge_hours="1", hour=before)
    rows.held(p, tenant=cast.vision, ge_hours="1", hour=after)
    Flavor.objects.create(name="mig-1g", resources=[{"name": "nvidia.com/mig-1g.10gb", "ge_per_unit": "1/7"}])
    rows.usage(
        p, tenant=cast.nlp, meter="allocated_ge_hours", quantity="0.5", card_hours="0.5", hour=after,
        flavor_name="mig-1g", share_key="share-nlp-mig",
    )  # fmt: skip
    common = {"gpu_model": p.model, "currency": "USD", "basis": "allocation", "blend_weight": D("0.5")}
    start = rows.HOUR.replace(day=1, hour=0)
    RateCard.objects.create(**common, price_per_ge_hour=D("2.00"), effective_from=start, effective_to=after)
    RateCard.objects.create(**common, price_per_ge_hour=D("3.00"), effective_from=after)
    start_closing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)

    text = focus(api, cast.fiona)
    assert validate(text, origin_of=origin) == []
    records = parsed(text)
    got = {
        (r["SkuId"], r["SkuPriceId"], r["ListUnitPrice"], r["x_LineKind"], r["x_Flavor"], r["BilledCost"])
        for r in records
    }
    sku = ("H100-80GB", "H100-80GB/allocation/USD")
    assert got == {
        (*sku, "2.000000", "charge", "", "2.00"),  # vision at 09:00
        (*sku, "2.000000", "idle", "", "0.00"),  # nothing idle at 09:00
        (*sku, "3.000000", "charge", "", "3.00"),  # vision at 10:00
        (*sku, "3.000000", "charge", "mig-1g", "1.50"),  # nlp's slices at 10:00
        (*sku, "3.000000", "idle", "", "1.50"),  # 0.5 idle at 10:00
    }
    # Two origins, one per rate card: 1 card-hour at 2.00 = 2.00; 2 card-hours at 3.00 = 6.00.
    origins: dict[str, D] = {}
    for r in records:
        origins[r["x_OriginChargeId"]] = origins.get(r["x_OriginChargeId"], D(0)) + D(r["BilledCost"])
    assert sorted(origins.values()) == [D("2.00"), D("6.00")]
    nlp = next(r for r in records if r["x_Flavor"] == "mig-1g")
    assert (nlp["x_ShareType"], nlp["x_MigProfile"]) == ("mig_instance", "1g.10gb")


def test_a_rate_card_reference_that_names_no_card_is_exported_as_it_is(cast, api):
    """rate_card_ref is a frozen reference, not a key: one that is no card's id (a card from another
    system, say) is written as x_RateCardId and priced under the model's SKU, not a crash."""
    from metering.models import ReportLine
    from metering.services.reports import build_period_report

    p = rows.pool("h100")
    rows.capacity(p, cards=1, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="0.5")
    rows.card(p, price="1.00")
    build_period_report(period_id=p.period.pk, at=LATER)  # a draft: the period stays open
    ReportLine.objects.filter(period=p.period).update(rate_card_ref="r-1")
    text = focus(api, cast.fiona)
    records = parsed(text)
    assert validate(text, origin_of=origin) == []
    assert {(r["x_RateCardId"], r["SkuId"], r["BilledCost"]) for r in records} == {
        ("r-1", "H100-80GB", "0.50")
    }
