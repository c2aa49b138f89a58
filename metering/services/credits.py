"""Manual credits and charges: finance books an amount with a reason for a tenant; it lands in the
first open period (a closed one never changes) and becomes a ``credit`` line of that period's report,
so the tenant's next statement shows it."""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Forbidden, NotFound, ValidationFailed
from metering.chargeback.money import minor_unit
from metering.models import BillingPeriod, Credit, PeriodState
from metering.services.currency import check_period_currency, validate_currency
from metering.services.periods import ensure_period, next_open_period
from tenants.models import Tenant

AUDITED = ("tenant_id", "currency", "amount", "reason", "period_id")


def book_credit(
    *,
    actor: Any,
    tenant_id: uuid.UUID,
    amount: Decimal,
    currency: str,
    reason: str,
    now: datetime | None = None,
) -> Credit:
    """Book a credit (negative ``amount``) or a charge (positive) in the first open period. Locks the
    period; audited in the same transaction. Not idempotent: each call books one more."""
    if not (getattr(actor, "is_finance", False) or getattr(actor, "is_platform_admin", False)):
        raise Forbidden("Only finance and platform-admins book credits and charges.")
    currency = validate_currency(currency)
    reason = reason.strip()
    if not reason:
        raise ValidationFailed("say why: a credit or charge needs a reason", field="reason")
    if not amount:
        raise ValidationFailed("the amount cannot be zero", field="amount")
    if amount != amount.quantize(Decimal(1).scaleb(-minor_unit(currency))):
        raise ValidationFailed(
            f"{currency} has {minor_unit(currency)} decimal places: round the amount", field="amount"
        )
    with transaction.atomic():
        tenant = Tenant.objects.filter(pk=tenant_id).first()
        if tenant is None:
            raise NotFound("No such tenant.")
        here = ensure_period(at=now or timezone.now())
        target = here if here.state != PeriodState.CLOSED else next_open_period(after=here)
        period = BillingPeriod.objects.select_for_update().get(pk=target.pk)
        if period.state == PeriodState.CLOSED:  # closed between the two reads
            period = next_open_period(after=period)
        check_period_currency(period=period, currency=currency)
        credit = Credit.objects.create(
            period=period, tenant=tenant, currency=currency, amount=amount, reason=reason, created_by=actor
        )
        record_event(
            actor=actor,
            action="credit.booked",
            obj=credit,
            after=snapshot(credit, AUDITED),
            tenant_id=tenant.pk,
        )
    return credit
