"""Inventory's API routes, included by the root under /api/v1/ (namespace `api`)."""

from django.urls import include, path

from gpuplatform.api.urls import ApiRouter
from inventory.api.views import (
    AllocationViewSet,
    ClusterViewSet,
    FragmentationViewSet,
    GpuViewSet,
    NodePoolViewSet,
    NodeViewSet,
    ResourceClaimViewSet,
    WorkloadViewSet,
)

router = ApiRouter()
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("node-pools", NodePoolViewSet, basename="node-pool")
router.register("nodes", NodeViewSet, basename="node")
router.register("gpus", GpuViewSet, basename="gpu")
router.register("resource-claims", ResourceClaimViewSet, basename="resource-claim")
router.register("allocations", AllocationViewSet, basename="allocation")
router.register("fragmentation", FragmentationViewSet, basename="fragmentation")
router.register("workloads", WorkloadViewSet, basename="workload")

urlpatterns = [path("", include(router.urls))]
