"""Tenants' API routes, included by the root under /api/v1/ (namespace `api`)."""

from django.urls import include, path

from gpuplatform.api.urls import ApiRouter
from tenants.api.views import MembershipViewSet, TenantViewSet

router = ApiRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("memberships", MembershipViewSet, basename="membership")

urlpatterns = [path("", include(router.urls))]
