"""The root URLconf: the core's own routes (probes, metrics, the API's schema, docs and index, API
tokens, the audit log, the overview, admin, sign-out), and each domain app's pages (`<app>/urls.py`)
and API (`<app>/api/urls.py`), included by dotted path: the core imports no domain app (DESIGN §4),
and `lint-imports` holds it to that with no exemption.

A path no pattern matches is a plain 404 (handler404: problem+json under /api/, a page elsewhere)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from gpuplatform.accounts import views as account_views
from gpuplatform.accounts.api import ApiTokenViewSet, MeView
from gpuplatform.api.urls import ApiRouter, api_root_urls
from gpuplatform.audit import views as audit_views
from gpuplatform.audit.api import AuditEventViewSet
from gpuplatform.health import checks as health
from gpuplatform.observability.metrics_http import metrics_view
from gpuplatform.ui import views as ui_views

core_router = ApiRouter()
core_router.register("tokens", ApiTokenViewSet, basename="token")
core_router.register("audit-events", AuditEventViewSet, basename="audit-event")

api_v1: list[URLPattern | URLResolver] = [
    path("me/", MeView.as_view(), name="me"),
    path("", include(core_router.urls)),
    path("", include("tenants.api.urls")),
    path("", include("inventory.api.urls")),
    path("", include("quotas.api.urls")),
    path("", include("policies.api.urls")),
    path("", include("metering.api.urls")),
    path("", include(api_root_urls())),
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script under the CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", ui_views.overview, name="overview"),
    path("tokens/", account_views.token_list, name="token-list"),
    path("tokens/<uuid:token_id>/revoke/", account_views.token_revoke, name="token-revoke"),
    path("audit/", audit_views.audit_log, name="audit-log"),
    path("", include("tenants.urls")),
    path("", include("inventory.urls")),
    path("", include("quotas.urls")),
    path("", include("policies.urls")),
    path("", include("metering.urls")),
]

handler400 = "gpuplatform.ui.errors.bad_request"
handler404 = "gpuplatform.ui.errors.not_found"
handler500 = "gpuplatform.ui.errors.server_error"
