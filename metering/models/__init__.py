from metering.models.periods import Adjustment, BillingPeriod, PeriodState, ReportLine
from metering.models.rates import Basis, RateCard
from metering.models.sources import MetricsSource
from metering.models.usage import Attribution, CapacityHour, Meter, MeteredHour, UsageHour

__all__ = [
    "Adjustment",
    "Attribution",
    "Basis",
    "BillingPeriod",
    "CapacityHour",
    "Meter",
    "MeteredHour",
    "MetricsSource",
    "PeriodState",
    "RateCard",
    "ReportLine",
    "UsageHour",
]
