"""The SLO models, for the sub-domain's own modules to import from one place.

They are defined in metering.models.slos, not here: Django loads an app's models from
``metering.models``, which would then import this package while this package imports
``metering.models`` (usage rows for share delivery): a cycle between metering's packages,
which the import-linter contract on sibling packages refuses. Same tables, same app label.
"""

from metering.models.slos import (
    AlertDelivery,
    AlertReceiver,
    AlertState,
    DeliveryState,
    SliSample,
    Slo,
    SloAlert,
)

__all__ = ["AlertDelivery", "AlertReceiver", "AlertState", "DeliveryState", "SliSample", "Slo", "SloAlert"]
