"""Quotas' pages: the queue (views/queues.py) and its requests (views/requests.py), the catalogue of
flavors, priority classes, quotas, budgets and queues (views/catalogue.py), and onboarding a team in
one form (views/onboarding.py: it composes tenants' services with the catalogue's, so it lives here)."""

from django.urls import path

from quotas.views import catalogue, onboarding, queues, requests, workload_checks

urlpatterns = [
    path("queues/", queues.queue, name="queues"),
    path("queues/quotas/", queues.quota_overview, name="queues-quotas"),
    path("queues/oversubscription/", queues.oversubscription, name="queues-oversubscription"),
    path("queues/requests/new/", requests.request_capacity, name="queues-request-new"),
    path("queues/requests/<uuid:request_id>/", requests.request_detail, name="queues-request"),
    path("queues/requests/<uuid:request_id>/cancel/", requests.cancel, name="queues-request-cancel"),
    path("queues/requests/<uuid:request_id>/release/", requests.release, name="queues-request-release"),
    path("queues/requests/<uuid:request_id>/<slug:verdict>/", requests.decide, name="queues-decide"),
    path("queues/workloads/<uuid:check_id>/", workload_checks.workload_check, name="queues-workload"),
    path(
        "queues/workloads/<uuid:check_id>/<slug:verdict>/",
        workload_checks.decide,
        name="queues-workload-decide",
    ),
    path("onboarding/<uuid:tenant_id>/", onboarding.team_onboard, name="team-onboard"),
    path("catalogue/", catalogue.catalogue_index, name="catalogue"),
    path("catalogue/<slug:kind>/", catalogue.catalogue_list, name="catalogue-list"),
    path("catalogue/<slug:kind>/new/", catalogue.catalogue_create, name="catalogue-create"),
    path("catalogue/<slug:kind>/<uuid:pk>/edit/", catalogue.catalogue_edit, name="catalogue-edit"),
    path("catalogue/<slug:kind>/<uuid:pk>/delete/", catalogue.catalogue_delete, name="catalogue-delete"),
]
