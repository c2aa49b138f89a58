"""Policies' pages: pools and their sharing policies, revisions, admission rules
(views/sharing.py), and rollouts (views/rollouts.py)."""

from django.urls import path

from policies.views import rollouts, sharing

urlpatterns = [
    path("policies/", sharing.policy_list, name="policies"),
    path("policies/pools/<uuid:pool_id>/", sharing.pool_policy, name="policies-pool"),
    path("policies/pools/<uuid:pool_id>/revisions/", sharing.revisions, name="policies-revisions"),
    path("policies/revisions/<uuid:revision_id>/diff/", sharing.revision_diff, name="policies-diff"),
    path("policies/admission-rules/", sharing.admission_rules, name="policies-admission"),
    path("policies/rollouts/", rollouts.rollouts, name="policy-rollouts"),
    path("policies/rollouts/<uuid:rollout_id>/", rollouts.rollout_detail, name="policy-rollout"),
    path(
        "policies/rollouts/<uuid:rollout_id>/<slug:control>/",
        rollouts.rollout_control,
        name="policy-rollout-control",
    ),
    path("policies/pools/<uuid:pool_id>/rollouts/", rollouts.rollout_start, name="policy-rollout-start"),
]
