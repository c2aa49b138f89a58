"""Quotas' item of the overview's "what needs attention": requests still pending past the queue-wait
target, in the queues the viewer sees. The target is the queue-wait SLO's default (10 minutes,
docs/slos.md); quotas cannot read metering's SLOs, so it is a setting
(``QUEUE_WAIT_ATTENTION_SECONDS``, from the environment: README's settings table). One query."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min
from django.urls import reverse
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.ui.attention import Attention
from quotas.models import CapacityRequest, RequestState


def wait_target() -> timedelta:
    return timedelta(seconds=settings.QUEUE_WAIT_ATTENTION_SECONDS)


def attention(user: User) -> list[Attention]:
    target = wait_target()
    late = (
        CapacityRequest.objects.visible_to(user)
        .filter(state=RequestState.PENDING, created_at__lt=timezone.now() - target)
        .aggregate(n=Count("pk"), oldest=Min("created_at"))
    )
    if not late["n"]:
        return []
    waited = timezone.now() - late["oldest"]
    minutes = int(target.total_seconds() // 60)
    return [
        Attention(
            key="requests-pending-late",
            severity="warning",
            title=f"{late['n']} request{'s' if late['n'] != 1 else ''} pending over {minutes} min",
            detail=f"the oldest has waited {_span(waited)}; each says why it waits on the queue page",
            url=reverse("queues"),
            count=late["n"],
        )
    ]


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"
