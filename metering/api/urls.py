"""Metering's API routes (usage, rate cards, billing periods, reports and their exports, metrics
sources, statements, credits, cost models, SLOs and their alerts), included by the root under
/api/v1/ (namespace `api`)."""

from django.urls import include, path

from gpuplatform.api.urls import ApiRouter
from metering.api.cost_models import CostModelViewSet
from metering.api.costs import CostViewSet
from metering.api.exports import ReportExportView, ReportJobViewSet
from metering.api.sources import MetricsSourceViewSet
from metering.api.statements import CreditViewSet, ExchangeRateViewSet, StatementViewSet
from metering.api.views import BillingPeriodViewSet, RateCardViewSet, ReportLineViewSet, UsageViewSet
from metering.slos.api import AlertDeliveryViewSet, AlertReceiverViewSet, SloAlertViewSet, SloViewSet

router = ApiRouter()
router.register("usage", UsageViewSet, basename="usage")
router.register("rate-cards", RateCardViewSet, basename="rate-card")
router.register("billing-periods", BillingPeriodViewSet, basename="billing-period")
router.register("reports", ReportLineViewSet, basename="report")
router.register("report-jobs", ReportJobViewSet, basename="report-job")
router.register("metrics-sources", MetricsSourceViewSet, basename="metrics-source")
router.register("statements", StatementViewSet, basename="statement")
router.register("credits", CreditViewSet, basename="credit")
router.register("exchange-rates", ExchangeRateViewSet, basename="exchange-rate")
router.register("cost-models", CostModelViewSet, basename="cost-model")
router.register("costs", CostViewSet, basename="cost")
router.register("slos", SloViewSet, basename="slo")
router.register("slo-alerts", SloAlertViewSet, basename="slo-alert")
router.register("alert-receivers", AlertReceiverViewSet, basename="alert-receiver")
router.register("alert-deliveries", AlertDeliveryViewSet, basename="alert-delivery")

urlpatterns = [
    # Ahead of the router: its reports/<pk>/ would take "export" for a line's id.
    path("reports/export/", ReportExportView.as_view(), name="report-export"),
    path("", include(router.urls)),
]
