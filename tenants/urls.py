"""Tenants' pages: the tree, one tenant, its members; and the sign-in page (tenants/sso)."""

from django.urls import path

from tenants import views
from tenants.sso import views as sso_views

urlpatterns = [
    path("login/", sso_views.LoginView.as_view(), name="login"),
    path("tenants/", views.tenant_tree, name="tenant-tree"),
    path("tenants/new/", views.tenant_create, name="tenant-create"),
    path("tenants/<uuid:tenant_id>/", views.tenant_detail, name="tenant-detail"),
    path("tenants/<uuid:tenant_id>/dashboard/", views.tenant_dashboard, name="tenant-dashboard"),
    path("tenants/<uuid:tenant_id>/edit/", views.tenant_edit, name="tenant-edit"),
    path("tenants/<uuid:tenant_id>/delete/", views.tenant_delete, name="tenant-delete"),
    path("tenants/<uuid:tenant_id>/members/add/", views.membership_add, name="membership-add"),
    path("memberships/<uuid:membership_id>/edit/", views.membership_edit, name="membership-edit"),
    path("memberships/<uuid:membership_id>/remove/", views.membership_remove, name="membership-remove"),
]
