"""Quotas' API routes (the catalogue and capacity requests), included by the root under /api/v1/
(namespace `api`)."""

from django.urls import include, path

from gpuplatform.api.urls import ApiRouter
from quotas.api.catalogue import (
    BudgetViewSet,
    FlavorViewSet,
    PriorityClassViewSet,
    QueueViewSet,
    QuotaViewSet,
)
from quotas.api.requests import CapacityRequestViewSet
from quotas.api.workload_checks import WorkloadCheckViewSet

router = ApiRouter()
router.register("flavors", FlavorViewSet, basename="flavor")
router.register("quotas", QuotaViewSet, basename="quota")
router.register("budgets", BudgetViewSet, basename="budget")
router.register("priority-classes", PriorityClassViewSet, basename="priority-class")
router.register("queues", QueueViewSet, basename="queue")
router.register("capacity-requests", CapacityRequestViewSet, basename="capacity-request")
router.register("workload-checks", WorkloadCheckViewSet, basename="workload-check")

urlpatterns = [path("", include(router.urls))]
