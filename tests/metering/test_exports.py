"""A closed month's exports: the report job writes CSV, XLSX and FOCUS 1.3 files, byte-identical on
re-run; finance downloads them; a tenant exports only its own lines; bad values are problems.

The month (tests/metering/rows): 2 cards at 2.00 USD, vision held 1 GE-hour (2.00), nlp 0.5 (1.00),
idle 0.5 (1.00). April then books 0.25 late card-hours of vision's March hour (0.50).
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from openpyxl import load_workbook

from gpuplatform.audit.models import AuditEvent
from metering.exports.focus13 import FOCUS13_COLUMNS
from metering.models import Adjustment, JobState, ReportFile, ReportJob
from metering.services.periods import close_billing_period, ensure_period, start_closing_period
from metering.services.report_jobs import request_report_job, run_report_job
from metering.services.reports import build_period_report
from tests.metering import rows

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)
MANDATORY = {
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName",
    "HostProviderName", "ServiceProviderName",
}  # fmt: skip
FOCUS_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def closed(cast):
    p = rows.pool()
    rows.capacity(p, cards=2, idle="0.5")
    rows.held(p, tenant=cast.vision, ge_hours="1")
    rows.held(p, tenant=cast.nlp, ge_hours="0.5")
    rows.used(p, tenant=cast.vision, ge_hours="0.6")
    rows.card(p, price="2.00")
    start_closing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    return p


def files_of(job):
    return {f.format: f.file.open("rb").read() for f in ReportFile.objects.filter(job=job)}


def build(actor, period):
    job = request_report_job(actor=actor, period_id=period.pk)
    return run_report_job(job_id=job.pk)


def parsed(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def test_the_closed_months_files_are_written_and_identical_on_a_second_run(closed, cast):
    first = build(cast.fiona, closed.period)
    second = build(cast.fiona, closed.period)
    assert first.pk != second.pk
    assert (first.state, first.progress, first.lines) == (JobState.DONE, 100, 3)
    a, b = files_of(first), files_of(second)
    assert set(a) == {"csv", "xlsx", "focus"}
    assert a == b  # byte for byte, the XLSX zip included
    events = AuditEvent.objects.filter(action__startswith="report_job.")
    # Two requests, two completions (events of one second are not ordered among themselves by id).
    assert sorted(e.action for e in events) == ["report_job.done"] * 2 + ["report_job.requested"] * 2


def test_the_csv_has_every_line_with_exact_and_rounded_amounts(closed, cast):
    data = files_of(build(cast.fiona, closed.period))["csv"]
    assert data.startswith(b"period,line_no,kind,tenant_id,tenant,")
    assert b"\r\n" in data
    got = [
        (r["kind"], r["tenant"], r["card_hours_charged"], r["amount"], r["efficiency"]) for r in parsed(data)
    ]
    assert sorted(got) == [
        ("charge", "nlp", "0.500000000", "1.00", ""),
        ("charge", "vision", "1.000000000", "2.00", "0.6000"),
        ("idle", "", "0.500000000", "1.00", ""),
    ]


def test_the_focus_file_has_the_mandatory_columns_in_the_specs_formats(closed, cast):
    data = files_of(build(cast.fiona, closed.period))["focus"]
    records = parsed(data)
    assert set(records[0]) >= MANDATORY and list(records[0]) == list(FOCUS13_COLUMNS)
    assert all(c.startswith("x_") for c in FOCUS13_COLUMNS if c not in MANDATORY and c[0].islower())
    vision = next(r for r in records if r["x_TenantPath"] == "/acme/research/vision/")
    assert vision["BilledCost"] == vision["EffectiveCost"] == vision["ListCost"] == "2.00"
    assert (vision["PricingQuantity"], vision["ListUnitPrice"], vision["PricingUnit"]) == (
        "1.000000000", "2.000000", "GPU-Hours",
    )  # fmt: skip
    assert (vision["ChargeCategory"], vision["ChargeClass"], vision["ChargeFrequency"]) == (
        "Usage",
        "",
        "Usage-Based",
    )
    assert (vision["ServiceCategory"], vision["ServiceSubcategory"]) == ("Compute", "Containers")
    # FOCUS 1.3 split allocation: the cluster is the sub account, the tenant the allocated resource.
    assert (vision["SubAccountType"], vision["AllocatedResourceId"]) == ("Cluster", str(cast.vision.pk))
    assert vision["BillingPeriodStart"] == vision["ChargePeriodStart"] == "2025-03-01T00:00:00Z"
    assert vision["BillingPeriodEnd"] == "2025-04-01T00:00:00Z"
    for record in records:
        for column in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
            assert FOCUS_TIME.match(record[column]), (column, record[column])
    idle = next(r for r in records if r["x_LineKind"] == "idle")
    assert (idle["AllocatedResourceId"], idle["AllocatedMethodId"], idle["BilledCost"]) == (
        "",
        "gpuplatform-card-hours-v1",
        "1.00",
    )
    assert sum(D(r["BilledCost"]) for r in records) == D("4.00")  # = 2 cards x 1 h x 2.00


def test_an_adjustment_refers_to_the_period_it_corrects(closed, cast):
    april = ensure_period(at=LATER)
    Adjustment.objects.create(
        period=april, adjusts_period=closed.period, cluster=closed.cluster, hour=rows.HOUR,
        share_key="share-vision", meter="allocated_ge_hours", tenant=cast.vision, pool=closed.pool,
        pool_name=closed.pool.name, gpu_model=closed.model, quantity_delta=D("0.25"),
        card_hours_delta=D("0.25"), reason="late data",
    )  # fmt: skip
    build_period_report(period_id=april.pk, at=LATER)
    records = parsed(files_of(build(cast.fiona, april))["focus"])
    (adj,) = [r for r in records if r["x_LineKind"] == "adjustment"]
    assert (adj["ChargeClass"], adj["x_Adjusts"], adj["BilledCost"]) == ("Correction", "2025-03", "0.50")
    assert (adj["ChargePeriodStart"], adj["ChargePeriodEnd"]) == (
        "2025-03-01T00:00:00Z",
        "2025-04-01T00:00:00Z",
    )
    assert (adj["BillingPeriodStart"], adj["BillingPeriodEnd"]) == (
        "2025-04-01T00:00:00Z",
        "2025-05-01T00:00:00Z",
    )


def test_the_workbook_has_a_summary_and_typed_lines(closed, cast):
    data = files_of(build(cast.fiona, closed.period))["xlsx"]
    book = load_workbook(io.BytesIO(data))
    assert book.sheetnames == ["Summary", "Lines"]
    summary = [list(row) for row in book["Summary"].iter_rows(values_only=True)]
    assert ("Period", "2025-03") in [tuple(r[:2]) for r in summary]
    reconciliation = next(r for r in summary if r and r[0] == f"{closed.cluster.name}/{closed.pool.name}")
    assert (
        reconciliation[6] == 4 and reconciliation[8] == 0 and reconciliation[9] is True
    )  # physical, residue
    lines = list(book["Lines"].iter_rows())
    header = [c.value for c in lines[0]]
    vision = next(r for r in lines[1:] if r[header.index("tenant")].value == "vision")
    amount = vision[header.index("amount")]
    assert (amount.value, amount.number_format, amount.data_type) == (2, "#,##0.00", "n")
    assert vision[header.index("efficiency")].number_format == "0.00%"
    assert vision[header.index("card_hours_charged")].value == 1


def test_finance_requests_and_downloads_through_the_api_and_a_tenant_cannot(closed, cast, api):
    asked = api(cast.fiona).post("/api/v1/report-jobs/", {"period": str(closed.period.pk)}, format="json")
    assert asked.status_code == 202, asked.content
    again = api(cast.fiona).post("/api/v1/report-jobs/", {"period": str(closed.period.pk)}, format="json")
    assert again.json()["id"] == asked.json()["id"]  # still queued: one job, not two
    job = run_report_job(job_id=asked.json()["id"])  # the worker's part
    shown = api(cast.fiona).get(f"/api/v1/report-jobs/{job.pk}/").json()
    assert (shown["state"], shown["progress"], sorted(f["format"] for f in shown["files"])) == (
        "done", 100, ["csv", "focus", "xlsx"],
    )  # fmt: skip
    got = api(cast.fiona).get(f"/api/v1/report-jobs/{job.pk}/download/?as=focus")
    assert got.status_code == 200 and got["Content-Disposition"].endswith('filename="2025-03-focus.csv"')
    assert b"".join(got.streaming_content) == files_of(job)["focus"]
    bad = api(cast.fiona).get(f"/api/v1/report-jobs/{job.pk}/download/?as=pdf")
    assert (bad.status_code, bad["Content-Type"], bad.json()["code"]) == (
        400, "application/problem+json", "invalid_export_format",
    )  # fmt: skip
    assert api(cast.alice).get(f"/api/v1/report-jobs/{job.pk}/download/?as=csv").status_code == 404
    refused = api(cast.alice).post("/api/v1/report-jobs/", {"period": str(closed.period.pk)}, format="json")
    assert refused.status_code == 404
    assert ReportJob.objects.count() == 1


def test_a_tenant_exports_its_own_lines_only(closed, cast, api):
    got = api(cast.alice).get("/api/v1/reports/export/?period=2025-03&as=csv")
    assert got.status_code == 200
    records = parsed(b"".join(got.streaming_content))
    assert [(r["tenant"], r["amount"]) for r in records] == [("vision", "2.00")]
    as_json = api(cast.alice).get("/api/v1/reports/export/?period=2025-03&as=json")

    assert [r["amount"] for r in json.loads(b"".join(as_json.streaming_content))] == ["2.00"]
    sheet = api(cast.alice).get("/api/v1/reports/export/?period=2025-03&as=xlsx")
    book = load_workbook(io.BytesIO(b"".join(sheet.streaming_content)))
    assert [r[4] for r in book["Lines"].iter_rows(min_row=2, values_only=True)] == ["vision"]
    assert not [r for r in book["Summary"].iter_rows(values_only=True) if r and r[0] == "pool"][1:]
    everything = parsed(b"".join(api(cast.fiona).get("/api/v1/reports/export/?as=focus").streaming_content))
    assert len(everything) == 3


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("as=pdf", "invalid_export_format"),
        ("period=1999-01", "unknown_period"),
        ("as=xlsx", "period_required"),
    ],
)
def test_bad_export_values_are_problems(closed, cast, api, query, code):
    got = api(cast.fiona).get(f"/api/v1/reports/export/?{query}")
    assert (got.status_code, got["Content-Type"], got.json()["code"]) == (
        400,
        "application/problem+json",
        code,
    )


def test_a_job_another_worker_holds_is_left_alone_and_a_lost_one_is_taken_up(closed, cast):
    job = request_report_job(actor=cast.fiona, period_id=closed.period.pk)
    ReportJob.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=LATER)
    held = run_report_job(job_id=job.pk, now=lambda: LATER + timedelta(minutes=5))
    assert (held.state, ReportFile.objects.count()) == (JobState.RUNNING, 0)
    resumed = run_report_job(job_id=job.pk, now=lambda: LATER + timedelta(hours=1))
    assert (resumed.state, ReportFile.objects.count()) == (JobState.DONE, 3)


def test_postgresqls_copy_writes_the_bytes_the_python_formatter_writes(closed, cast):
    """The FOCUS file comes from PostgreSQL's COPY on PostgreSQL and from Python on SQLite (the
    demo): both must give the same bytes, here on awkward lines (quotes, commas, line breaks, empty
    texts, texts that start like formulas, half-cent ties rounded half-even, a currency without
    cents, an adjustment)."""
    from gpuplatform.api.viewsets import scoped
    from metering.exports.focus import focus_chunks
    from metering.exports.focus_sql import copied_focus_chunks
    from metering.exports.lines import export_lines
    from metering.models import ReportLine

    april = ensure_period(at=LATER)
    odd = {
        "pool_name": 'east/"pool", 1', "flavor_name": "a\r\nb", "gpu_model": "H100\n80GB",
        "cost_centre": "", "tenant_path": closed.period.lines.get(tenant=cast.vision).tenant_path,
    }  # fmt: skip
    for n, (currency, amount, kind, extra) in enumerate(
        [
            ("USD", D("0.0050"), "charge", odd),  # tie: half-even 0.00 (round() would say 0.01)
            (
                "USD",
                D("0.0150"),
                "charge",
                {"cost_centre": "=SUM(1)", "flavor_name": "-x", "gpu_model": "\tA"},
            ),  # tie: 0.02; formulas
            ("USD", D("-0.0050"), "adjustment", {"adjusts": "2025-03"}),  # -0.00 is written 0.00
            ("JPY", D("1234.5000"), "idle", {"tenant_path": ""}),  # no cents, tie: 1234
            ("BHD", D("1.2345"), "idle_share", {"adjusts": "1999-01"}),  # three places: 1.234
            ("", D("7"), "charge", {"basis": "utilisation", "used_ge_hours": D("0.3")}),
            ("USD", None, "charge", {}),  # unpriced: left out of FOCUS
        ],
        start=100,
    ):
        ReportLine.objects.create(
            period=april, line_no=n, kind=kind, tenant=cast.vision if kind != "idle" else None,
            currency=currency, unit_price=D("2.5"), ge_hours=D("1.5"), card_hours=D("0"),
            amount_exact=amount, amount=amount, rate_card_ref="",
            **({"basis": "allocation", "tenant_path": cast.vision.path} | extra),
        )  # fmt: skip
    for lines in (ReportLine.objects.all(), scoped(ReportLine.objects.all(), cast.alice)):
        python = b"".join(focus_chunks(export_lines(lines)))
        assert b"".join(copied_focus_chunks(lines)) == python
        assert python.count(b"\r\n") > 7
