"""Celery tasks of SLOs: by id, idempotent, with stable names."""

from __future__ import annotations

import uuid
from typing import Any

from celery import shared_task
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from gpuplatform.health.heartbeats import beat
from metering.slos.models import AlertDelivery, DeliveryState, Slo
from metering.slos.services import deliver, evaluate_slo


@shared_task(name="metering.evaluate_slos")
def evaluate_slos_task() -> dict[str, int]:
    """Beat entry: every SLO's settled buckets, alerts, and any delivery whose retry is due."""
    written = {}
    for slo_id in Slo.objects.order_by("name").values_list("pk", flat=True):
        written[str(slo_id)] = evaluate_slo(slo_id=slo_id).samples_written
    beat(
        "metering.slo_evaluation",
        label="SLO evaluation",
        every_seconds=settings.SLO_EVALUATION_SECONDS,
        url=reverse("slo-list"),
    )
    due = AlertDelivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=timezone.now())
    for delivery_id in due.values_list("pk", flat=True):
        deliver_alert_task.delay(str(delivery_id))
    return written


@shared_task(name="metering.deliver_alert")
def deliver_alert_task(delivery_id: str) -> dict[str, Any]:
    delivery = deliver(delivery_id=uuid.UUID(delivery_id))
    return {"delivery": delivery_id, "state": delivery.state, "attempts": delivery.attempts}
