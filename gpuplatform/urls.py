"""The composition root: the only part of gpuplatform that imports the domain apps (DESIGN §4)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from gpuplatform import health
from gpuplatform.accounts import views as account_views
from gpuplatform.accounts.api import ApiTokenViewSet, MeView
from gpuplatform.api.urls import ApiRouter
from gpuplatform.audit import views as audit_views
from gpuplatform.audit.api import AuditEventViewSet
from gpuplatform.observability.metrics_http import metrics_view
from gpuplatform.ui import views as ui_views
from inventory import views as inventory_views
from inventory.api.views import (
    AllocationViewSet,
    ClusterViewSet,
    FragmentationViewSet,
    GpuViewSet,
    NodePoolViewSet,
    NodeViewSet,
    ResourceClaimViewSet,
)
from metering import cost_model_views, slo_views, statement_views
from metering import views as metering_views
from metering.api.cost_models import CostModelViewSet
from metering.api.exports import ReportExportView, ReportJobViewSet
from metering.api.slos import AlertDeliveryViewSet, AlertReceiverViewSet, SloAlertViewSet, SloViewSet
from metering.api.sources import MetricsSourceViewSet
from metering.api.statements import CreditViewSet, StatementViewSet
from metering.api.views import BillingPeriodViewSet, RateCardViewSet, ReportLineViewSet, UsageViewSet
from policies import rollout_views
from policies import views as policy_views
from policies.api import agents as agent_api
from policies.api import long_poll
from policies.api.admission import AdmissionApplyViewSet, AdmissionRuleViewSet
from policies.api.revisions import PolicyRevisionViewSet
from policies.api.sharing import SharingPolicyViewSet
from policies.api.views import BootstrapTokenViewSet, NodeAgentViewSet, RolloutViewSet
from quotas import catalogue_views
from quotas import views as quota_views
from quotas.api.catalogue import (
    BudgetViewSet,
    FlavorViewSet,
    PriorityClassViewSet,
    QueueViewSet,
    QuotaViewSet,
)
from quotas.api.requests import CapacityRequestViewSet
from tenants import views as tenant_views
from tenants.api.views import MembershipViewSet, TenantViewSet
from tenants.sso import views as sso_views

router = ApiRouter()
router.register("tenants", TenantViewSet, basename="tenant")
router.register("memberships", MembershipViewSet, basename="membership")
router.register("tokens", ApiTokenViewSet, basename="token")
router.register("audit-events", AuditEventViewSet, basename="audit-event")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("node-pools", NodePoolViewSet, basename="node-pool")
router.register("nodes", NodeViewSet, basename="node")
router.register("gpus", GpuViewSet, basename="gpu")
router.register("resource-claims", ResourceClaimViewSet, basename="resource-claim")
router.register("allocations", AllocationViewSet, basename="allocation")
router.register("fragmentation", FragmentationViewSet, basename="fragmentation")
router.register("flavors", FlavorViewSet, basename="flavor")
router.register("quotas", QuotaViewSet, basename="quota")
router.register("budgets", BudgetViewSet, basename="budget")
router.register("priority-classes", PriorityClassViewSet, basename="priority-class")
router.register("queues", QueueViewSet, basename="queue")
router.register("capacity-requests", CapacityRequestViewSet, basename="capacity-request")
router.register("sharing-policies", SharingPolicyViewSet, basename="sharing-policy")
router.register("policy-revisions", PolicyRevisionViewSet, basename="policy-revision")
router.register("admission-rules", AdmissionRuleViewSet, basename="admission-rule")
router.register("admission-applies", AdmissionApplyViewSet, basename="admission-apply")
router.register("usage", UsageViewSet, basename="usage")
router.register("rate-cards", RateCardViewSet, basename="rate-card")
router.register("billing-periods", BillingPeriodViewSet, basename="billing-period")
router.register("reports", ReportLineViewSet, basename="report")
router.register("agent-bootstrap-tokens", BootstrapTokenViewSet, basename="agent-bootstrap-token")
router.register("agents", NodeAgentViewSet, basename="agent")
router.register("rollouts", RolloutViewSet, basename="rollout")
router.register("report-jobs", ReportJobViewSet, basename="report-job")
router.register("metrics-sources", MetricsSourceViewSet, basename="metrics-source")
router.register("statements", StatementViewSet, basename="statement")
router.register("credits", CreditViewSet, basename="credit")
router.register("cost-models", CostModelViewSet, basename="cost-model")
router.register("slos", SloViewSet, basename="slo")
router.register("slo-alerts", SloAlertViewSet, basename="slo-alert")
router.register("alert-receivers", AlertReceiverViewSet, basename="alert-receiver")
router.register("alert-deliveries", AlertDeliveryViewSet, basename="alert-delivery")

api_v1: list[URLPattern | URLResolver] = [
    path("me/", MeView.as_view(), name="me"),
    # The agent protocol (docs/agent-protocol.md), ahead of the router's agents/<pk>/.
    path("agents/register/", agent_api.RegisterView.as_view(), name="agent-register"),
    path("agents/rotate/", agent_api.RotateView.as_view(), name="agent-rotate"),
    path("agents/status/", agent_api.StatusView.as_view(), name="agent-status"),
    path("agents/heartbeat/", agent_api.HeartbeatView.as_view(), name="agent-heartbeat"),
    # Before the router: "reports/<pk>/" would take "export" for a line's id.
    path("reports/export/", ReportExportView.as_view(), name="report-export"),
    path("agents/bundle/", long_poll.bundle_view, name="agent-bundle"),
    path("", include(router.urls)),
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
    path("login/", sso_views.LoginView.as_view(), name="login"),
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", ui_views.overview, name="overview"),
    path("tenants/", tenant_views.tenant_tree, name="tenant-tree"),
    path("tenants/new/", tenant_views.tenant_create, name="tenant-create"),
    path("tenants/<uuid:tenant_id>/", tenant_views.tenant_detail, name="tenant-detail"),
    path("tenants/<uuid:tenant_id>/dashboard/", tenant_views.tenant_dashboard, name="tenant-dashboard"),
    path("tenants/<uuid:tenant_id>/edit/", tenant_views.tenant_edit, name="tenant-edit"),
    path("tenants/<uuid:tenant_id>/delete/", tenant_views.tenant_delete, name="tenant-delete"),
    path("tenants/<uuid:tenant_id>/members/add/", tenant_views.membership_add, name="membership-add"),
    path("memberships/<uuid:membership_id>/edit/", tenant_views.membership_edit, name="membership-edit"),
    path(
        "memberships/<uuid:membership_id>/remove/", tenant_views.membership_remove, name="membership-remove"
    ),
    path("tokens/", account_views.token_list, name="token-list"),
    path("tokens/<uuid:token_id>/revoke/", account_views.token_revoke, name="token-revoke"),
    path("audit/", audit_views.audit_log, name="audit-log"),
    path("inventory/", inventory_views.clusters, name="inventory"),
    path("inventory/pools/<uuid:pool_id>/", inventory_views.pool_detail, name="inventory-pool"),
    path("inventory/pools/<uuid:pool_id>/dashboard/", inventory_views.pool_dashboard, name="pool-dashboard"),
    path("inventory/nodes/<uuid:node_id>/", inventory_views.node_detail, name="inventory-node"),
    path("inventory/fragmentation/", inventory_views.fragmentation, name="inventory-fragmentation"),
    path("inventory/allocations/", inventory_views.allocations, name="inventory-allocations"),
    path("policies/rollouts/", rollout_views.rollouts, name="policy-rollouts"),
    path("policies/rollouts/<uuid:rollout_id>/", rollout_views.rollout_detail, name="policy-rollout"),
    path("queues/", quota_views.queue, name="queues"),
    path("queues/quotas/", quota_views.quota_overview, name="queues-quotas"),
    path("queues/oversubscription/", quota_views.oversubscription, name="queues-oversubscription"),
    path("queues/requests/new/", quota_views.request_capacity, name="queues-request-new"),
    path("queues/requests/<uuid:request_id>/", quota_views.request_detail, name="queues-request"),
    path("queues/requests/<uuid:request_id>/<str:verdict>/", quota_views.decide, name="queues-decide"),
    path("metering/", metering_views.usage, name="metering-usage"),
    path("slos/", slo_views.slo_list, name="slo-list"),
    path("slos/<uuid:slo_id>/", slo_views.slo_detail, name="slo-detail"),
    path("metering/rate-cards/", metering_views.rate_cards, name="metering-rate-cards"),
    path("metering/periods/", metering_views.periods, name="metering-periods"),
    path("metering/periods/<uuid:period_id>/", metering_views.period_detail, name="metering-period"),
    path(
        "metering/periods/<uuid:period_id>/close/", metering_views.period_close, name="metering-period-close"
    ),
    path(
        "metering/periods/<uuid:period_id>/start-closing/",
        metering_views.period_start_closing,
        name="metering-period-start-closing",
    ),
    path("metering/periods/<uuid:period_id>/reports/", metering_views.job_create, name="metering-job-create"),
    path("metering/jobs/<uuid:job_id>/", metering_views.job_progress, name="metering-job-progress"),
    path("metering/jobs/<uuid:job_id>/<str:fmt>/", metering_views.job_download, name="metering-job-download"),
    path("metering/statements/", statement_views.statements, name="metering-statements"),
    path(
        "metering/statements/<uuid:statement_id>/",
        statement_views.statement_detail,
        name="metering-statement",
    ),
    path(
        "metering/statements/<uuid:statement_id>/pdf/",
        statement_views.statement_pdf,
        name="metering-statement-pdf",
    ),
    path("metering/cost-model/", cost_model_views.cost_model, name="metering-cost-model"),
    path("metering/credits/new/", statement_views.credit_new, name="metering-credit-new"),
    # The catalogue's pages (flavors, priority classes, quotas, budgets, queues), one block.
    path("catalogue/", catalogue_views.catalogue_index, name="catalogue"),
    path("catalogue/<slug:kind>/", catalogue_views.catalogue_list, name="catalogue-list"),
    path("catalogue/<slug:kind>/new/", catalogue_views.catalogue_create, name="catalogue-create"),
    path("catalogue/<slug:kind>/<uuid:pk>/edit/", catalogue_views.catalogue_edit, name="catalogue-edit"),
    path(
        "catalogue/<slug:kind>/<uuid:pk>/delete/", catalogue_views.catalogue_delete, name="catalogue-delete"
    ),
    path("policies/", policy_views.policy_list, name="policies"),
    path("policies/pools/<uuid:pool_id>/", policy_views.pool_policy, name="policies-pool"),
    path("policies/pools/<uuid:pool_id>/revisions/", policy_views.revisions, name="policies-revisions"),
    path("policies/revisions/<uuid:revision_id>/diff/", policy_views.revision_diff, name="policies-diff"),
    path("policies/admission-rules/", policy_views.admission_rules, name="policies-admission"),
    path("<slug:section>/", ui_views.section_placeholder, name="section"),
]

handler400 = "gpuplatform.ui.errors.bad_request"
handler404 = "gpuplatform.ui.errors.not_found"
handler500 = "gpuplatform.ui.errors.server_error"
