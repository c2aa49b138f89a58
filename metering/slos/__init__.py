"""SLOs (docs/slos.md), one sub-domain of metering laid out as an app:

- ``models``: Slo, SliSample, SloAlert, AlertReceiver, AlertDelivery (defined in metering.models.slos);
- ``burn`` and ``health`` (pure): error budgets and burn-rate rules; a GPU's health per bucket;
- ``slis``: the SLIs metering measures itself, registered through gpuplatform.sli_sources;
- ``services``: defining SLOs and receivers, evaluating buckets and alerts, delivering webhooks;
- ``tasks``, ``views``, ``api``, ``metrics``: the adapters (Celery, pages, REST, /metrics).
"""
