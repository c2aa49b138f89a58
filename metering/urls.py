"""Metering's pages: usage, rate cards, billing periods and their report jobs, statements and
credits, the cost model; SLOs."""

from django.urls import path

from metering import cost_model_views, statement_views, views
from metering.slos import views as slo_views

urlpatterns = [
    path("metering/", views.usage, name="metering-usage"),
    path("metering/rate-cards/", views.rate_cards, name="metering-rate-cards"),
    path("metering/rate-cards/<uuid:card_id>/edit/", views.rate_card_edit, name="metering-rate-card-edit"),
    path("metering/rate-cards/<uuid:card_id>/end/", views.rate_card_end, name="metering-rate-card-end"),
    path("metering/periods/", views.periods, name="metering-periods"),
    path("metering/periods/<uuid:period_id>/", views.period_detail, name="metering-period"),
    path("metering/periods/<uuid:period_id>/close/", views.period_close, name="metering-period-close"),
    path(
        "metering/periods/<uuid:period_id>/start-closing/",
        views.period_start_closing,
        name="metering-period-start-closing",
    ),
    path("metering/periods/<uuid:period_id>/reports/", views.job_create, name="metering-job-create"),
    path(
        "metering/periods/<uuid:period_id>/exchange-rate/",
        views.period_exchange_rate,
        name="metering-period-exchange-rate",
    ),
    path("metering/jobs/<uuid:job_id>/", views.job_progress, name="metering-job-progress"),
    path("metering/jobs/<uuid:job_id>/<str:fmt>/", views.job_download, name="metering-job-download"),
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
    path("slos/", slo_views.slo_list, name="slo-list"),
    path("slos/new/", slo_views.slo_create, name="slo-create"),
    path("slos/<uuid:slo_id>/", slo_views.slo_detail, name="slo-detail"),
    path("slos/<uuid:slo_id>/edit/", slo_views.slo_edit, name="slo-edit"),
    path("slos/<uuid:slo_id>/delete/", slo_views.slo_delete, name="slo-delete"),
    path("slos/receivers/", slo_views.receiver_list, name="slo-receivers"),
    path("slos/receivers/new/", slo_views.receiver_create, name="slo-receiver-create"),
    path("slos/receivers/<uuid:receiver_id>/edit/", slo_views.receiver_edit, name="slo-receiver-edit"),
    path("slos/receivers/<uuid:receiver_id>/delete/", slo_views.receiver_delete, name="slo-receiver-delete"),
]
