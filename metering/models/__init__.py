from metering.models.cost_models import CostModel
from metering.models.jobs import ExportFormat, JobState, ReportFile, ReportJob
from metering.models.periods import Adjustment, BillingPeriod, PeriodState, ReportLine
from metering.models.rates import Basis, RateCard
from metering.models.slos import (
    AlertDelivery,
    AlertReceiver,
    AlertState,
    DeliveryState,
    SliSample,
    Slo,
    SloAlert,
)
from metering.models.sources import MetricsSource
from metering.models.statements import Credit, ExchangeRate, Statement, StatementKind
from metering.models.usage import Attribution, CapacityHour, Meter, MeteredHour, UsageHour

__all__ = [
    "Adjustment",
    "AlertDelivery",
    "AlertReceiver",
    "AlertState",
    "Attribution",
    "Basis",
    "BillingPeriod",
    "CapacityHour",
    "CostModel",
    "Credit",
    "DeliveryState",
    "ExchangeRate",
    "ExportFormat",
    "JobState",
    "Meter",
    "MeteredHour",
    "MetricsSource",
    "PeriodState",
    "RateCard",
    "ReportFile",
    "ReportJob",
    "ReportLine",
    "SliSample",
    "Slo",
    "SloAlert",
    "Statement",
    "StatementKind",
    "UsageHour",
]
