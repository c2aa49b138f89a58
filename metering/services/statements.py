"""Statements of a closed period: one per tenant and one per cost centre (per currency, when finance
let a period hold two), numbered ``<period>-<nnnn>`` in a fixed order (tenants by path, then cost
centres), issued when the period closes and read from its frozen report lines ever after."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from gpuplatform.errors import Conflict
from metering.models import BillingPeriod, PeriodState, ReportLine, Statement, StatementKind
from metering.statements.document import SECTIONS, LineIn, StatementDoc, build_statement, split_by_currency
from tenants.models import Tenant

ZERO = Decimal(0)


def _line_in(line: ReportLine) -> LineIn:
    return LineIn(
        line_no=line.line_no,
        kind=line.kind,
        tenant_slug=line.tenant_slug,
        pool=line.pool_name,
        flavor=line.flavor_name,
        gpu_model=line.gpu_model,
        currency=line.currency,
        unit_price=line.unit_price,
        ge_hours=line.ge_hours,
        amount=line.amount,
        adjusts=line.adjusts,
        reason=line.note,
    )


def _billable(period: BillingPeriod) -> list[ReportLine]:
    """The period's lines a tenant pays: not central idle, not unassigned usage."""
    return list(
        ReportLine.objects.filter(period=period, tenant__isnull=False, kind__in=list(SECTIONS)).order_by(
            "line_no"
        )
    )


def issue_statements(*, period: BillingPeriod, at: datetime | None = None) -> list[Statement]:
    """Issue the statements of ``period`` (closed, or closing inside close_billing_period's
    transaction with its report just written). Idempotent: a period's statements are issued once."""
    if period.state == PeriodState.OPEN:
        raise Conflict(f"billing period {period.label} is open: statements come once it closes")
    existing = list(Statement.objects.filter(period=period).order_by("number"))
    if existing:
        return existing
    at = at or timezone.now()
    lines = _billable(period)
    names: dict[object, str] = dict(Tenant.objects.values_list("pk", "display_name"))
    by_tenant: dict[tuple[str, object], list[LineIn]] = defaultdict(list)
    slugs: dict[object, str] = {}
    by_centre: dict[str, list[LineIn]] = defaultdict(list)
    for line in lines:
        item = _line_in(line)
        by_tenant[(line.tenant_path, line.tenant_id)].append(item)
        slugs[line.tenant_id] = line.tenant_slug
        if line.cost_centre:
            by_centre[line.cost_centre].append(item)
    made: list[Statement] = []

    def add(kind: str, items: list[LineIn], **who: object) -> None:
        for currency, mine in split_by_currency(items).items():
            doc = build_statement(
                number="",
                period_label=period.label,
                period_start=period.starts_at,
                period_end=period.ends_at,
                addressee="",
                cost_centre="",
                currency=currency,
                lines=mine,
                issued_at=at,
            )
            made.append(
                Statement(
                    period=period,
                    number=f"{period.label}-{len(made) + 1:04d}",
                    kind=kind,
                    currency=currency,
                    charges=doc.charges_total,
                    adjustments=doc.adjustments_total,
                    credits=doc.credits_total,
                    total=doc.total,
                    unpriced_ge_hours=doc.unpriced_ge_hours,
                    issued_at=at,
                    **who,
                )
            )

    for (_, tenant_id), items in sorted(by_tenant.items(), key=lambda kv: kv[0][0]):
        centre = next((line.cost_centre for line in lines if line.tenant_id == tenant_id), "")
        add(
            StatementKind.TENANT,
            items,
            tenant_id=tenant_id,
            tenant_slug=slugs[tenant_id],
            tenant_name=names.get(tenant_id, slugs[tenant_id]),
            cost_centre=centre,
        )
    for centre, items in sorted(by_centre.items()):
        add(StatementKind.COST_CENTRE, items, cost_centre=centre)
    with transaction.atomic():
        Statement.objects.bulk_create(made)
    return made


def statement_document(*, statement: Statement) -> StatementDoc:
    """The statement with its lines, read from the period's frozen report lines."""
    period = statement.period
    lines = ReportLine.objects.filter(period=period, tenant__isnull=False, kind__in=list(SECTIONS))
    if statement.kind == StatementKind.TENANT:
        lines = lines.filter(tenant=statement.tenant)
    else:
        lines = lines.filter(cost_centre=statement.cost_centre)
    items = split_by_currency(_line_in(line) for line in lines.order_by("line_no")).get(
        statement.currency, []
    )
    return build_statement(
        number=statement.number,
        period_label=period.label,
        period_start=period.starts_at,
        period_end=period.ends_at,
        addressee=statement.tenant_name or f"Cost centre {statement.cost_centre}",
        cost_centre=statement.cost_centre,
        currency=statement.currency,
        lines=items,
        issued_at=statement.issued_at,
    )
