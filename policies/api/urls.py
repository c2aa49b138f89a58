"""Policies' API routes (sharing policies, revisions, admission rules, rollouts, and the node agents'
protocol of docs/agent-protocol.md), included by the root under /api/v1/ (namespace `api`)."""

from django.urls import include, path

from gpuplatform.api.urls import ApiRouter
from policies.api import agents as agent_api
from policies.api import long_poll
from policies.api.admission import AdmissionApplyViewSet, AdmissionRuleViewSet
from policies.api.revisions import PolicyRevisionViewSet
from policies.api.sharing import SharingPolicyViewSet
from policies.api.views import BootstrapTokenViewSet, NodeAgentViewSet, RolloutViewSet

router = ApiRouter()
router.register("sharing-policies", SharingPolicyViewSet, basename="sharing-policy")
router.register("policy-revisions", PolicyRevisionViewSet, basename="policy-revision")
router.register("admission-rules", AdmissionRuleViewSet, basename="admission-rule")
router.register("admission-applies", AdmissionApplyViewSet, basename="admission-apply")
router.register("agent-bootstrap-tokens", BootstrapTokenViewSet, basename="agent-bootstrap-token")
router.register("agents", NodeAgentViewSet, basename="agent")
router.register("rollouts", RolloutViewSet, basename="rollout")

urlpatterns = [
    # The agent protocol, ahead of the router: its agents/<pk>/ would take "register" for an id.
    path("agents/register/", agent_api.RegisterView.as_view(), name="agent-register"),
    path("agents/rotate/", agent_api.RotateView.as_view(), name="agent-rotate"),
    path("agents/status/", agent_api.StatusView.as_view(), name="agent-status"),
    path("agents/heartbeat/", agent_api.HeartbeatView.as_view(), name="agent-heartbeat"),
    path("agents/bundle/", long_poll.bundle_view, name="agent-bundle"),
    path("", include(router.urls)),
]
