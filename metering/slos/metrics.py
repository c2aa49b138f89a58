"""SLOs as Prometheus metrics (gpuplatform/metrics.py's port): each SLO's SLI over its window, error
budget left, and burn rate per window; firing alerts."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from metering.slos.models import AlertState, Slo, SloAlert
from metering.slos.services import standing


def collect() -> Iterable[Metric]:
    sli = GaugeMetricFamily("gpuplatform_slo_sli", "The SLI over the SLO's window.", labels=["slo", "sli"])
    objective = GaugeMetricFamily("gpuplatform_slo_objective", "The SLO's objective.", labels=["slo", "sli"])
    budget = GaugeMetricFamily(
        "gpuplatform_slo_error_budget_remaining",
        "Share of the window's error budget left (negative: overspent).",
        labels=["slo", "sli"],
    )
    burn = GaugeMetricFamily(
        "gpuplatform_slo_burn_rate",
        "Burn rate over the window (1: the budget lasts the SLO's window).",
        labels=["slo", "sli", "window"],
    )
    alerts = GaugeMetricFamily(
        "gpuplatform_slo_alert_firing", "Burn-rate alerts firing.", labels=["slo", "rule"]
    )
    for slo in Slo.objects.order_by("name"):
        labels = [slo.name, slo.sli]
        objective.add_metric(labels, float(slo.objective))
        now = standing(slo=slo)
        if now.sli is not None:
            sli.add_metric(labels, float(now.sli))
        if now.budget_remaining is not None:
            budget.add_metric(labels, float(now.budget_remaining))
        for window, rate in now.burn.items():
            if rate is not None:
                burn.add_metric([*labels, window], float(rate))
    for name, rule in SloAlert.objects.filter(state=AlertState.FIRING).values_list("slo__name", "rule"):
        alerts.add_metric([name, rule], 1.0)
    yield from (sli, objective, budget, burn, alerts)
